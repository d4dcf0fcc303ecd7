package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/store"
)

func note(id, typ, dao string, block uint64) core.Notification {
	return core.Notification{ID: id, Type: typ, DAO: dao, OccurredAt: time.Unix(1000, 0),
		Data: json.RawMessage(fmt.Sprintf(`{"chainId":1337,"blockNumber":%d}`, block))}
}

// TestSharedCursor walks two DAOs through the shared path: each catches
// up on its own cursor, joins the shared one, then moves with it without a
// row of its own; a part for a DAO that is not where it says is left out,
// not the batch; a stale shared move is refused whole.
func TestSharedCursor(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		c10 := core.Cursor{Block: 10, Hash: "0x10"}
		if _, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, Shared: &core.SharedMove{Next: c10}}); err != nil {
			t.Fatal(err)
		}
		// a catches up to 10 (its first batch), b stays behind at 5.
		dropped, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, DAOs: []core.IndexBatch{
			{DAO: "a", ChainID: 1337, Cursor: core.Cursor{Block: 10, Hash: "0x10", NotifyFrom: 11},
				Proposals: []core.Proposal{proposal("a", "1", 8, core.ProposalPending, "0")}},
			{DAO: "b", ChainID: 1337, Cursor: core.Cursor{Block: 5, Hash: "0x5"}},
		}})
		if err != nil || len(dropped) != 0 {
			t.Fatalf("catch-up: dropped %v, %v", dropped, err)
		}
		// The shared cursor moves to 20 with a joining: a's part carries
		// its own cursor (at 10) and its vote.
		c20 := core.Cursor{Block: 20, Hash: "0x20"}
		dropped, err = s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, Shared: &core.SharedMove{Prev: &c10, Next: c20},
			DAOs: []core.IndexBatch{{DAO: "a", ChainID: 1337, Prev: &core.Cursor{Block: 10, Hash: "0x10", NotifyFrom: 11}, Cursor: core.Cursor{Block: 20, Hash: "0x20", NotifyFrom: 11},
				Notifications: []core.Notification{note("evt_a15", core.TypeVoteCast, "a", 15)}}},
			Join: []string{"a"}, Blocks: []core.BlockRef{{Number: 15, Hash: "0x15"}, {Number: 20, Hash: "0x20"}}})
		if err != nil || len(dropped) != 0 {
			t.Fatalf("join: dropped %v, %v", dropped, err)
		}
		// Nothing of a happens from 20 to 30: no part, and its cursor moves.
		c30 := core.Cursor{Block: 30, Hash: "0x30"}
		if _, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, Shared: &core.SharedMove{Prev: &c20, Next: c30}}); err != nil {
			t.Fatal(err)
		}
		if cur, ok, _ := s.Cursor(ctx, "a"); !ok || cur.Block != 30 || cur.Hash != "0x30" || cur.NotifyFrom != 11 {
			t.Fatalf("a joined: cursor %+v", cur)
		}
		all, err := s.Cursors(ctx, 1337)
		if err != nil || len(all) != 2 || !all["a"].Joined || all["a"].Block != 30 || all["b"].Joined || all["b"].Block != 5 {
			t.Fatalf("cursors %+v, %v", all, err)
		}
		// A stale move (built on 20) writes nothing.
		if _, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, Shared: &core.SharedMove{Prev: &c20, Next: core.Cursor{Block: 31, Hash: "0x31"}},
			DAOs: []core.IndexBatch{{DAO: "a", ChainID: 1337, Joined: true, Notifications: []core.Notification{note("evt_stale", core.TypeVoteCast, "a", 31)}}}}); !errors.Is(err, core.ErrCursorMoved) {
			t.Fatalf("stale shared move: %v", err)
		}
		// A part of b built on a cursor b does not have is left out; the
		// joined part of a applies.
		c40 := core.Cursor{Block: 40, Hash: "0x40"}
		dropped, err = s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, Shared: &core.SharedMove{Prev: &c30, Next: c40}, DAOs: []core.IndexBatch{
			{DAO: "a", ChainID: 1337, Joined: true, Notifications: []core.Notification{note("evt_a35", core.TypeVoteCast, "a", 35)}},
			{DAO: "b", ChainID: 1337, Prev: &core.Cursor{Block: 7, Hash: "0x7"}, Cursor: core.Cursor{Block: 40, Hash: "0x40"}},
		}})
		if err != nil || len(dropped) != 1 || dropped[0] != "b" {
			t.Fatalf("dropped %v, %v", dropped, err)
		}
		if cur, _, _ := s.Cursor(ctx, "b"); cur.Block != 5 {
			t.Fatalf("b moved to %d", cur.Block)
		}
		// a leaves (refused): it keeps an own cursor where it was indexed.
		c50 := core.Cursor{Block: 50, Hash: "0x50"}
		if _, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, Shared: &core.SharedMove{Prev: &c40, Next: c50}, Leave: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
		if all, _ := s.Cursors(ctx, 1337); all["a"].Joined || all["a"].Block != 40 {
			t.Fatalf("a after leaving: %+v", all["a"])
		}
		if open, err := s.OpenDAOs(ctx, 1337); err != nil || len(open) != 1 || open[0] != "a" {
			t.Fatalf("open daos %v, %v", open, err)
		}
	})
}

// TestOrphanNotices rolls a chain back below indexed notifications: each
// gets exactly one notification.orphaned naming it, however often the
// rollback runs, and an event that returns on the new chain is stored
// again under a new id.
func TestOrphanNotices(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		if _, _, err := s.RegisterWebhook(ctx, "https://a.example.com/", "whsec_a"); err != nil {
			t.Fatal(err)
		}
		c10 := core.Cursor{Block: 10, Hash: "0x10"}
		if _, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, Shared: &core.SharedMove{Next: c10}, DAOs: []core.IndexBatch{
			{DAO: "a", ChainID: 1337, Cursor: c10, Notifications: []core.Notification{note("evt_keep", core.TypeVoteCast, "a", 9)}},
		}, Join: []string{"a"}, Blocks: []core.BlockRef{{Number: 9, Hash: "0x9"}, {Number: 10, Hash: "0x10"}}}); err != nil {
			t.Fatal(err)
		}
		c20 := core.Cursor{Block: 20, Hash: "0x20"}
		if _, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, Shared: &core.SharedMove{Prev: &c10, Next: c20}, DAOs: []core.IndexBatch{
			{DAO: "a", ChainID: 1337, Joined: true, Notifications: []core.Notification{
				note("evt_12", core.TypeVoteCast, "a", 12), note("evt_15", core.TypeProposalCreated, "a", 15), note("evt_20", core.TypeProposalActive, "a", 20)}},
		}, Blocks: []core.BlockRef{{Number: 12, Hash: "0x12"}, {Number: 20, Hash: "0x20"}}}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := s.Rollback(ctx, 1337, core.BlockRef{Number: 11, Hash: "0x11"}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := s.ListNotifications(ctx, core.NotificationFilter{Type: core.TypeNotificationOrphaned, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]int{}
		for _, n := range list {
			var d store.OrphanedData
			if err := json.Unmarshal(n.Data, &d); err != nil {
				t.Fatal(err)
			}
			if n.DAO != "a" || d.CommonAncestor != 11 || d.ChainID != 1337 || d.OrphanedBlock <= 11 || d.OrphanedType == "" {
				t.Errorf("orphan notice %s: %+v", n.ID, d)
			}
			named[d.OrphanedID]++
		}
		if len(named) != 3 || named["evt_12"] != 1 || named["evt_15"] != 1 || named["evt_20"] != 1 {
			t.Fatalf("orphan notices name %v, want evt_12, evt_15 and evt_20 once each", named)
		}
		if cur, _, _ := s.Cursor(ctx, "a"); cur.Block != 11 {
			t.Fatalf("cursor after rollback %+v", cur)
		}
		// The vote of block 12 is back in block 13: notified again, as a
		// new notification.
		c11 := core.Cursor{Block: 11, Hash: "0x11"}
		c14 := core.Cursor{Block: 14, Hash: "0x14"}
		back := note("evt_12", core.TypeVoteCast, "a", 13)
		if _, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1337, Shared: &core.SharedMove{Prev: &c11, Next: c14}, DAOs: []core.IndexBatch{
			{DAO: "a", ChainID: 1337, Joined: true, Notifications: []core.Notification{back}}}}); err != nil {
			t.Fatal(err)
		}
		all, err := s.ListNotifications(ctx, core.NotificationFilter{Type: core.TypeVoteCast, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		revived := store.RevivedNotificationID("evt_12", back.Data)
		found := false
		for _, n := range all {
			found = found || n.ID == revived
		}
		if !found {
			t.Fatalf("the returning vote was not stored again as %s: %v", revived, all)
		}
	})
}

// TestDAORegistry adds, changes and removes DAOs as the admin API does,
// seeds the configuration file's, and checks that the version moves with
// each change and that a new definition drops what was indexed.
func TestDAORegistry(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		gov := "0x408ED6354d4973f66138C91495F2f2FCbd8724C3"
		file := []core.DAO{{Slug: "filed", Name: "Filed", ChainID: 1, Governor: gov, Kind: core.KindOZGovernor}}
		if err := s.SeedDAOs(ctx, file); err != nil {
			t.Fatal(err)
		}
		v1, _ := s.DAOsVersion(ctx)
		if err := s.SeedDAOs(ctx, file); err != nil {
			t.Fatal(err)
		}
		if v, _ := s.DAOsVersion(ctx); v != v1 {
			t.Fatalf("seeding the same file moved the version %d → %d", v1, v)
		}
		added, err := s.CreateDAO(ctx, core.DAO{Slug: "added", Name: "Added", ChainID: 1, Governor: gov, Kind: core.KindGovernorBravo})
		if err != nil || added.Generation == 0 || added.Source != core.DAOSourceAPI {
			t.Fatalf("create: %+v, %v", added, err)
		}
		if _, err := s.CreateDAO(ctx, added); core.ErrorCode(err) != core.ECodeConflict {
			t.Fatalf("create twice: %v", err)
		}
		if _, err := s.UpdateDAO(ctx, file[0]); !errors.Is(err, store.ErrDAOFromConfig) {
			t.Fatalf("update a file's dao: %v", err)
		}
		// Its index so far:
		if err := s.ApplyBatch(ctx, core.IndexBatch{DAO: "added", ChainID: 1, Cursor: core.Cursor{Block: 9, Hash: "0x9"},
			Proposals: []core.Proposal{proposal("added", "1", 5, core.ProposalPending, "0")},
			Timeline:  []core.TimelineEntry{{DAO: "added", ProposalID: "1", ChainID: 1, Event: core.TimelineCreated, Block: 5, TxHash: "0x5"}},
			Governor:  &core.GovernorInfo{ClockMode: core.ClockBlockNumber}}); err != nil {
			t.Fatal(err)
		}
		renamed := added
		renamed.Name = "Renamed"
		if got, err := s.UpdateDAO(ctx, renamed); err != nil || got.Generation != added.Generation {
			t.Fatalf("rename: %+v, %v", got, err)
		}
		if _, ok, _ := s.Proposal(ctx, "added", "1"); !ok {
			t.Fatal("a rename dropped the index")
		}
		moved := renamed
		moved.StartBlock = 100
		got, err := s.UpdateDAO(ctx, moved)
		if err != nil || got.Generation == added.Generation {
			t.Fatalf("new start block: %+v, %v", got, err)
		}
		if _, ok, _ := s.Proposal(ctx, "added", "1"); ok {
			t.Fatal("a new definition kept the old index")
		}
		if tl, _ := s.Timeline(ctx, "added", "1"); len(tl) != 0 {
			t.Fatalf("a new definition kept the old timeline %+v", tl)
		}
		if g, ok, _ := s.Governor(ctx, "added"); ok {
			t.Fatalf("a new definition kept what the old governor said: %+v", g)
		}
		// A batch of the old definition is refused.
		dropped, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: 1, DAOs: []core.IndexBatch{{DAO: "added", ChainID: 1, Generation: added.Generation, Cursor: core.Cursor{Block: 10, Hash: "0x10"}}}})
		if err != nil || len(dropped) != 1 {
			t.Fatalf("old generation's batch: dropped %v, %v", dropped, err)
		}
		list, v, err := s.DAOs(ctx)
		if err != nil || len(list) != 2 || list[0].Slug != "filed" || list[1].Name != "Renamed" || v <= v1 {
			t.Fatalf("list %+v v%d, %v", list, v, err)
		}
		if err := s.DeleteDAO(ctx, "added"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteDAO(ctx, "filed"); !errors.Is(err, store.ErrDAOFromConfig) {
			t.Fatalf("delete a file's dao: %v", err)
		}
		// A file without the DAO removes it.
		if err := s.SeedDAOs(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if list, _, _ := s.DAOs(ctx); len(list) != 0 {
			t.Fatalf("after seeding an empty file: %+v", list)
		}
	})
}
