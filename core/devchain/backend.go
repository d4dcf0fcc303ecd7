package devchain

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ethereum/go-ethereum/common"
	gethcore "github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"
)

// backend is go-ethereum's simulated backend (ethclient/simulated), set up
// as simulated.NewBackend does, but keeping hold of the Ethereum service:
// fastForward needs its chain.
type backend struct {
	node   *node.Node
	eth    *eth.Ethereum
	beacon *catalyst.SimulatedBeacon
	client *ethclient.Client
}

func newBackend(alloc types.GenesisAlloc, host string, port int, gasLimit uint64) (*backend, error) {
	nodeConf := node.DefaultConfig
	nodeConf.DataDir = ""
	nodeConf.P2P = p2p.Config{NoDiscovery: true}
	nodeConf.HTTPHost = host
	nodeConf.HTTPPort = port
	nodeConf.HTTPModules = []string{"eth", "net", "web3"}
	nodeConf.HTTPVirtualHosts = []string{"*"}

	// Run the forks that mainnet runs (through Osaka), not the ones still
	// in development, whose gas schedule differs. Their system contracts
	// are in the genesis.
	cfg := *params.AllDevChainProtocolChanges
	cfg.BogotaTime = nil
	genesisAlloc := gethcore.SystemContractAllocs()
	maps.Copy(genesisAlloc, alloc)
	if gasLimit == 0 {
		gasLimit = ethconfig.Defaults.Miner.GasCeil
	}
	ethConf := ethconfig.Defaults
	ethConf.Genesis = &gethcore.Genesis{Config: &cfg, GasLimit: gasLimit, Alloc: genesisAlloc}
	ethConf.Miner.GasCeil = gasLimit
	ethConf.SyncMode = ethconfig.FullSync
	ethConf.TxPool.NoLocals = true
	ethConf.LogNoHistory = true
	// The hash-based state scheme keeps recent states in memory, as the
	// path scheme's diff layers do, for about a quarter less CPU a block;
	// and it lets fastForward hand states to the chain through the
	// database. Prefetching only costs CPU here.
	ethConf.StateScheme = rawdb.HashScheme
	ethConf.NoPrefetch = true
	// No snapshot (flat state) beside the tries: the chain would execute
	// again every fast-forwarded block to build its snapshot layer.
	ethConf.SnapshotCache = 0

	stack, err := node.New(&nodeConf)
	if err != nil {
		return nil, err
	}
	b := &backend{node: stack}
	if b.eth, err = eth.New(stack, &ethConf); err != nil {
		stack.Close()
		return nil, err
	}
	fs := filters.NewFilterSystem(b.eth.APIBackend, filters.Config{})
	stack.RegisterAPIs([]rpc.API{{Namespace: "eth", Service: filters.NewFilterAPI(fs)}})
	if err := stack.Start(); err != nil { // e.g. the port is taken
		stack.Close()
		return nil, err
	}
	if b.beacon, err = catalyst.NewSimulatedBeacon(0, common.Address{}, b.eth); err != nil {
		stack.Close()
		return nil, err
	}
	if err := b.beacon.Fork(b.eth.BlockChain().GetCanonicalHash(0)); err != nil {
		b.Close()
		return nil, err
	}
	b.client = ethclient.NewClient(stack.Attach())
	return b, nil
}

// Close shuts the backend down.
func (b *backend) Close() error {
	if b.client != nil {
		b.client.Close()
	}
	err := b.beacon.Stop()
	return errors.Join(err, b.node.Close())
}

// Commit seals a block with the pending transactions.
func (b *backend) Commit() common.Hash { return b.beacon.Commit() }

// Fork makes parent the head.
func (b *backend) Fork(parent common.Hash) error { return b.beacon.Fork(parent) }

// AdjustTime seals an empty block d later than the head.
func (b *backend) AdjustTime(d time.Duration) error { return b.beacon.AdjustTime(d) }

// fastForward appends n empty blocks, one second apart, to the chain. The
// engine API (Commit) builds every block twice and executes it once more to
// validate it; here core.GenerateChain builds each once and commits its
// state to the database, and the chain takes them as known blocks with
// their state (BlockChain.InsertChain does not execute those again). The
// blocks are the ones the beacon would seal with no transactions: same
// system calls, same header rules. The pool must be empty.
func (b *backend) fastForward(n int) error {
	if n <= 0 {
		return nil
	}
	bc := b.eth.BlockChain()
	head := bc.CurrentBlock()
	parent := bc.GetBlock(head.Hash(), head.Number.Uint64())
	if parent == nil {
		return errors.New("fast forward: no head block")
	}
	// GenerateChain reads the parent's state from the database.
	if err := bc.TrieDB().Commit(parent.Root(), false); err != nil {
		return fmt.Errorf("fast forward: flush head state: %w", err)
	}
	db := b.eth.ChainDb()
	blocks, receipts := gethcore.GenerateChain(bc.Config(), parent, b.eth.Engine(), db, n, func(_ int, g *gethcore.BlockGen) {
		g.OffsetTime(-9) // one second after its parent, not GenerateChain's ten
	})
	for i, blk := range blocks {
		rawdb.WriteBlock(db, blk)
		rawdb.WriteReceipts(db, blk.Hash(), blk.NumberU64(), receipts[i])
	}
	if i, err := bc.InsertChain(blocks); err != nil {
		return fmt.Errorf("fast forward: block %d: %w", blocks[i].NumberU64(), err)
	}
	if got := bc.CurrentBlock().Hash(); got != blocks[len(blocks)-1].Hash() {
		return fmt.Errorf("fast forward: head is %s, not the last block made", got)
	}
	return nil
}
