package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/store"
)

// TestPowerHistoryAndPowerAt writes an account's power changes, four of
// them in one block, and reads them back: the history pages newest first
// without splitting a block (a page of 2 holds that whole block) and loses
// or repeats none; the power at each timepoint is the last change at or
// before it, on a block-number clock (with clock points where the
// governor's clock is ahead of the block number, as an L2 token's) and on
// a timestamp clock (block times).
func TestPowerHistoryAndPowerAt(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		const dao = "tok"
		a, b := addr(1), addr(2)
		k := newToken(dao)
		k.at(2).transfer("", a, 100).transfer("", b, 10)
		k.at(2).delegateTo(a, a)                                                        // a: 100
		k.at(5).delegateTo(b, a)                                                        // a: 110
		k.at(7).delegateTo(b, b)                                                        // a: 100
		k.at(9).transfer(a, b, 1).transfer(a, b, 2).transfer(a, b, 3).transfer(a, b, 4) // a: 99, 97, 94, 90
		k.at(12).delegateTo(b, a)                                                       // a: 110
		events := k.take()
		const offset = 1000
		for i := range events {
			events[i].Timepoint = events[i].BlockNumber + offset // the governor's clock, ahead by 1000
		}
		p := &applier{t: t, s: s, dao: dao}
		p.apply(20, events)

		var all []core.PowerChange
		var before uint64
		pages := 0
		for {
			page, next, err := s.PowerHistory(ctx, dao, core.ClockBlockNumber, a, before, 2)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			all = append(all, page...)
			if len(page) > 0 && next > 0 && page[len(page)-1].Block != next {
				t.Fatalf("page ends at block %d, next page before %d", page[len(page)-1].Block, next)
			}
			if next == 0 {
				break
			}
			before = next
		}
		var got []string
		for _, c := range all {
			got = append(got, fmt.Sprintf("%d@%d:%s", c.Block, c.Timepoint, c.Power))
		}
		want := "[12@1012:110 9@1009:90 9@1009:94 9@1009:97 9@1009:99 7@1007:100 5@1005:110 2@1002:100]"
		if fmt.Sprint(got) != want || pages != 4 {
			t.Fatalf("history in %d pages %v, want %s in 4 (12; the whole of block 9; 7 and 5; 2)", pages, got, want)
		}

		for _, c := range []struct {
			at         uint64
			power, del string
		}{
			{1001, "0", zero}, {1002, "100", a}, {1004, "100", a}, {1005, "110", a}, {1006, "110", a}, {1007, "100", a},
			{1008, "100", a}, {1009, "90", a}, {1011, "90", a}, {1012, "110", a}, {5000, "110", a},
			{12, "0", zero}, // a block number is not a timepoint of this clock
		} {
			power, del, err := s.PowerOfAt(ctx, dao, core.ClockBlockNumber, a, c.at)
			if err != nil {
				t.Fatal(err)
			}
			if power != c.power || del != c.del {
				t.Errorf("at %d: power %s delegate %s, want %s and %s", c.at, power, del, c.power, c.del)
			}
		}
		// On a timestamp clock, the timepoints are the blocks' times (the
		// test token's block n is at 1_700_000_000 + 12n).
		stamp := func(block uint64) uint64 { return 1_700_000_000 + 12*block }
		for _, c := range []struct {
			at    uint64
			power string
		}{
			{stamp(2) - 1, "0"}, {stamp(2), "100"}, {stamp(9) - 1, "100"}, {stamp(9), "90"}, {stamp(12), "110"},
		} {
			power, _, err := s.PowerOfAt(ctx, dao, core.ClockTimestamp, a, c.at)
			if err != nil {
				t.Fatal(err)
			}
			if power != c.power {
				t.Errorf("at time %s: power %s, want %s", time.Unix(int64(c.at), 0).UTC(), power, c.power)
			}
		}
		page, _, err := s.PowerHistory(ctx, dao, core.ClockTimestamp, a, 0, 1)
		if err != nil || len(page) != 1 || page[0].Timepoint != stamp(12) {
			t.Fatalf("timestamp history %+v (%v), want block 12 at %d", page, err, stamp(12))
		}
	})
}
