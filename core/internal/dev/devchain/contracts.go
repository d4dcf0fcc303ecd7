package devchain

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

//go:embed contracts/artifacts/*.json
var artifactFS embed.FS

// Artifact is a compiled contract: its ABI and creation bytecode.
type Artifact struct {
	Name     string
	ABI      abi.ABI
	Bytecode []byte
}

var (
	artifactsOnce sync.Once
	artifacts     map[string]*Artifact
	artifactsErr  error
)

// LoadArtifact returns the compiled contract name (GovToken, TimeGovToken,
// Timelock, OZGovernor, OZ4Token, OZ4Governor, BravoGovernor, Box,
// BatchVoter) or one of Uniswap's as published (GovernorAlpha, Uni,
// UniswapTimelock).
func LoadArtifact(name string) (*Artifact, error) {
	artifactsOnce.Do(func() {
		artifacts = map[string]*Artifact{}
		entries, err := artifactFS.ReadDir("contracts/artifacts")
		if err != nil {
			artifactsErr = err
			return
		}
		for _, e := range entries {
			raw, err := artifactFS.ReadFile("contracts/artifacts/" + e.Name())
			if err != nil {
				artifactsErr = err
				return
			}
			var f struct {
				ContractName string          `json:"contractName"`
				ABI          json.RawMessage `json:"abi"`
				Bytecode     string          `json:"bytecode"`
			}
			if err := json.Unmarshal(raw, &f); err != nil {
				artifactsErr = fmt.Errorf("%s: %w", e.Name(), err)
				return
			}
			a, err := abi.JSON(strings.NewReader(string(f.ABI)))
			if err != nil {
				artifactsErr = fmt.Errorf("%s: abi: %w", e.Name(), err)
				return
			}
			code, err := hexutil.Decode(f.Bytecode)
			if err != nil {
				artifactsErr = fmt.Errorf("%s: bytecode: %w", e.Name(), err)
				return
			}
			artifacts[f.ContractName] = &Artifact{Name: f.ContractName, ABI: a, Bytecode: code}
		}
	})
	if artifactsErr != nil {
		return nil, fmt.Errorf("load artifacts: %w", artifactsErr)
	}
	a, ok := artifacts[name]
	if !ok {
		return nil, fmt.Errorf("load artifacts: no contract %q", name)
	}
	return a, nil
}

func mustArtifact(name string) *Artifact {
	a, err := LoadArtifact(name)
	if err != nil {
		panic(err) // the artifacts are embedded: only a broken build gets here
	}
	return a
}

func (c *Chain) bound(name string, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, mustArtifact(name).ABI, c.client, c.sender(), c.client)
}

// sender is the client to send transactions through (backend.go's sender).
func (c *Chain) sender() sender { return sender{c.client, c.backend} }

func (c *Chain) txOpts(ctx context.Context, from int) *bind.TransactOpts {
	o := bind.NewKeyedTransactor(c.keys[from], big.NewInt(ChainID))
	o.Context = ctx
	return o
}

// deployLocked deploys artifact name from account 0 and seals it in a block.
func (c *Chain) deployLocked(ctx context.Context, name string, args ...any) (common.Address, uint64, error) {
	a := mustArtifact(name)
	input, err := a.ABI.Pack("", args...)
	if err != nil {
		return common.Address{}, 0, fmt.Errorf("%s: pack constructor: %w", name, err)
	}
	opts := c.txOpts(ctx, 0)
	if opts.Nonce, err = c.nextNonce(ctx, 0); err != nil {
		return common.Address{}, 0, fmt.Errorf("%s: %w", name, err)
	}
	addr, tx, err := bind.DeployContract(opts, a.Bytecode, c.sender(), input)
	if err != nil {
		return common.Address{}, 0, fmt.Errorf("%s: %w", name, err)
	}
	c.unsealed[0] = tx.Nonce() + 1
	c.commitLocked()
	r, err := c.receipt(ctx, tx)
	if err != nil {
		return common.Address{}, 0, fmt.Errorf("%s: %w", name, err)
	}
	return addr, r.BlockNumber.Uint64(), nil
}

// send signs and sends a call from account from without sealing a block.
// The gas limit is the estimate (whose failure carries the revert reason)
// with a margin: the transaction runs one block later than the estimate,
// where a deadline extension or a checkpoint write can cost more.
func (c *Chain) send(ctx context.Context, from int, name string, to common.Address, method string, args ...any) (*types.Transaction, error) {
	return c.sendGas(ctx, from, 0, name, to, method, args...)
}

// sendGas is send with a fixed gas limit, or the estimate for gas 0.
func (c *Chain) sendGas(ctx context.Context, from int, gas uint64, name string, to common.Address, method string, args ...any) (*types.Transaction, error) {
	data, err := mustArtifact(name).ABI.Pack(method, args...)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: pack: %w", name, method, err)
	}
	if gas == 0 {
		est, err := c.client.EstimateGas(ctx, ethereum.CallMsg{From: c.addrs[from], To: &to, Data: data})
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", name, method, err)
		}
		gas = min(est*3/2+50_000, maxTxGas)
	}
	opts := c.txOpts(ctx, from)
	opts.GasLimit = gas
	if opts.Nonce, err = c.nextNonce(ctx, from); err != nil {
		return nil, fmt.Errorf("%s.%s: %w", name, method, err)
	}
	tx, err := c.bound(name, to).RawTransact(opts, data)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", name, method, err)
	}
	c.unsealed[from] = tx.Nonce() + 1
	return tx, nil
}

// maxTxGas is the gas cap of one transaction since Osaka (EIP-7825).
const maxTxGas = 1 << 24

// transact sends a call, seals it in a block and returns its receipt.
func (c *Chain) transact(ctx context.Context, from int, name string, to common.Address, method string, args ...any) (*types.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.transactLocked(ctx, from, name, to, method, args...)
}

func (c *Chain) transactLocked(ctx context.Context, from int, name string, to common.Address, method string, args ...any) (*types.Receipt, error) {
	tx, err := c.send(ctx, from, name, to, method, args...)
	if err != nil {
		return nil, err
	}
	c.commitLocked()
	r, err := c.receipt(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", name, method, err)
	}
	return r, nil
}

// nextNonce is account from's next nonce; c.mu is held.
func (c *Chain) nextNonce(ctx context.Context, from int) (*big.Int, error) {
	if next, ok := c.unsealed[from]; ok {
		return new(big.Int).SetUint64(next), nil
	}
	n, err := c.client.NonceAt(ctx, c.addrs[from], nil)
	if err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return new(big.Int).SetUint64(n), nil
}

func (c *Chain) receipt(ctx context.Context, tx *types.Transaction) (*types.Receipt, error) {
	r, err := c.client.TransactionReceipt(ctx, tx.Hash())
	if err != nil {
		return nil, fmt.Errorf("receipt of %s: %w", tx.Hash(), err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return r, fmt.Errorf("%w: %s (gas used %d of %d)", errReverted, tx.Hash(), r.GasUsed, tx.Gas())
	}
	return r, nil
}

// call runs a view function at the head.
func (c *Chain) call(ctx context.Context, name string, to common.Address, method string, args ...any) ([]any, error) {
	var out []any
	err := c.bound(name, to).Call(&bind.CallOpts{Context: ctx}, &out, method, args...)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", name, method, err)
	}
	return out, nil
}

func role(name string) [32]byte { return crypto.Keccak256Hash([]byte(name)) }

// sealCalls sends calls, seals them in one block and returns their
// receipts; it fails if any of them reverted. A call's gas, unless set, is
// estimated at the head, so such a call must not depend on the others.
func (c *Chain) sealCalls(ctx context.Context, calls []txCall) ([]*types.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	txs := make([]*types.Transaction, 0, len(calls))
	for _, cl := range calls {
		tx, err := c.sendGas(ctx, cl.from, cl.gas, cl.artifact, cl.to, cl.method, cl.args...)
		if err != nil {
			c.commitLocked() // leave no transaction of this batch in the pool
			return nil, err
		}
		txs = append(txs, tx)
	}
	c.commitLocked()
	rs := make([]*types.Receipt, len(txs))
	for i, tx := range txs {
		r, err := c.receipt(ctx, tx)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", calls[i].artifact, calls[i].method, err)
		}
		rs[i] = r
	}
	return rs, nil
}

// sendValueLocked sends value wei from account from to an account, without
// sealing a block; c.mu is held.
func (c *Chain) sendValueLocked(ctx context.Context, from int, to common.Address, value *big.Int) error {
	nonce, err := c.nextNonce(ctx, from)
	if err != nil {
		return err
	}
	opts := c.txOpts(ctx, from)
	opts.Nonce, opts.Value, opts.GasLimit = nonce, value, 21_000
	tx, err := bind.NewBoundContract(to, abi.ABI{}, c.client, c.sender(), c.client).RawTransact(opts, nil)
	if err != nil {
		return fmt.Errorf("send %s wei to %s: %w", value, to, err)
	}
	c.unsealed[from] = tx.Nonce() + 1
	return nil
}
