package store_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/store"
)

// BenchmarkDelegatesPage100k stores 100,000 delegates of one DAO through
// the indexer's write path (DelegateVotesChanged events, 10,000 a batch),
// then times the first page of GET /{dao}/delegates (50 by voting power,
// with the DAO's total and each delegate's participation), on SQLite and
// on PostgreSQL:
//
//	delegates_page_ms_sqlite, delegates_page_ms_postgres
//	                the median of 21 calls, in milliseconds
//
// Seeding is not timed.
func BenchmarkDelegatesPage100k(b *testing.B) {
	const delegates, batch = 100_000, 10_000
	ctx := context.Background()
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
						Delegate: fmt.Sprintf("0x%040x", j+1), PreviousVotes: "0", NewVotes: fmt.Sprint((j*7919)%1_000_003 + 1)})
				}
				if err := s.ApplyBatch(ctx, bt); err != nil {
					b.Fatal(err)
				}
				c := bt.Cursor
				prev = &c
			}
			var times []float64
			b.ResetTimer()
			for range b.N {
				times = times[:0]
				for range 21 {
					start := time.Now()
					page, err := s.ListDelegates(ctx, "big", core.SortVotingPower, "", 50)
					if err != nil {
						b.Fatal(err)
					}
					times = append(times, float64(time.Since(start).Microseconds())/1000)
					if len(page.Items) != 50 || page.Next == "" {
						b.Fatalf("first page: %d items, next %q", len(page.Items), page.Next)
					}
				}
			}
			sort.Float64s(times)
			b.ReportMetric(times[len(times)/2], "delegates_page_ms_"+be.name)
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
