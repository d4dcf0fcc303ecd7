// Package devchain runs a real EVM chain in process for development and
// tests: go-ethereum's simulated backend serving JSON-RPC on 127.0.0.1, with
// the governor families that DAOs run already deployed, each with its own
// voting token: an OpenZeppelin 5.x Governor behind a TimelockController,
// on a block-number clock and on a timestamp clock; an OpenZeppelin 4.9
// Governor behind Compound's Timelock; Uniswap's GovernorAlpha as
// published; and a GovernorBravo-compatible governor. Its helpers propose,
// vote, queue, execute and cancel on any of them, advance blocks and time,
// stage proposals in every state (StageAllStates) and fork the chain, so
// that govgate can be exercised against the same contracts and events it
// meets on mainnet.
//
// The contracts are compiled from contracts/src, or copied from the npm
// package in which Uniswap published them, by contracts/gen.sh; the ABI
// and bytecode it writes to contracts/artifacts are committed and embedded
// here.
package devchain

//go:generate bash contracts/gen.sh

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/params"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
)

// ChainID is the chain id of every devchain (the simulated backend's).
const ChainID = 1337

// Options configure Start. The zero value is usable.
type Options struct {
	// Addr is where JSON-RPC is served; default "127.0.0.1:0" (any free port).
	Addr string
	// BlockTime, when positive, seals a block that often even without
	// transactions, so that the head moves as on a live chain. Such blocks
	// may land between two helper calls (Propose, Vote, …); Lifecycle and
	// RunActivity pause them while they run.
	BlockTime time.Duration
	// Accounts is how many funded dev accounts to create (default 10, at
	// least 4). Account 0 deploys; every account holds and self-delegates the
	// same share of the governance token.
	Accounts int
	// Delegators is how many accounts beyond the dev accounts the
	// activity's delegation scene brings in (default 24): a few a round,
	// each with a small stake from account 0. The scene moves voting power
	// among them and the dev accounts past the sixth (MoveDelegations);
	// nothing is sent to them before it first runs, so Start takes no
	// longer.
	Delegators int
	// BlockGasLimit defaults to go-ethereum's default gas ceiling.
	BlockGasLimit uint64
	Logger        *slog.Logger
}

// Chain is a running development chain. Its methods are safe for concurrent
// use: transactions, block sealing, forks and time jumps are serialised.
type Chain struct {
	backend *backend
	client  *ethclient.Client
	url     string
	log     *slog.Logger
	// keys and addrs are the dev accounts, then any staging proposers
	// that StageAllStates added (see alphaProposers), then the delegation
	// scene's crowd (see setUpDelegation), account i's key being
	// DevKey(i); c.mu guards them.
	keys     []*ecdsa.PrivateKey
	addrs    []common.Address
	signer   types.Signer
	holders  int              // how many of addrs are dev accounts (Options.Accounts)
	accounts []common.Address // addrs[:holders], which Accounts reads without c.mu

	mu sync.Mutex // serialises sending, sealing, forking and time jumps
	// scene is held by a scripted scene (Lifecycle, the activity) to pause
	// BlockTime sealing, whose extra blocks could close a voting window
	// between two of its steps.
	scene sync.Mutex
	// unsealed is, for each account that sent transactions since the last
	// block, the nonce after its last one. The pool updates its pending
	// nonces asynchronously, so the chain keeps its own count.
	unsealed map[int]uint64

	OZ     *Deployment // dev-oz: OpenZeppelin 5.x Governor, TimelockController, block clock
	Bravo  *Deployment // dev-bravo: the GovernorBravo-compatible DAO
	OZ4    *Deployment // dev-oz4: OpenZeppelin 4.9 Governor, Compound Timelock (proposals can expire)
	OZTime *Deployment // dev-oz-time: OpenZeppelin 5.x Governor on a timestamp clock
	Alpha  *Deployment // dev-alpha: Uniswap's GovernorAlpha, Uni and Timelock as published
	// OZFrac, OZOverride and OZOffset are OpenZeppelin 5.x governors with
	// the other counting modules and an L2-like clock: dev-oz-fractional
	// (GovernorCountingFractional), dev-oz-override
	// (GovernorCountingOverridable) and dev-offset-clock (a token clock
	// ahead of the block number).
	OZFrac     *Deployment
	OZOverride *Deployment
	OZOffset   *Deployment
	Box        common.Address
	batch      common.Address // BatchVoter
	// Actions are the targets of dev-oz's actions proposal (actions.go).
	Actions *ActionTargets

	// staged counts the proposals of StageAllStates and of the activity's
	// staging scenes, whose Box values and so actions all differ; round
	// counts the activity's scenes. Both carry over from one RunActivity
	// to the next, so that no proposal repeats an earlier one.
	staged, round atomic.Uint64
	alphaRun      *alphaWindow    // the activity's GovernorAlpha proposals in voting
	delegators    int             // Options.Delegators
	delegation    *delegationPool // the delegation scene's accounts, once it ran

	stop chan struct{}
	wg   sync.WaitGroup
}

// Deployment is one DAO deployed on the devchain.
type Deployment struct {
	Slug     string
	Name     string
	Kind     core.GovernorKind
	Clock    string // core.ClockBlockNumber or core.ClockTimestamp (ERC-6372)
	Governor common.Address
	Token    common.Address
	// Timelock is the governor's timelock: a TimelockController for the
	// OpenZeppelin 5.x governors, Compound's Timelock for OpenZeppelin 4.9
	// and GovernorAlpha; zero for the Bravo-style governor, which times
	// itself.
	Timelock   common.Address
	StartBlock uint64 // block of the governor's deployment
	// VotingDelay and VotingPeriod are in the governor's clock units: blocks,
	// or seconds on a timestamp clock. TimelockDelay is the delay between
	// queueing and execution.
	VotingDelay, VotingPeriod uint64
	TimelockDelay             time.Duration
	// ClockOffset is how far the governor's block-number clock runs ahead
	// of the chain's block number (dev-offset-clock); 0 elsewhere.
	ClockOffset uint64

	artifact string // the governor's artifact
	govName  string // an OpenZeppelin governor's name(), its EIP-712 domain name
}

// DAO returns the deployment as govgate configures a DAO.
func (d *Deployment) DAO() core.DAO {
	return core.DAO{
		Slug:       d.Slug,
		Name:       d.Name,
		ChainID:    ChainID,
		Governor:   d.Governor.Hex(),
		Kind:       d.Kind,
		StartBlock: d.StartBlock,
	}
}

var ether = big.NewInt(params.Ether)

// Start starts a chain, deploys the contracts and hands out the tokens. The
// chain runs until Close; ctx bounds only the start.
func Start(ctx context.Context, opts Options) (*Chain, error) {
	if opts.Accounts == 0 {
		opts.Accounts = 10
	}
	if opts.Accounts < 4 {
		return nil, fmt.Errorf("devchain: accounts: %d is fewer than 4", opts.Accounts)
	}
	if opts.Delegators == 0 {
		opts.Delegators = defaultDelegators
	}
	if opts.Delegators < 0 {
		return nil, fmt.Errorf("devchain: delegators: %d is negative", opts.Delegators)
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Chain{log: opts.Logger, stop: make(chan struct{}), unsealed: map[int]uint64{}, holders: opts.Accounts, delegators: opts.Delegators}
	alloc := types.GenesisAlloc{}
	for i := range opts.Accounts {
		key := DevKey(i)
		c.keys = append(c.keys, key)
		addr := crypto.PubkeyToAddress(key.PublicKey)
		c.addrs = append(c.addrs, addr)
		alloc[addr] = types.Account{Balance: new(big.Int).Mul(big.NewInt(1_000_000), ether)}
	}
	c.accounts = append([]common.Address(nil), c.addrs...)
	if err := c.startBackend(alloc, opts); err != nil {
		return nil, err
	}
	c.signer = types.LatestSignerForChainID(big.NewInt(ChainID))
	if err := c.deploy(ctx); err != nil {
		c.backend.Close()
		return nil, fmt.Errorf("devchain: deploy: %w", err)
	}
	if opts.BlockTime > 0 {
		c.wg.Add(1)
		go c.autoMine(opts.BlockTime)
	}
	args := []any{"rpc", c.url}
	for _, d := range c.Deployments() {
		args = append(args, d.Slug, d.Governor)
	}
	c.log.Info("devchain started", args...)
	return c, nil
}

// startBackend starts the simulated backend with JSON-RPC over HTTP. The
// backend cannot report the port it bound, so for port 0 a free port is
// picked first (and picked again if another process takes it meanwhile).
func (c *Chain) startBackend(alloc types.GenesisAlloc, opts Options) error {
	host, portStr, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return fmt.Errorf("devchain: addr: %w", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("devchain: addr: bad port %q", portStr)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		p := port
		if p == 0 {
			if p, err = freePort(host); err != nil {
				return fmt.Errorf("devchain: addr: %w", err)
			}
		}
		b, err := newBackend(alloc, host, p, opts.BlockGasLimit)
		if err == nil {
			c.backend, c.client = b, b.client
			c.url = "http://" + net.JoinHostPort(host, strconv.Itoa(p))
			return nil
		}
		lastErr = err
		if port != 0 {
			break
		}
	}
	return fmt.Errorf("devchain: start backend: %w", lastErr)
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// DevKey returns the private key of dev account i. The keys are derived from
// a public seed: never send anything of value to these accounts.
func DevKey(i int) *ecdsa.PrivateKey {
	return mustKey("govgate-dev-account-" + strconv.Itoa(i))
}

func mustKey(seed string) *ecdsa.PrivateKey {
	k, err := crypto.ToECDSA(crypto.Keccak256([]byte(seed)))
	if err != nil {
		panic(fmt.Sprintf("devchain: key for %q: %v", seed, err)) // a 1-in-2^128 seed
	}
	return k
}

// Close stops block production and the chain.
func (c *Chain) Close() error {
	select {
	case <-c.stop:
		return nil
	default:
	}
	close(c.stop)
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.backend.Close()
}

func (c *Chain) autoMine(every time.Duration) {
	defer c.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.scene.Lock()
			c.Commit()
			c.scene.Unlock()
		}
	}
}

// RPCURL is the JSON-RPC endpoint over HTTP.
func (c *Chain) RPCURL() string { return c.url }

// ChainID returns the chain id, 1337.
func (c *Chain) ChainID() uint64 { return ChainID }

// Client is an in-process client of the chain, for checks in tests.
func (c *Chain) Client() simulated.Client { return c.client }

// Accounts returns the dev accounts; account 0 deployed the contracts.
func (c *Chain) Accounts() []common.Address {
	return append([]common.Address(nil), c.accounts...)
}

// Commit seals a block with the pending transactions and returns its hash.
func (c *Chain) Commit() common.Hash {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commitLocked()
}

// commitLocked seals a block with every transaction sent since the last
// one; c.mu is held. The pool promotes transactions in the background, so
// one that arrives late is sealed in a further block.
func (c *Chain) commitLocked() common.Hash {
	defer clear(c.unsealed)
	for try := 0; ; try++ {
		h := c.backend.Commit()
		if try == 10 || c.allSealed() {
			return h
		}
	}
}

func (c *Chain) allSealed() bool {
	for from, want := range c.unsealed {
		n, err := c.client.NonceAt(context.Background(), c.addrs[from], nil)
		if err != nil || n < want {
			return false
		}
	}
	return true
}

// Fork makes parent the head, dropping every block above it; the blocks
// committed next form the new canonical chain. As on a live chain, the
// transactions of the dropped blocks go back to the pool and the next
// Commit may seal them again: send new transactions from other accounts,
// or after a Commit. It fails while transactions are pending.
func (c *Chain) Fork(parent common.Hash) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.unsealed)
	return c.backend.Fork(parent)
}

// AdjustTime seals an empty block d later than the head's time.
func (c *Chain) AdjustTime(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	for try := 0; try < 5; try++ {
		if err = c.backend.AdjustTime(d); err == nil {
			return nil
		}
		// The backend refuses while the pending block holds transactions
		// (one the pool promoted late): seal them first, then jump.
		c.commitLocked()
	}
	return err
}

// Head returns the latest block's header.
func (c *Chain) Head(ctx context.Context) (*types.Header, error) {
	return c.client.HeaderByNumber(ctx, nil)
}

// Mine seals n empty blocks.
func (c *Chain) Mine(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range n {
		c.commitLocked()
	}
}

// MineTo seals blocks until the head is at least number. It holds the
// chain for the whole run and stops early, with ctx's error, when ctx ends.
// Long runs of empty blocks (GovernorAlpha's voting period is 40,320
// blocks) are appended by fastForward, about twice as fast as sealing them
// one by one; the last block is sealed as usual.
func (c *Chain) MineTo(ctx context.Context, number uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.client.BlockNumber(ctx)
	if err != nil {
		return err
	}
	fast := false
	for n < number {
		if err := ended(ctx); err != nil {
			return err
		}
		if left := number - n; left > fastForwardMin && len(c.unsealed) == 0 {
			k := min(left-1, fastForwardChunk)
			if err := c.backend.fastForward(int(k)); err != nil {
				return err
			}
			n, fast = n+k, true
			continue
		}
		if fast {
			// The beacon times its next block after the last one it
			// sealed, which fastForward did not: seal it a second after
			// the head.
			if err := c.backend.AdjustTime(time.Second); err != nil {
				return fmt.Errorf("mine: %w", err)
			}
			fast = false
		} else {
			c.commitLocked()
		}
		n++
	}
	return nil
}

// Runs of blocks that MineTo fast-forwards: longer than fastForwardMin,
// fastForwardChunk at a time (between two looks at ctx).
const (
	fastForwardMin   = 64
	fastForwardChunk = 1024
)

// Deployments returns the eight deployed DAOs: dev-oz, dev-bravo, dev-oz4,
// dev-oz-time, dev-alpha, dev-oz-fractional, dev-oz-override and
// dev-offset-clock.
func (c *Chain) Deployments() []*Deployment {
	return []*Deployment{c.OZ, c.Bravo, c.OZ4, c.OZTime, c.Alpha, c.OZFrac, c.OZOverride, c.OZOffset}
}

// DAOs returns the deployed DAOs as govgate configures them, in the order
// of Deployments.
func (c *Chain) DAOs() []core.DAO {
	var daos []core.DAO
	for _, d := range c.Deployments() {
		daos = append(daos, d.DAO())
	}
	return daos
}

// ChainConfig returns a gateway configuration for this chain: no
// confirmations (a dev chain does not reorganise unless told to) and short
// timeouts.
func (c *Chain) ChainConfig() chain.ChainConfig {
	return chain.ChainConfig{
		ID:             ChainID,
		Name:           "devchain",
		RPC:            []string{c.url},
		Confirmations:  0,
		RequestTimeout: 5 * time.Second,
		Breaker: chain.BreakerConfig{
			FailuresToOpen:      3,
			OpenTimeout:         5 * time.Second,
			HalfOpenMaxRequests: 1,
		},
	}
}

// errReverted is wrapped by the error of a mined transaction that failed.
var errReverted = errors.New("transaction reverted")
