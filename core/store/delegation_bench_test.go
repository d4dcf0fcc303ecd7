package store_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
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
