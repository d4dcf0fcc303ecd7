package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"runtime"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/store"
)

// The delegation benchmark indexes *delegationEvents events (the figure is
// 1,000,000; fewer while iterating): half DelegateChanged, half
// DelegateVotesChanged, each pair for a new delegator and delegate, as a
// token's history is.

// emitterRuntime is EVM code that, called with (start, count) as two
// words, emits for each i in [start, start+count) the two events a
// first delegation emits: DelegateChanged(i, 0, i) and
// DelegateVotesChanged(i, 0, i+1), with the ERC20Votes topics. It makes a
// token's backfill of a million events in a few blocks. Every call returns
// one word (0), so that the indexer's probe, which asks a configured token
// for getVotes(), finds a voting token; nothing else of a token is needed
// to index the events.
func emitterRuntime() []byte {
	dc := crypto.Keccak256Hash([]byte("DelegateChanged(address,address,address)"))
	dvc := crypto.Keccak256Hash([]byte("DelegateVotesChanged(address,uint256,uint256)"))
	const (
		push1, push2, push32 = 0x60, 0x61, 0x7f
		calldataload, add    = 0x35, 0x01
		dup1, dup2, dup3     = 0x80, 0x81, 0x82
		swap1, lt, iszero    = 0x90, 0x10, 0x15
		jumpi, jump, jumpdst = 0x57, 0x56, 0x5b
		mstore, log2, log4   = 0x52, 0xa2, 0xa4
		ret                  = 0xf3
	)
	code := []byte{
		push1, 0, calldataload, // start
		dup1, push1, 0x20, calldataload, add, // start, end
		swap1, // end, i
	}
	loop := len(code)
	code = append(code, jumpdst,
		dup2, dup2, lt, iszero, push2, 0, 0, jumpi, // i < end, or exit (patched)
		push1, 0, push1, 0, mstore, // mem[0] = 0 (previousVotes)
		dup1, push1, 1, add, push1, 0x20, mstore, // mem[32] = i+1 (newVotes)
		dup1, push1, 0, dup3, push32) // topics: to = i, from = 0, delegator = i
	code = append(code, dc[:]...)
	code = append(code, push1, 0, push1, 0, log4, // DelegateChanged, no data
		dup1, push32)
	code = append(code, dvc[:]...)
	code = append(code, push1, 0x40, push1, 0, log2, // DelegateVotesChanged(i), data mem[0:64]
		push1, 1, add, push2, byte(loop>>8), byte(loop), jump)
	exit := len(code)
	code = append(code, jumpdst, push1, 0x20, push1, 0, ret) // return mem[0:32], 0
	code[loop+6], code[loop+7] = byte(exit>>8), byte(exit)
	return code
}

// deployCode wraps runtime code in creation code that returns it:
// CODECOPY(0, 12, n); RETURN(0, n), 12 bytes.
func deployCode(code []byte) []byte {
	n := len(code)
	init := []byte{0x61, byte(n >> 8), byte(n), 0x80, 0x60, 12, 0x60, 0, 0x39, 0x60, 0, 0xf3}
	return append(init, code...)
}

// delegationBench measures the backfill of a token's delegation history:
// *delegationEvents events indexed into each target store through the
// chain gateway, against a bare eth_getLogs of the same block ranges read
// right before.
func delegationBench(ctx context.Context, targets []delegationTarget) (delegationResult, error) {
	events := *delegationEvents
	if events <= 0 || events%2 != 0 {
		return delegationResult{}, fmt.Errorf("-delegations %d: want a positive even number", events)
	}
	c, err := devchain.Start(ctx, devchain.Options{Accounts: 4, BlockGasLimit: 400_000_000, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return delegationResult{}, err
	}
	defer c.Close()
	key := devchain.DevKey(3)
	from := crypto.PubkeyToAddress(key.PublicKey)
	cl := c.Client()
	signer := types.LatestSignerForChainID(big.NewInt(devchain.ChainID))
	nonce, err := cl.PendingNonceAt(ctx, from)
	if err != nil {
		return delegationResult{}, err
	}
	tip := big.NewInt(1e9)
	head, err := cl.HeaderByNumber(ctx, nil)
	if err != nil {
		return delegationResult{}, err
	}
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(4)), tip)
	send := func(to *common.Address, data []byte, gas uint64) (*types.Transaction, error) {
		tx, err := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(devchain.ChainID), Nonce: nonce,
			GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: to, Data: data})
		if err != nil {
			return nil, err
		}
		if err := cl.SendTransaction(ctx, tx); err != nil {
			return nil, err
		}
		nonce++
		return tx, nil
	}
	mined := func(txs ...*types.Transaction) (*types.Receipt, error) {
		var last *types.Receipt
		for _, tx := range txs {
			for try := 0; ; try++ {
				r, err := cl.TransactionReceipt(ctx, tx.Hash())
				if err == nil {
					if r.Status != types.ReceiptStatusSuccessful {
						return nil, fmt.Errorf("transaction %s reverted", tx.Hash())
					}
					last = r
					break
				}
				if try > 200 {
					return nil, fmt.Errorf("transaction %s not mined: %w", tx.Hash(), err)
				}
				c.Commit()
			}
		}
		return last, nil
	}
	deploy, err := send(nil, deployCode(emitterRuntime()), 1_000_000)
	if err != nil {
		return delegationResult{}, fmt.Errorf("deploy emitter: %w", err)
	}
	rec, err := mined(deploy)
	if err != nil {
		return delegationResult{}, err
	}
	emitter, startBlock := rec.ContractAddress, rec.BlockNumber.Uint64()

	const perTx = 4000 // pairs: about 14.5M gas, under the 2^24 cap of a transaction
	var txs []*types.Transaction
	for i := 1; i <= events/2; i += perTx {
		n := min(perTx, events/2-i+1)
		data := append(common.BigToHash(big.NewInt(int64(i))).Bytes(), common.BigToHash(big.NewInt(int64(n))).Bytes()...)
		tx, err := send(&emitter, data, 16_000_000)
		if err != nil {
			return delegationResult{}, fmt.Errorf("emit: %w", err)
		}
		txs = append(txs, tx)
		if len(txs)%2 == 0 {
			c.Commit() // 16,000 events a block
		}
	}
	if _, err := mined(txs...); err != nil {
		return delegationResult{}, err
	}
	last, err := cl.BlockNumber(ctx)
	if err != nil {
		return delegationResult{}, err
	}

	// The bare reading: the same addresses, topics and one-block ranges the
	// indexer is configured with below, right before each store's run, so
	// that both see the machine alike.
	rpc, err := ethclient.Dial(c.RPCURL())
	if err != nil {
		return delegationResult{}, err
	}
	defer rpc.Close()
	topics := append(indexer.EventTopics(), indexer.TokenTopics()...)
	getLogs := func() (float64, error) {
		runtime.GC()
		start := time.Now()
		fetched := 0
		for b := startBlock; b <= last; b++ {
			logs, err := rpc.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(b), ToBlock: new(big.Int).SetUint64(b),
				Addresses: []common.Address{c.OZ.Governor, emitter}, Topics: [][]common.Hash{topics}})
			if err != nil {
				return 0, err
			}
			fetched += len(logs)
		}
		rawTime := time.Since(start)
		if fetched != events {
			return 0, fmt.Errorf("eth_getLogs returned %d events, want %d", fetched, events)
		}
		return float64(fetched) / rawTime.Seconds(), nil
	}

	var res delegationResult
	for _, target := range targets {
		raw, err := getLogs()
		if err != nil {
			return res, err
		}
		runtime.GC()
		rate, bytes, err := indexDelegations(ctx, c, target, emitter, startBlock, events)
		if err != nil {
			return res, fmt.Errorf("%s: %w", target.name, err)
		}
		res.getLogsPerS = append(res.getLogsPerS, raw)
		res.perS = append(res.perS, rate)
		res.bytes = append(res.bytes, bytes)
	}
	return res, nil
}

// delegationTarget is a store the delegation history is indexed into.
type delegationTarget struct {
	name string
	url  string
	// size returns the bytes the delegation data takes in the store.
	size func(st *store.Store) (int64, error)
}

type delegationResult struct {
	getLogsPerS, perS, bytes []float64 // by target
}

// indexDelegations indexes the emitter's history into one store and
// returns the events indexed per second and the bytes each takes.
func indexDelegations(ctx context.Context, c *devchain.Chain, target delegationTarget, emitter common.Address, startBlock uint64, events int) (float64, float64, error) {
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st, err := store.Open(ctx, target.url, box, store.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	before, err := target.size(st)
	if err != nil {
		return 0, 0, err
	}
	cc := c.ChainConfig()
	cc.RequestTimeout = time.Minute
	gw, err := chain.New(cc, chain.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, 0, err
	}
	defer gw.Close()
	dao := core.DAO{Slug: "bench-token", Name: "bench", ChainID: devchain.ChainID, Governor: c.OZ.Governor.Hex(),
		Kind: core.KindOZGovernor, StartBlock: startBlock, Token: emitter.Hex()}
	r, err := indexer.NewRunner(gw, st, indexer.NewLocalLocker(), devchain.ChainID, 0, []core.DAO{dao},
		indexer.Config{InitialRange: 1, MaxRange: 1}, indexer.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, 0, err
	}
	debugStatements(ctx, st, false)
	pgCPU0, selfCPU0 := postgresCPU(), selfCPU()
	start := time.Now()
	if err := r.Sync(ctx); err != nil {
		return 0, 0, err
	}
	indexTime := time.Since(start)
	if os.Getenv("GOVGATE_BENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "debug: delegation %s %.2fs; cpu: postgres %.2fs, bench process %.2fs\n", target.name, indexTime.Seconds(), postgresCPU()-pgCPU0, selfCPU()-selfCPU0)
		debugStatements(ctx, st, true)
	}
	page, err := st.ListDelegates(ctx, dao.Slug, core.SortVotingPower, "", 1)
	if err != nil {
		return 0, 0, err
	}
	if len(page.Items) != 1 || page.Items[0].VotingPower != fmt.Sprint(events/2+1) {
		return 0, 0, fmt.Errorf("the indexed delegates are not the emitted ones: the top delegate of %d events should have %d votes; the first page holds %+v", events, events/2+1, page.Items)
	}
	after, err := target.size(st)
	if err != nil {
		return 0, 0, err
	}
	return float64(events) / indexTime.Seconds(), float64(after-before) / float64(events), nil
}

// dbSize is the size of an SQLite database with its write-ahead log.
func dbSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}
