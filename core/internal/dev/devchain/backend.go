package devchain

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
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
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/triedb"
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
	// and it lets fastForward hand a state to the chain through the
	// database. Prefetching only costs CPU here.
	ethConf.StateScheme = rawdb.HashScheme
	ethConf.NoPrefetch = true
	// No snapshot (flat state) beside the tries: fastForward hands the
	// chain states without one.
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

// sender is the backend's client, whose SendTransaction waits for the pool
// to see the head. go-ethereum's pool validates a transaction against its
// own copy of the head state, which a goroutine of its own moves to each
// new block; TxPool.Sync, which the beacon calls before sealing, may run
// before that goroutine has taken the new head in. Right after a block, a
// transaction that spends what the block gave its sender was refused with
// "insufficient funds" as if the block were not there: under load,
// TestRunActivity's GovernorAlpha proposer, funded in one block and
// delegating in the next, failed so with a balance of 1 ether on chain.
// Such a refusal is sent again after a Sync, which takes the new head in
// once the pool's goroutine has, until the refusal is the chain's own.
type sender struct {
	*ethclient.Client
	b *backend
}

// poolCatchUp bounds the wait for the pool to see the head: far above the
// microseconds it takes, and short enough for a real refusal to surface.
const poolCatchUp = 5 * time.Second

func (s sender) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	deadline := time.Now().Add(poolCatchUp)
	for {
		err := s.Client.SendTransaction(ctx, tx)
		if err == nil || !strings.Contains(err.Error(), gethcore.ErrInsufficientFunds.Error()) || time.Now().After(deadline) {
			return err
		}
		if serr := s.b.eth.TxPool().Sync(); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// Commit seals a block with the pending transactions.
func (b *backend) Commit() common.Hash { return b.beacon.Commit() }

// Fork makes parent the head.
func (b *backend) Fork(parent common.Hash) error { return b.beacon.Fork(parent) }

// AdjustTime seals an empty block d later than the head.
func (b *backend) AdjustTime(d time.Duration) error { return b.beacon.AdjustTime(d) }

// fastForward appends n empty blocks, one second apart, to the chain. The
// engine API (Commit) builds every block twice and executes it once more to
// validate it; here core.GenerateChain builds each once. The blocks are
// the ones the beacon would seal with no transactions: same system calls,
// same header rules. GenerateChain commits the state of every block it
// makes: it writes to a scratch database over the chain's (overlay), and
// only the last block's state is copied into the chain's, which keeps no
// more states than it would have. The pool must be empty.
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
	scratch := &overlay{Database: db, upper: rawdb.NewMemoryDatabase()}
	blocks, receipts := gethcore.GenerateChain(bc.Config(), parent, b.eth.Engine(), scratch, n, func(_ int, g *gethcore.BlockGen) {
		g.OffsetTime(-9) // one second after its parent, not GenerateChain's ten
	})
	last := blocks[len(blocks)-1]
	if err := copyState(db, scratch, last.Root()); err != nil {
		return fmt.Errorf("fast forward: %w", err)
	}
	for i, blk := range blocks {
		rawdb.WriteBlock(db, blk)
		rawdb.WriteReceipts(db, blk.Hash(), blk.NumberU64(), receipts[i])
	}
	// The new blocks extend the head: SetCanonical marks them canonical
	// and makes the last one the head, without executing them.
	if _, err := bc.SetCanonical(last); err != nil {
		return fmt.Errorf("fast forward: %w", err)
	}
	if got := bc.CurrentBlock().Hash(); got != last.Hash() {
		return fmt.Errorf("fast forward: head is %s, not the last block made", got)
	}
	return nil
}

// overlay is a database that reads from upper, then from the embedded one,
// and writes to upper only.
type overlay struct {
	ethdb.Database
	upper ethdb.Database
}

func (o *overlay) Has(key []byte) (bool, error) {
	if ok, err := o.upper.Has(key); err == nil && ok {
		return true, nil
	}
	return o.Database.Has(key)
}

func (o *overlay) Get(key []byte) ([]byte, error) {
	if v, err := o.upper.Get(key); err == nil {
		return v, nil
	}
	return o.Database.Get(key)
}

func (o *overlay) Put(key, value []byte) error        { return o.upper.Put(key, value) }
func (o *overlay) Delete(key []byte) error            { return o.upper.Delete(key) }
func (o *overlay) NewBatch() ethdb.Batch              { return o.upper.NewBatch() }
func (o *overlay) NewBatchWithSize(n int) ethdb.Batch { return o.upper.NewBatchWithSize(n) }

// copyState writes into db the trie nodes of the state at root (accounts
// and storage; empty blocks make no code) that src has and db has not. A
// node that db has is the root of a subtree that db has whole (hash
// scheme), so the walk does not descend into it.
func copyState(db ethdb.KeyValueStore, src ethdb.Database, root common.Hash) error {
	tdb := triedb.NewDatabase(src, triedb.HashDefaults)
	defer tdb.Close()
	var walk func(id *trie.ID, accounts bool) error
	walk = func(id *trie.ID, accounts bool) error {
		if rawdb.HasLegacyTrieNode(db, id.Root) {
			return nil
		}
		t, err := trie.NewStateTrie(id, tdb)
		if err != nil {
			return err
		}
		it, err := t.NodeIterator(nil)
		if err != nil {
			return err
		}
		for descend := true; it.Next(descend); {
			descend = true
			if h := it.Hash(); h != (common.Hash{}) {
				if rawdb.HasLegacyTrieNode(db, h) {
					descend = false
					continue
				}
				rawdb.WriteLegacyTrieNode(db, h, it.NodeBlob())
			}
			if accounts && it.Leaf() {
				var acc types.StateAccount
				if err := rlp.DecodeBytes(it.LeafBlob(), &acc); err != nil {
					return fmt.Errorf("copy state: account %x: %w", it.LeafKey(), err)
				}
				if acc.Root != types.EmptyRootHash {
					if err := walk(trie.StorageTrieID(root, common.BytesToHash(it.LeafKey()), acc.Root), false); err != nil {
						return err
					}
				}
			}
		}
		if err := it.Error(); err != nil {
			return fmt.Errorf("copy state: %w", err)
		}
		return nil
	}
	return walk(trie.StateTrieID(root), true)
}
