package store_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/store"
)

// BenchmarkDelegatesPage100k stores 100,000 delegates of one DAO through
// the indexer's write path (DelegateVotesChanged events, 10,000 a batch:
// each delegate has power of its own, no delegator and no vote, so that
// the listings by delegators and by votes are one tie broken by address),
// then times pages of GET /{dao}/delegates (50 delegates, with the DAO's
// total and each delegate's participation) on SQLite and on PostgreSQL,
// by each sort:
//
//	delegates_page_ms_sqlite, delegates_page_ms_postgres
//	                the first page by voting power, the median of 21
//	                calls, in milliseconds
//	…_delegators, …_votes
//	                the first page by delegators, by votes
//	delegates_page_50k_ms_sqlite, …
//	                the page after the 50,000th delegate (a before
//	                taken from the seed, not paged to)
//
// Seeding is not timed.
func BenchmarkDelegatesPage100k(b *testing.B) {
	const delegates, batch, middle = 100_000, 10_000, 50_000
	ctx := context.Background()
	seeded := make([]core.Delegate, delegates)
	for j := range seeded {
		seeded[j] = core.Delegate{Address: fmt.Sprintf("0x%040x", j+1), VotingPower: fmt.Sprint((j*7919)%1_000_003 + 1)}
	}
	// Each listing's order, to start a page after its middle: by
	// delegators and by votes, the addresses'.
	byPower := slices.Clone(seeded)
	slices.SortFunc(byPower, func(x, y core.Delegate) int {
		return cmp.Or(cmp.Compare(len(y.VotingPower), len(x.VotingPower)), strings.Compare(y.VotingPower, x.VotingPower), strings.Compare(x.Address, y.Address))
	})
	orders := map[string][]core.Delegate{core.SortVotingPower: byPower, core.SortDelegators: seeded, core.SortVotes: seeded}
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			s, _ := be.open(b)
			var prev *core.Cursor
			at := time.Unix(1_700_000_000, 0)
			for i := 0; i < delegates; i += batch {
				bt := core.IndexBatch{DAO: "big", ChainID: 1, Prev: prev, Cursor: core.Cursor{Block: uint64(i/batch + 1), Hash: fmt.Sprintf("0x%064x", i/batch+1)}}
				for j := i; j < i+batch; j++ {
					bt.TokenEvents = append(bt.TokenEvents, core.TokenEvent{DAO: "big", ChainID: 1, Kind: core.TypeDelegateVotesChanged,
						BlockNumber: bt.Cursor.Block, TxHash: fmt.Sprintf("0x%064x", j), LogIndex: 0, At: at,
						Delegate: seeded[j].Address, PreviousVotes: "0", NewVotes: seeded[j].VotingPower})
				}
				if err := s.ApplyBatch(ctx, bt); err != nil {
					b.Fatal(err)
				}
				c := bt.Cursor
				prev = &c
			}
			b.ResetTimer()
			for range b.N {
				for _, sortBy := range []string{core.SortVotingPower, core.SortDelegators, core.SortVotes} {
					order := orders[sortBy]
					suffix := ""
					if sortBy != core.SortVotingPower {
						suffix = "_" + sortBy
					}
					for _, page := range []struct {
						metric, before, first string
					}{
						{"delegates_page_ms_", "", order[0].Address},
						{"delegates_page_50k_ms_", store.DelegatesCursor(sortBy, order[middle-1]), order[middle].Address},
					} {
						var times []float64
						for range 21 {
							start := time.Now()
							got, err := s.ListDelegates(ctx, "big", sortBy, page.before, 50)
							if err != nil {
								b.Fatal(err)
							}
							times = append(times, float64(time.Since(start).Microseconds())/1000)
							if len(got.Items) != 50 || got.Next == "" || got.Items[0].Address != page.first {
								b.Fatalf("%s%s by %s: %d items, next %q, want 50 from %s", page.metric, be.name, sortBy, len(got.Items), got.Next, page.first)
							}
						}
						sort.Float64s(times)
						b.ReportMetric(times[len(times)/2], page.metric+be.name+suffix)
					}
				}
			}
		})
	}
}

// BenchmarkApplyDelegations writes a token's backfill through ApplyBatch
// as the indexer does in govgate-bench's delegation part: each iteration
// is one batch of 16,000 events (a block of the bench's emitter), half
// DelegateChanged and half DelegateVotesChanged, each pair a new
// delegator delegating to a new delegate. Run it with -benchtime=Nx:
// the tables grow with N as in a backfill.
//
//	us/event      wall time of ApplyBatch per event
//	cpu_us/event  CPU time per event: the test process's, and on
//	              PostgreSQL its server process's
func BenchmarkApplyDelegations(b *testing.B) {
	const perBatch = 16_000
	ctx := context.Background()
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			s, where := be.open(b)
			dbName := ""
			if s.Dialect() == store.Postgres {
				dbName = where[strings.LastIndexByte(where, '/')+1:]
				if i := strings.IndexByte(dbName, '?'); i >= 0 {
					dbName = dbName[:i]
				}
			}
			var prev *core.Cursor
			at := time.Unix(1_700_000_000, 0)
			next := 1
			batch := func(block uint64) core.IndexBatch {
				bt := core.IndexBatch{DAO: "bench", ChainID: 1, Prev: prev, Cursor: core.Cursor{Block: block, Hash: fmt.Sprintf("0x%064x", block)},
					Blocks: []core.BlockRef{{Number: block, Hash: fmt.Sprintf("0x%064x", block)}}}
				tx := fmt.Sprintf("0x%064x", block)
				for j := 0; j < perBatch/2; j++ {
					a := fmt.Sprintf("0x%040X", next)
					bt.TokenEvents = append(bt.TokenEvents,
						core.TokenEvent{DAO: "bench", ChainID: 1, Kind: core.TypeDelegateChanged, BlockNumber: block, TxHash: tx, LogIndex: uint(2 * j), At: at,
							Delegator: a, FromDelegate: "0x0000000000000000000000000000000000000000", ToDelegate: a},
						core.TokenEvent{DAO: "bench", ChainID: 1, Kind: core.TypeDelegateVotesChanged, BlockNumber: block, TxHash: tx, LogIndex: uint(2*j + 1), At: at,
							Delegate: a, PreviousVotes: "0", NewVotes: fmt.Sprint(next + 1)})
					next++
				}
				return bt
			}
			var took time.Duration
			var cpu float64
			for i := range b.N {
				bt := batch(uint64(i + 1))
				cpu0 := processCPU("self") + serverCPU(dbName)
				start := time.Now()
				if err := s.ApplyBatch(ctx, bt); err != nil {
					b.Fatal(err)
				}
				took += time.Since(start)
				cpu += processCPU("self") + serverCPU(dbName) - cpu0
				c := bt.Cursor
				prev = &c
			}
			b.ReportMetric(float64(took.Microseconds())/float64(b.N*perBatch), "us/event")
			b.ReportMetric(cpu*1e6/float64(b.N*perBatch), "cpu_us/event")
		})
	}
}

// processCPU is the CPU seconds of /proc/<pid>; 0 where there is no /proc.
func processCPU(pid string) float64 {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

// serverCPU is the CPU seconds of the PostgreSQL processes serving
// database db (their command lines name it); 0 for "".
func serverCPU(db string) float64 {
	if db == "" {
		return 0
	}
	total := 0.0
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmd, err := os.ReadFile(d + "/cmdline")
		if err != nil || !bytes.HasPrefix(cmd, []byte("postgres: ")) || !bytes.Contains(cmd, []byte(" "+db+" ")) {
			continue
		}
		total += processCPU(filepath.Base(d))
	}
	return total
}
