package indexer

import (
	"context"
	"math/big"
	"strconv"
	"sync/atomic"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Every call the runner makes goes through countingChain, which counts it
// by part of the indexer (head, catch_up, probe, settle), by DAO where one
// DAO alone is concerned, and into the poll under way: the figures an
// operator paying per call wants to see in /metrics.

type ctxKey int

const (
	keyPart ctxKey = iota
	keyDAO
	keyPoll
)

func withPart(ctx context.Context, part string) context.Context {
	return context.WithValue(ctx, keyPart, part)
}

func withDAO(ctx context.Context, dao string) context.Context {
	return context.WithValue(ctx, keyDAO, dao)
}

// pollCalls counts the calls of one poll.
type pollCalls struct{ n atomic.Int64 }

func withPoll(ctx context.Context, p *pollCalls) context.Context {
	return context.WithValue(ctx, keyPoll, p)
}

// countingChain is a Chain that counts its calls.
type countingChain struct {
	Chain
	m       *Metrics
	chainID uint64
}

func (c countingChain) count(ctx context.Context, method string) {
	if p, ok := ctx.Value(keyPoll).(*pollCalls); ok {
		p.n.Add(1)
	}
	if c.m == nil {
		return
	}
	part, _ := ctx.Value(keyPart).(string)
	if part == "" {
		part = "other"
	}
	chain := strconv.FormatUint(c.chainID, 10)
	c.m.rpc.WithLabelValues(chain, part, method).Inc()
	if dao, ok := ctx.Value(keyDAO).(string); ok {
		c.m.daoRPC.WithLabelValues(dao).Inc()
	}
}

func (c countingChain) ChainID(ctx context.Context) (uint64, error) {
	c.count(ctx, "eth_chainId")
	return c.Chain.ChainID(ctx)
}

func (c countingChain) BlockStamp(ctx context.Context, number *big.Int) (uint64, common.Hash, uint64, error) {
	c.count(ctx, "eth_getBlockByNumber")
	return c.Chain.BlockStamp(ctx, number)
}

func (c countingChain) BlockHeader(ctx context.Context, number *big.Int) (uint64, common.Hash, common.Hash, uint64, error) {
	c.count(ctx, "eth_getBlockByNumber")
	return c.Chain.BlockHeader(ctx, number)
}

func (c countingChain) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	c.count(ctx, "eth_getLogs")
	return c.Chain.FilterLogs(ctx, q)
}

func (c countingChain) CallContract(ctx context.Context, msg ethereum.CallMsg, number *big.Int) ([]byte, error) {
	c.count(ctx, "eth_call")
	return c.Chain.CallContract(ctx, msg, number)
}

func (c countingChain) CodeAt(ctx context.Context, addr common.Address, number *big.Int) ([]byte, error) {
	c.count(ctx, "eth_getCode")
	return c.Chain.CodeAt(ctx, addr, number)
}
