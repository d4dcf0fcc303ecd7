package store_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/store"
)

// TestLegacyIndexSurvivesUpgrade builds an index the way a govgate before
// DAO generations did, on each store: a real indexer on the dev chain, the
// schema then moved back to migration 0020 (before the shared cursor and
// the DAO list), so that its cursors are what such a store held. The
// upgraded store, seeded with a changed file and indexed again, keeps the
// index of each DAO under the same slug, governor and chain, and starts
// fresh a different DAO under a reused slug:
//
//   - dev-oz, the same governor: its index is kept as it was (no proposal
//     written again), its cursor moves on from where it stood;
//   - dev-bravo, reused for another governor: the old governor's proposal
//     is gone, and the new governor's index is a new DAO's (its history,
//     made after the old cursor, is not pushed);
//   - dev-alpha, the same governor but nothing in the index to check it by
//     (no governor event): indexed again from its start block, pushing
//     what followed the old cursor;
//   - dev-gone (no longer in the file) and dev-moved (now on another
//     chain): their indexes are deleted at the seed.
//
// Until the indexer settles a legacy cursor, the store refuses to write a
// DAO of a generation over it.
func TestLegacyIndexSurvivesUpgrade(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	each(t, func(t *testing.T, s *store.Store, _ string) {
		c, err := devchain.Start(ctx, devchain.Options{Accounts: 4, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// History before the upgrade: a proposal and a vote on the OZ
		// governor, a proposal on the Bravo-style one; none on Alpha.
		ozProp, err := c.Propose(ctx, c.OZ, 1, "# Before the upgrade", 31)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.OpenVoting(ctx, ozProp); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Vote(ctx, ozProp, 0, devchain.For, "old index"); err != nil {
			t.Fatal(err)
		}
		bravoProp, err := c.Propose(ctx, c.Bravo, 1, "# Bravo before the upgrade", 32)
		if err != nil {
			t.Fatal(err)
		}
		as := func(d *devchain.Deployment, slug string) core.DAO {
			dao := d.DAO()
			dao.Slug = slug
			return dao
		}
		before := []core.DAO{c.OZ.DAO(), c.Bravo.DAO(), c.Alpha.DAO(), as(c.OZTime, "dev-gone"), as(c.OZ4, "dev-moved")}
		// The file after the upgrade.
		moved := as(c.OZ4, "dev-moved")
		moved.ChainID = 5
		after := []core.DAO{c.OZ.DAO(), as(c.OZ4, "dev-bravo"), c.Alpha.DAO(), moved}

		newGW := func(t *testing.T) *chain.Gateway {
			gw, err := chain.New(c.ChainConfig(), chain.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(gw.Close)
			return gw
		}
		// The index before the upgrade: DAOs without generations.
		old, err := indexer.NewRunner(newGW(t), s, indexer.NewLocalLocker(), devchain.ChainID, 0, before, indexer.Config{}, indexer.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := old.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if err := store.MigrateTo(s, "0020_webhook_consumer_settings"); err != nil {
			t.Fatal(err)
		}
		type cursor struct {
			DAO        string `gorm:"column:dao"`
			Block      uint64
			NotifyFrom uint64
		}
		var legacy []cursor
		if err := s.DB().Raw(`SELECT dao, block, notify_from FROM chain_cursors ORDER BY dao`).Scan(&legacy).Error; err != nil {
			t.Fatal(err)
		}
		if len(legacy) != len(before) {
			t.Fatalf("legacy cursors: %+v", legacy)
		}
		oldCursor := map[string]cursor{}
		for _, cur := range legacy {
			oldCursor[cur.DAO] = cur
		}
		seqs := func(dao string) []int64 {
			var out []int64
			if err := s.DB().Raw(`SELECT seq FROM proposals WHERE dao = ? ORDER BY seq`, dao).Scan(&out).Error; err != nil {
				t.Fatal(err)
			}
			return out
		}
		ozSeqs := seqs("dev-oz")
		if len(ozSeqs) == 0 || len(seqs("dev-bravo")) == 0 || len(seqs("dev-gone")) != 0 {
			t.Fatalf("the old index: dev-oz %v, dev-bravo %v", ozSeqs, seqs("dev-bravo"))
		}

		// While govgate is down for the upgrade, governance goes on.
		alphaProp, err := c.Propose(ctx, c.Alpha, 1, "# Alpha during the upgrade", 33)
		if err != nil {
			t.Fatal(err)
		}
		oz4Prop, err := c.Propose(ctx, c.OZ4, 1, "# OZ 4.9 during the upgrade", 34)
		if err != nil {
			t.Fatal(err)
		}

		if err := store.MigrateTo(s, store.LatestMigration()); err != nil {
			t.Fatal(err)
		}
		if err := s.SeedDAOs(ctx, after); err != nil {
			t.Fatal(err)
		}
		gens := func() map[string]int64 {
			var rows []struct {
				DAO        string `gorm:"column:dao"`
				Generation int64
			}
			if err := s.DB().Raw(`SELECT dao, generation FROM chain_cursors`).Scan(&rows).Error; err != nil {
				t.Fatal(err)
			}
			out := map[string]int64{}
			for _, r := range rows {
				out[r.DAO] = r.Generation
			}
			return out
		}
		if got := gens(); len(got) != 3 || got["dev-oz"] != 0 || got["dev-bravo"] != 0 || got["dev-alpha"] != 0 {
			t.Fatalf("cursors after the seed (gone and moved deleted, the rest legacy): %v", got)
		}
		for _, slug := range []string{"dev-gone", "dev-moved"} {
			var n int64
			s.DB().Raw(`SELECT COUNT(*) FROM token_events WHERE dao = ?`, slug).Scan(&n)
			if n != 0 {
				t.Fatalf("%s's index outlived the seed: %d token events", slug, n)
			}
		}
		daos, _, err := s.DAOs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var onChain []core.DAO
		gen := map[string]int64{}
		for _, d := range daos {
			gen[d.Slug] = d.Generation
			if d.ChainID == devchain.ChainID {
				onChain = append(onChain, d)
			}
		}
		// The store refuses a DAO of a generation over a legacy cursor.
		prev := core.Cursor{Block: oldCursor["dev-oz"].Block}
		if err := s.DB().Raw(`SELECT hash FROM chain_cursors WHERE dao = 'dev-oz'`).Scan(&prev.Hash).Error; err != nil {
			t.Fatal(err)
		}
		dropped, err := s.ApplyBatches(ctx, core.ChainBatch{ChainID: devchain.ChainID, DAOs: []core.IndexBatch{{DAO: "dev-oz", ChainID: devchain.ChainID,
			Prev: &prev, Cursor: core.Cursor{Block: prev.Block + 1, Hash: "0x01"}, Generation: gen["dev-oz"]}}})
		if err != nil || !slices.Equal(dropped, []string{"dev-oz"}) {
			t.Fatalf("a write over the legacy cursor: dropped %v, %v", dropped, err)
		}

		// The indexer settles them, then indexes.
		r, err := indexer.NewRunner(newGW(t), s, indexer.NewLocalLocker(), devchain.ChainID, 0, onChain, indexer.Config{}, indexer.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		head, err := c.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		curs, err := s.Cursors(ctx, devchain.ChainID)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range onChain {
			if cur := curs[d.Slug]; cur.Generation != d.Generation || cur.Block != head.Number.Uint64() {
				t.Fatalf("%s after the upgrade: %+v, want generation %d at the head %d", d.Slug, cur, d.Generation, head.Number)
			}
		}
		// dev-oz: the same index.
		if got := seqs("dev-oz"); !slices.Equal(got, ozSeqs) {
			t.Fatalf("dev-oz's proposals were written again: %v, were %v", got, ozSeqs)
		}
		if cur := curs["dev-oz"]; cur.NotifyFrom != oldCursor["dev-oz"].NotifyFrom {
			t.Fatalf("dev-oz pushes from %d, pushed from %d", cur.NotifyFrom, oldCursor["dev-oz"].NotifyFrom)
		}
		// dev-bravo: the old governor's proposal gone, the new one's a new
		// DAO's history.
		if _, ok, _ := s.Proposal(ctx, "dev-bravo", bravoProp.ID.String()); ok {
			t.Fatal("dev-bravo still serves the old governor's proposal")
		}
		if _, ok, _ := s.Proposal(ctx, "dev-bravo", oz4Prop.ID.String()); !ok {
			t.Fatal("dev-bravo does not serve its new governor's proposal")
		}
		if cur := curs["dev-bravo"]; cur.NotifyFrom <= oz4Prop.Receipt.BlockNumber.Uint64() {
			t.Fatalf("dev-bravo, a new DAO, pushes from %d: its history (block %d) would be pushed", cur.NotifyFrom, oz4Prop.Receipt.BlockNumber)
		}
		// dev-alpha: indexed again, pushing what followed the old cursor.
		if _, ok, _ := s.Proposal(ctx, "dev-alpha", alphaProp.ID.String()); !ok {
			t.Fatal("dev-alpha does not serve its proposal")
		}
		if cur := curs["dev-alpha"]; cur.NotifyFrom != oldCursor["dev-alpha"].Block+1 {
			t.Fatalf("dev-alpha pushes from %d, want the block after its old cursor, %d", cur.NotifyFrom, oldCursor["dev-alpha"].Block+1)
		}
		created := map[string]bool{}
		notes, err := s.ListNotifications(ctx, core.NotificationFilter{Type: core.TypeProposalCreated, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range notes {
			created[n.DAO] = true
		}
		if !created["dev-alpha"] || created["dev-bravo"] {
			t.Fatalf("proposal.created pushed for %v: want dev-alpha's (after its old cursor), not dev-bravo's (a new DAO's history)", created)
		}
	})
}

// TestGovernorDetailsKeptByGeneration keeps what probes learned of DAOs'
// governors: a chain's DAOs get theirs back for their current generation
// only (a redefined DAO's, of its old generation, is not read, and is
// replaced when the new one is probed), and a removed DAO's go with it.
func TestGovernorDetailsKeptByGeneration(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		a := core.DAO{Slug: "a", Name: "A", ChainID: 1, Governor: "0x408ED6354d4973f66138C91495F2f2FCbd8724C3", Kind: core.KindGovernorBravo}
		b := core.DAO{Slug: "b", Name: "B", ChainID: 1, Governor: "0x323A76393544d5ecca80cd6ef2A560C6a395b7E3", Kind: core.KindOZGovernor}
		other := core.DAO{Slug: "c", Name: "C", ChainID: 5, Governor: "0xf07DeD9dC292157749B6Fd268E37DF6EA38395B9", Kind: core.KindOZGovernor}
		if err := s.SeedDAOs(ctx, []core.DAO{a, b, other}); err != nil {
			t.Fatal(err)
		}
		daos, _, err := s.DAOs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		details := func(d core.DAO, clock string) core.GovernorDetails {
			return core.GovernorDetails{DAO: d.Slug, Generation: d.Generation, Clock: clock, HasClock: true, CountingMode: "support=bravo&quorum=for,abstain",
				QuorumAbstain: true, GraceSeconds: 1_209_600, Token: "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"}
		}
		var kept []core.GovernorDetails
		for _, d := range daos {
			kept = append(kept, details(d, core.ClockBlockNumber))
		}
		if err := s.SaveGovernorDetails(ctx, kept); err != nil {
			t.Fatal(err)
		}
		got, err := s.GovernorDetails(ctx, 1)
		if err != nil || len(got) != 2 || got["a"] != kept[0] || got["b"] != kept[1] {
			t.Fatalf("chain 1's details: %+v (%v), kept %+v", got, err, kept[:2])
		}
		// b redefined: its old details are not read, its new ones are.
		b2 := b
		b2.StartBlock = 100
		if err := s.SeedDAOs(ctx, []core.DAO{a, b2, other}); err != nil {
			t.Fatal(err)
		}
		daos, _, _ = s.DAOs(ctx)
		if got, _ := s.GovernorDetails(ctx, 1); len(got) != 1 || got["a"] != kept[0] {
			t.Fatalf("after b's redefinition: %+v", got)
		}
		fresh := details(daos[1], core.ClockTimestamp)
		if err := s.SaveGovernorDetails(ctx, []core.GovernorDetails{fresh}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GovernorDetails(ctx, 1); got["b"] != fresh {
			t.Fatalf("b's new details: %+v, want %+v", got["b"], fresh)
		}
		// a removed from the file: its details go with it.
		if err := s.SeedDAOs(ctx, []core.DAO{b2, other}); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := s.DB().Raw(`SELECT COUNT(*) FROM dao_probes WHERE dao = 'a'`).Scan(&n).Error; err != nil || n != 0 {
			t.Fatalf("a removed, %d rows of its details left (%v)", n, err)
		}
	})
}
