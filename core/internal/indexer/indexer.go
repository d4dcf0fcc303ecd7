// Package indexer follows the governor contracts of govgate's DAOs: it reads
// their events with eth_getLogs in adaptive block ranges up to the head
// minus the chain's confirmations, and writes proposals, votes and one
// notification per event through the Store interface, in the same
// transaction that moves the cursors. One Runner indexes one chain; with
// several govgate processes, a Locker lets only one of them do so.
//
// The work scales with the chain, not with its DAOs. At the head, one poll
// reads the head once, checks for a reorganisation once, and reads the
// logs of every DAO of the chain with one eth_getLogs (split by the
// provider's address limit), then routes each log to its DAO; the DAOs
// joined to the chain's shared cursor move with it in one transaction, and
// a DAO with nothing new costs nothing. A DAO that is behind (new, or
// backfilling) catches up in a sweep, which reads history once for all the
// DAOs in it, a bounded number of sweeps at a time, and joins the shared
// cursor when it reaches it. It remembers recent block hashes to detect
// reorganisations, and rolls back to the common ancestor before indexing
// again.
package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/govgate/govgate/core"
)

// Chain is what the indexer needs of a chain gateway (core/internal/chain's Gateway).
type Chain interface {
	ChainID(ctx context.Context) (uint64, error)
	// BlockStamp returns the number, hash (as the node reports it) and Unix
	// time of a block, the latest one for a nil number; ethereum.NotFound if
	// there is no such block.
	BlockStamp(ctx context.Context, number *big.Int) (num uint64, hash common.Hash, timestamp uint64, err error)
	// BlockHeader is BlockStamp with the parent's hash.
	BlockHeader(ctx context.Context, number *big.Int) (num uint64, hash, parent common.Hash, timestamp uint64, err error)
	FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error)
	// CallContract runs eth_call at a block (the latest for nil).
	CallContract(ctx context.Context, msg ethereum.CallMsg, number *big.Int) ([]byte, error)
	// CodeAt returns an account's code at a block (the latest for nil).
	CodeAt(ctx context.Context, addr common.Address, number *big.Int) ([]byte, error)
}

// Config tunes a Runner. Zero fields take the defaults (WithDefaults).
type Config struct {
	// PollInterval is how often the head is polled once caught up: from
	// the start of one poll to the start of the next (a poll longer than
	// it is followed at once by the next).
	PollInterval time.Duration `yaml:"poll_interval"`
	// InitialRange and MaxRange bound the block range of one eth_getLogs:
	// it halves when a provider refuses it and doubles while results are few.
	InitialRange uint64 `yaml:"initial_range"`
	MaxRange     uint64 `yaml:"max_range"`
	// KeepBlocks is how far back reorganisations are detected and undone.
	KeepBlocks uint64 `yaml:"keep_blocks"`
	// LockRetry is how often a process without the chain's lease tries to
	// take it, hence how soon it takes over from a dead holder.
	LockRetry time.Duration `yaml:"lock_retry"`
	// The thresholds of the DAOs' indexing states in the indexer's status
	// (lagging_blocks, lagging_after, stalled_after).
	core.IndexingThresholds `yaml:",inline"`
	// EndingSoon are the leads before a proposal's voteEnd at which
	// proposal.ending_soon is pushed, longest first. A lead longer than the
	// proposal's whole voting period is skipped for it.
	EndingSoon []time.Duration `yaml:"ending_soon"`
	// CatchUpConcurrency is how many sweeps (catch-ups of DAOs that are
	// behind the shared cursor, each reading history once for all its
	// DAOs) run at once besides the head polls.
	CatchUpConcurrency int `yaml:"catch_up_concurrency"`
	// DAOConcurrency is how many DAOs' parts of one block range are built
	// at once: their eth_calls (a new proposal's details, quorums, the
	// states of open proposals at the range's end) wait on the node
	// together, within the chain's max_concurrency, instead of one DAO
	// after the other.
	DAOConcurrency int `yaml:"dao_concurrency"`
	// ProbeConcurrency is how many DAOs are checked at once (probe: the
	// governor's code and kind, its token, its clock and timelock) when
	// many are added together, as at a first start.
	ProbeConcurrency int `yaml:"probe_concurrency"`
	// MaxFailureBackoff bounds the pause after failed polls, which doubles
	// from PollInterval with each failure in a row.
	MaxFailureBackoff time.Duration `yaml:"max_failure_backoff"`
	// ProgressEvery is how often the indexer logs its progress at info:
	// the chain's head and cursor, and blocks, events and notifications of
	// each DAO that had any since the last report.
	ProgressEvery time.Duration `yaml:"progress_every"`
}

// Defaults of Config.
const (
	DefaultPollInterval = 2 * time.Second
	DefaultInitialRange = 1000
	DefaultMaxRange     = 10_000
	DefaultKeepBlocks   = 128
	DefaultLockRetry    = 2 * time.Second

	DefaultCatchUpConcurrency = 2
	DefaultDAOConcurrency     = 8
	DefaultProbeConcurrency   = 16
	DefaultMaxFailureBackoff  = time.Minute
	DefaultProgressEvery      = time.Minute
)

// growBelow: a range that returned fewer logs than this may double.
const growBelow = 2000

// WithDefaults returns c with zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	set := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	set(&c.PollInterval, DefaultPollInterval)
	set(&c.LockRetry, DefaultLockRetry)
	c.IndexingThresholds = c.IndexingThresholds.WithDefaults()
	set(&c.MaxFailureBackoff, DefaultMaxFailureBackoff)
	set(&c.ProgressEvery, DefaultProgressEvery)
	if c.CatchUpConcurrency == 0 {
		c.CatchUpConcurrency = DefaultCatchUpConcurrency
	}
	if c.DAOConcurrency == 0 {
		c.DAOConcurrency = DefaultDAOConcurrency
	}
	if c.ProbeConcurrency == 0 {
		c.ProbeConcurrency = DefaultProbeConcurrency
	}
	if c.InitialRange == 0 {
		c.InitialRange = DefaultInitialRange
	}
	if c.MaxRange == 0 {
		c.MaxRange = max(DefaultMaxRange, c.InitialRange)
	}
	if c.KeepBlocks == 0 {
		c.KeepBlocks = DefaultKeepBlocks
	}
	if c.EndingSoon == nil {
		c.EndingSoon = []time.Duration{24 * time.Hour, time.Hour}
	}
	c.EndingSoon = append([]time.Duration(nil), c.EndingSoon...)
	sort.Slice(c.EndingSoon, func(i, j int) bool { return c.EndingSoon[i] > c.EndingSoon[j] })
	return c
}

// Validate names the first field that cannot work, as the YAML file does.
func (c Config) Validate() error {
	switch {
	case c.PollInterval <= 0:
		return errors.New("indexer: poll_interval: must be positive")
	case c.LockRetry <= 0:
		return errors.New("indexer: lock_retry: must be positive")
	case c.InitialRange == 0:
		return errors.New("indexer: initial_range: must be at least 1")
	case c.MaxRange < c.InitialRange:
		return fmt.Errorf("indexer: max_range: %d is less than initial_range %d", c.MaxRange, c.InitialRange)
	case c.KeepBlocks < 2:
		return errors.New("indexer: keep_blocks: must be at least 2")
	case c.StalledAfter <= c.PollInterval:
		return errors.New("indexer: stalled_after: must be longer than poll_interval")
	case c.LaggingAfter <= 0:
		return errors.New("indexer: lagging_after: must be positive")
	case c.CatchUpConcurrency < 1:
		return errors.New("indexer: catch_up_concurrency: must be at least 1")
	case c.DAOConcurrency < 1:
		return errors.New("indexer: dao_concurrency: must be at least 1")
	case c.ProbeConcurrency < 1:
		return errors.New("indexer: probe_concurrency: must be at least 1")
	case c.MaxFailureBackoff < c.PollInterval:
		return errors.New("indexer: max_failure_backoff: must be at least poll_interval")
	case c.ProgressEvery <= 0:
		return errors.New("indexer: progress_every: must be positive")
	case len(c.EndingSoon) > maxLeads:
		return fmt.Errorf("indexer: ending_soon: at most %d leads", maxLeads)
	}
	for _, l := range c.EndingSoon {
		if l < time.Second {
			return fmt.Errorf("indexer: ending_soon: lead %s is shorter than a second", l)
		}
	}
	return nil
}

// isRangeError recognises a provider refusing an eth_getLogs range as too
// wide or too rich, which a narrower range fixes.
func isRangeError(err error) bool {
	if err == nil {
		return false
	}
	var rpcErr rpc.Error
	if errors.As(err, &rpcErr) && rpcErr.ErrorCode() == -32005 {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range rangeErrorHints {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// rangeErrorHints are fragments of the messages with which providers refuse
// a getLogs range (go-ethereum, Erigon, Infura, Alchemy, QuickNode, Ankr,
// public endpoints).
var rangeErrorHints = []string{
	"too many results", "query returned more than", "more than 10000 results",
	"range too large", "range is too large", "block range", "blocks range",
	"limit exceeded", "response size exceeded", "response is too big", "exceed maximum",
	"exceeds the range", "exceeds max", "too many blocks", "query timeout exceeded",
	"logs matched by query exceeds", "max results", "is limited to", "range limit", "-32005",
}
