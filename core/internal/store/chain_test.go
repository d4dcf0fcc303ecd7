package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/store"
)

func proposal(dao, id string, block uint64, state, forVotes string) core.Proposal {
	return core.Proposal{DAO: dao, ChainID: 1337, ProposalID: id, Proposer: "0x0000000000000000000000000000000000000001",
		Targets: []string{"0x0000000000000000000000000000000000000002"}, Values: []string{"0"}, Signatures: []string{""}, Calldatas: []string{"0x"},
		Description: "# Proposal", VoteStart: 10, VoteEnd: 20, State: state, ForVotes: forVotes, AgainstVotes: "0", AbstainVotes: "0",
		CreatedBlock: 5, CreatedTx: "0xtx", CreatedAt: time.Unix(1000, 0), UpdatedBlock: block, UpdatedAt: time.Unix(1000+int64(block), 0)}
}

func TestIndexBatchesAndRollback(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		s.RegisterWebhook(ctx, "https://a.example.com/", "whsec_a")
		if _, ok, _ := s.Cursor(ctx, "dao-a"); ok {
			t.Fatal("cursor before any batch")
		}
		b1 := core.IndexBatch{DAO: "dao-a", ChainID: 1337, Cursor: core.Cursor{Block: 10, Hash: "0x10"},
			Proposals:     []core.Proposal{proposal("dao-a", "1", 5, core.ProposalPending, "0")},
			Notifications: []core.Notification{{ID: "evt_1", Type: core.TypeProposalCreated, DAO: "dao-a", OccurredAt: time.Now(), Data: []byte(`{}`)}},
			Blocks:        []core.BlockRef{{Number: 5, Hash: "0x5"}, {Number: 10, Hash: "0x10"}}}
		if err := s.ApplyBatch(ctx, b1); err != nil {
			t.Fatal(err)
		}
		if err := s.ApplyBatch(ctx, b1); !errors.Is(err, core.ErrCursorMoved) {
			t.Fatalf("a batch built on no cursor applied over one: %v", err)
		}
		b2 := core.IndexBatch{DAO: "dao-a", ChainID: 1337, Prev: &core.Cursor{Block: 10, Hash: "0x10"}, Cursor: core.Cursor{Block: 20, Hash: "0x20"},
			Proposals: []core.Proposal{proposal("dao-a", "1", 15, core.ProposalActive, "100")},
			Votes: []core.Vote{{DAO: "dao-a", ChainID: 1337, ProposalID: "1", Voter: "0xv", Support: 1, Weight: "100", BlockNumber: 15, BlockHash: "0x15", TxHash: "0xvt", LogIndex: 0, CastAt: time.Now()},
				{DAO: "dao-a", ChainID: 1337, ProposalID: "1", Voter: "0xw", Support: 0, Weight: "7", BlockNumber: 8, BlockHash: "0x8", TxHash: "0xwt", LogIndex: 3, CastAt: time.Now()}},
			Notifications: []core.Notification{{ID: "evt_2", Type: core.TypeVoteCast, DAO: "dao-a", OccurredAt: time.Now(), Data: []byte(`{}`)}},
			Blocks:        []core.BlockRef{{Number: 15, Hash: "0x15"}, {Number: 20, Hash: "0x20"}}}
		if err := s.ApplyBatch(ctx, b2); err != nil {
			t.Fatal(err)
		}
		if err := s.ApplyBatch(ctx, b2); !errors.Is(err, core.ErrCursorMoved) {
			t.Fatalf("a stale batch applied: %v", err)
		}
		p, ok, _ := s.Proposal(ctx, "dao-a", "1")
		if !ok || p.ForVotes != "100" || len(p.Targets) != 1 {
			t.Fatalf("proposal %+v", p)
		}
		votes, _, _ := s.ListVotes(ctx, "dao-a", "1", core.Page{})
		if len(votes) != 2 {
			t.Fatalf("votes %d", len(votes))
		}
		if st, _ := s.QueueStats(ctx); st.Depth != 2 {
			t.Fatalf("notifications fanned out to %d deliveries, want 2", st.Depth)
		}
		blocks, _ := s.RecentBlocks(ctx, 1337, 3)
		if len(blocks) != 3 || blocks[0].Number != 20 {
			t.Fatalf("recent blocks %+v", blocks)
		}
		// A reorg above block 10 restores the proposal to its revision at 5,
		// removes the vote of block 15 and moves the cursor back.
		if err := s.Rollback(ctx, 1337, core.BlockRef{Number: 10, Hash: "0x10"}); err != nil {
			t.Fatal(err)
		}
		p, _, _ = s.Proposal(ctx, "dao-a", "1")
		if p.ForVotes != "0" || p.UpdatedBlock != 5 || !p.UpdatedAt.Equal(time.Unix(1005, 0)) {
			t.Fatalf("after rollback %+v", p)
		}
		votes, _, _ = s.ListVotes(ctx, "dao-a", "1", core.Page{})
		if len(votes) != 1 || votes[0].BlockNumber != 8 {
			t.Fatalf("votes after rollback %+v", votes)
		}
		if c, _, _ := s.Cursor(ctx, "dao-a"); c.Block != 10 || c.Hash != "0x10" {
			t.Fatalf("cursor after rollback %+v", c)
		}
		s.Rollback(ctx, 1337, core.BlockRef{Number: 4, Hash: "0x4"})
		if _, ok, _ := s.Proposal(ctx, "dao-a", "1"); ok {
			t.Fatal("a proposal created above the rollback point survived")
		}
		list, _, _ := s.ListProposals(ctx, "dao-a", "", core.Page{})
		if len(list) != 0 {
			t.Fatalf("proposals %+v", list)
		}
	})
}

func TestChainLease(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		l, ok, err := s.TryChainLock(ctx, 5)
		if err != nil || !ok {
			t.Fatalf("first lock: %v %v", ok, err)
		}
		if _, ok, _ := s.TryChainLock(ctx, 5); ok {
			t.Fatal("the lease was handed out twice")
		}
		if l2, ok, _ := s.TryChainLock(ctx, 6); !ok {
			t.Fatal("another chain's lease was refused")
		} else {
			l2.Release()
		}
		l.Release()
		l.Release()
		<-l.Done()
		l3, ok, _ := s.TryChainLock(ctx, 5)
		if !ok {
			t.Fatal("a released lease was not handed out again")
		}
		l3.Release()
	})
}

// TestProposalStatesAndMilestones covers what proposal state tracking
// stores: the eight states, quorum, clock and milestones, restored by a
// rollback with the rest of a revision; the open proposals the indexer
// asks the governor about; the cross-DAO listing by state; and the
// cursor's notify-from block.
func TestProposalStatesAndMilestones(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		q := "4000"
		mk := func(dao, id string, block uint64, state string, milestones uint32, quorum *string) core.Proposal {
			p := proposal(dao, id, block, state, "0")
			p.Clock, p.Milestones, p.Quorum = core.ClockTimestamp, milestones, quorum
			p.QuorumReached = quorum != nil
			return p
		}
		b1 := core.IndexBatch{DAO: "dao-a", ChainID: 1337, Cursor: core.Cursor{Block: 10, Hash: "0x10", NotifyFrom: 11},
			Proposals: []core.Proposal{mk("dao-a", "1", 5, core.ProposalPending, 0, nil), mk("dao-a", "2", 5, core.ProposalActive, core.MilestoneActive, nil),
				mk("dao-a", "3", 5, core.ProposalDefeated, core.MilestoneActive|core.MilestoneClosed, &q)}}
		if err := s.ApplyBatch(ctx, b1); err != nil {
			t.Fatal(err)
		}
		b2 := core.IndexBatch{DAO: "dao-b", ChainID: 1337, Cursor: core.Cursor{Block: 10, Hash: "0x10"},
			Proposals: []core.Proposal{mk("dao-b", "9", 6, core.ProposalActive, core.MilestoneActive, nil)}}
		if err := s.ApplyBatch(ctx, b2); err != nil {
			t.Fatal(err)
		}
		if c, _, _ := s.Cursor(ctx, "dao-a"); c.NotifyFrom != 11 {
			t.Fatalf("cursor %+v, want notify-from 11", c)
		}
		open, err := s.OpenProposals(ctx, "dao-a")
		if err != nil || len(open) != 2 || open[0].ProposalID != "1" || open[1].ProposalID != "2" {
			t.Fatalf("open proposals %+v (%v)", open, err)
		}
		active, _, err := s.ListProposals(ctx, "", core.ProposalActive, core.Page{})
		if err != nil || len(active) != 2 || active[0].DAO != "dao-b" || active[1].DAO != "dao-a" {
			t.Fatalf("active across DAOs %+v (%v)", active, err)
		}
		// Proposal 2 closes at block 15; a rollback to 10 reopens it, with
		// its milestones as they were.
		closed := mk("dao-a", "2", 15, core.ProposalSucceeded, core.MilestoneActive|core.MilestoneClosed, &q)
		b3 := core.IndexBatch{DAO: "dao-a", ChainID: 1337, Prev: &b1.Cursor, Cursor: core.Cursor{Block: 20, Hash: "0x20", NotifyFrom: 11},
			Proposals: []core.Proposal{closed}}
		if err := s.ApplyBatch(ctx, b3); err != nil {
			t.Fatal(err)
		}
		p, _, _ := s.Proposal(ctx, "dao-a", "2")
		if p.State != core.ProposalSucceeded || p.Quorum == nil || *p.Quorum != q || !p.QuorumReached ||
			p.Milestones != core.MilestoneActive|core.MilestoneClosed || p.Clock != core.ClockTimestamp {
			t.Fatalf("closed proposal %+v", p)
		}
		if err := s.Rollback(ctx, 1337, core.BlockRef{Number: 10, Hash: "0x10"}); err != nil {
			t.Fatal(err)
		}
		p, _, _ = s.Proposal(ctx, "dao-a", "2")
		if p.State != core.ProposalActive || p.Quorum != nil || p.Milestones != core.MilestoneActive {
			t.Fatalf("after rollback %+v", p)
		}
		if c, _, _ := s.Cursor(ctx, "dao-a"); c.Block != 10 || c.NotifyFrom != 11 {
			t.Fatalf("cursor after rollback %+v", c)
		}
	})
}
