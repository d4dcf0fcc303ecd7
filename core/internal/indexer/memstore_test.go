package indexer

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/govgate/govgate/core"
)

// memStore is the reference Store: what core/internal/store must do, in memory. It
// follows STORE.md, including the revisions that Rollback restores from.
type memStore struct {
	mu            sync.Mutex
	cursors       map[string]memCursor             // by DAO
	blocks        map[uint64]map[uint64]string     // chain → number → hash
	proposals     map[string]map[string]Proposal   // DAO → id → current
	revisions     map[string]map[string][]Proposal // DAO → id → by block
	votes         map[voteKey]Vote                 // unique (chain, tx, log index)
	notifications []core.Notification              // in insertion order
	notified      map[string]bool                  // notification ids
	failApply     func(b Batch) error              // fault injection
	applied       int                              // batches applied
	rollbacks     int
	chainOf       map[string]uint64 // DAO → chain
}

type memCursor struct {
	chainID uint64
	c       Cursor
}

type voteKey struct {
	chainID  uint64
	tx       string
	logIndex uint
}

func newMemStore() *memStore {
	return &memStore{
		cursors:   map[string]memCursor{},
		blocks:    map[uint64]map[uint64]string{},
		proposals: map[string]map[string]Proposal{},
		revisions: map[string]map[string][]Proposal{},
		votes:     map[voteKey]Vote{},
		notified:  map[string]bool{},
		chainOf:   map[string]uint64{},
	}
}

func (s *memStore) Cursor(_ context.Context, dao string) (Cursor, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cursors[dao]
	return c.c, ok, nil
}

func (s *memStore) RecentBlocks(_ context.Context, chainID uint64, limit int) ([]BlockRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []BlockRef
	for n, h := range s.blocks[chainID] {
		out = append(out, BlockRef{Number: n, Hash: h})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *memStore) Proposal(_ context.Context, dao, id string) (Proposal, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.proposals[dao][id]
	return p, ok, nil
}

func (s *memStore) OpenProposals(_ context.Context, dao string) ([]Proposal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Proposal
	for _, p := range s.proposals[dao] {
		switch p.State {
		case core.ProposalPending, core.ProposalActive, core.ProposalQueued:
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedBlock < out[j].CreatedBlock })
	return out, nil
}

func (s *memStore) ApplyBatch(_ context.Context, b Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failApply != nil {
		if err := s.failApply(b); err != nil {
			return err
		}
	}
	cur, found := s.cursors[b.DAO]
	if (b.Prev == nil) != !found || (found && cur.c.Block != b.Prev.Block) {
		return fmt.Errorf("dao %s: %w", b.DAO, ErrCursorMoved)
	}
	if s.proposals[b.DAO] == nil {
		s.proposals[b.DAO] = map[string]Proposal{}
		s.revisions[b.DAO] = map[string][]Proposal{}
	}
	for _, p := range b.Proposals {
		revs := s.revisions[b.DAO][p.ProposalID]
		if n := len(revs); n > 0 && revs[n-1].UpdatedBlock == p.UpdatedBlock {
			revs[n-1] = p
		} else {
			revs = append(revs, p)
		}
		s.revisions[b.DAO][p.ProposalID] = revs
		s.proposals[b.DAO][p.ProposalID] = p
	}
	for _, v := range b.Votes {
		k := voteKey{v.ChainID, v.TxHash, v.LogIndex}
		if _, ok := s.votes[k]; !ok {
			s.votes[k] = v
		}
	}
	for _, n := range b.Notifications {
		if !s.notified[n.ID] {
			s.notified[n.ID] = true
			s.notifications = append(s.notifications, n)
		}
	}
	if s.blocks[b.ChainID] == nil {
		s.blocks[b.ChainID] = map[uint64]string{}
	}
	for _, r := range b.Blocks {
		s.blocks[b.ChainID][r.Number] = r.Hash
	}
	if b.PruneBelow > 0 {
		for n := range s.blocks[b.ChainID] {
			if n < b.PruneBelow {
				delete(s.blocks[b.ChainID], n)
			}
		}
		for dao, byID := range s.revisions {
			if s.chainOf[dao] != b.ChainID {
				continue
			}
			for id, revs := range byID {
				// Keep the latest revision at or below PruneBelow.
				keepFrom := 0
				for i, r := range revs {
					if r.UpdatedBlock <= b.PruneBelow {
						keepFrom = i
					}
				}
				byID[id] = revs[keepFrom:]
			}
		}
	}
	s.cursors[b.DAO] = memCursor{chainID: b.ChainID, c: b.Cursor}
	s.chainOf[b.DAO] = b.ChainID
	s.applied++
	return nil
}

func (s *memStore) Rollback(_ context.Context, chainID uint64, to BlockRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollbacks++
	for dao, c := range s.cursors {
		if c.chainID != chainID {
			continue
		}
		for id, p := range s.proposals[dao] {
			if p.CreatedBlock > to.Number {
				delete(s.proposals[dao], id)
				delete(s.revisions[dao], id)
				continue
			}
			if p.UpdatedBlock > to.Number {
				revs := s.revisions[dao][id]
				for len(revs) > 0 && revs[len(revs)-1].UpdatedBlock > to.Number {
					revs = revs[:len(revs)-1]
				}
				s.revisions[dao][id] = revs
				s.proposals[dao][id] = revs[len(revs)-1] // the creation revision is at or below to
			}
		}
		if c.c.Block > to.Number {
			s.cursors[dao] = memCursor{chainID: chainID, c: Cursor{Block: to.Number, Hash: to.Hash, NotifyFrom: c.c.NotifyFrom}}
		}
	}
	for k, v := range s.votes {
		if k.chainID == chainID && v.BlockNumber > to.Number {
			delete(s.votes, k)
		}
	}
	for n := range s.blocks[chainID] {
		if n > to.Number {
			delete(s.blocks[chainID], n)
		}
	}
	return nil
}

// snapshot helpers for assertions

func (s *memStore) allNotifications() []core.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]core.Notification(nil), s.notifications...)
}

func (s *memStore) allVotes(dao string) []Vote {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Vote
	for _, v := range s.votes {
		if v.DAO == dao {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BlockNumber != out[j].BlockNumber {
			return out[i].BlockNumber < out[j].BlockNumber
		}
		return out[i].LogIndex < out[j].LogIndex
	})
	return out
}

func (s *memStore) allProposals(dao string) map[string]Proposal {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Proposal{}
	for id, p := range s.proposals[dao] {
		out[id] = p
	}
	return out
}

func (s *memStore) blockRefs(chainID uint64) map[uint64]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint64]string{}
	for n, h := range s.blocks[chainID] {
		out[n] = h
	}
	return out
}
