package indexer

import (
	"context"
	"encoding/json"
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
	failApply     func(b Batch) error              // fault injection, per part
	applied       int                              // chain batches applied
	rollbacks     int
	chainOf       map[string]uint64 // DAO → chain
	shared        map[uint64]Cursor // chain → shared cursor
	orphaned      map[string]bool   // notification ids a rollback orphaned
	orphanNotices []string          // one per orphaned notification, in order
	details       map[string]core.GovernorDetails
}

type memCursor struct {
	chainID uint64
	c       Cursor
	joined  bool
	gen     int64
}

func (s *memStore) Cursor(_ context.Context, dao string) (Cursor, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cursors[dao]
	if ok && c.joined {
		sh := s.shared[c.chainID]
		c.c.Block, c.c.Hash = sh.Block, sh.Hash
	}
	return c.c, ok, nil
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
		shared:    map[uint64]Cursor{},
		orphaned:  map[string]bool{},
		details:   map[string]core.GovernorDetails{},
	}
}

// GovernorDetails returns every DAO's: the memStore keeps no DAO list to
// check generations against, the runner compares them.
func (s *memStore) GovernorDetails(context.Context, uint64) (map[string]core.GovernorDetails, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]core.GovernorDetails, len(s.details))
	for k, v := range s.details {
		out[k] = v
	}
	return out, nil
}

func (s *memStore) SaveGovernorDetails(_ context.Context, details []core.GovernorDetails) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range details {
		s.details[d.DAO] = d
	}
	return nil
}

func (s *memStore) GovernorEvent(_ context.Context, dao string) (uint64, string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		block uint64
		tx    string
		ok    bool
	)
	for _, v := range s.votes {
		if v.DAO == dao && (!ok || v.BlockNumber > block) {
			block, tx, ok = v.BlockNumber, v.TxHash, true
		}
	}
	for _, p := range s.proposals[dao] {
		if !ok || p.CreatedBlock > block {
			block, tx, ok = p.CreatedBlock, p.CreatedTx, true
		}
	}
	return block, tx, ok, nil
}

// SettleLegacyCursor follows the store's, without its check of the DAO's
// generation (the memStore keeps no DAO list).
func (s *memStore) SettleLegacyCursor(_ context.Context, dao string, gen int64, keep bool, restart *Cursor) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cursors[dao]
	if !ok || c.gen != 0 {
		return false, nil
	}
	if keep {
		c.gen = gen
		s.cursors[dao] = c
		return true, nil
	}
	delete(s.cursors, dao)
	delete(s.proposals, dao)
	delete(s.revisions, dao)
	for k, v := range s.votes {
		if v.DAO == dao {
			delete(s.votes, k)
		}
	}
	if restart != nil {
		s.cursors[dao] = memCursor{chainID: c.chainID, c: *restart, gen: gen}
	}
	return true, nil
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

func (s *memStore) SharedCursor(_ context.Context, chainID uint64) (Cursor, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.shared[chainID]
	return c, ok, nil
}

func (s *memStore) Cursors(_ context.Context, chainID uint64) (map[string]core.DAOCursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]core.DAOCursor{}
	for dao, c := range s.cursors {
		if c.chainID != chainID {
			continue
		}
		dc := core.DAOCursor{Cursor: c.c, Joined: c.joined, Generation: c.gen}
		if sh, ok := s.shared[chainID]; ok && c.joined {
			dc.Block, dc.Hash = sh.Block, sh.Hash
		}
		out[dao] = dc
	}
	return out, nil
}

func (s *memStore) OpenDAOs(_ context.Context, chainID uint64) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for dao, ps := range s.proposals {
		for _, p := range ps {
			if p.ChainID == chainID && (p.State == core.ProposalPending || p.State == core.ProposalActive || p.State == core.ProposalQueued) {
				out = append(out, dao)
				break
			}
		}
	}
	return out, nil
}

// ApplyBatches follows core.ChainBatch: the shared cursor fences the whole
// batch, each part its own DAO; failApply, when set, fails the batch on a
// part, as a database error would.
func (s *memStore) ApplyBatches(_ context.Context, cb core.ChainBatch) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failApply != nil {
		for _, b := range cb.DAOs {
			if err := s.failApply(b); err != nil {
				return nil, err
			}
		}
	}
	if cb.Shared != nil {
		cur, found := s.shared[cb.ChainID]
		if (cb.Shared.Prev == nil) != !found || (found && (cur.Block != cb.Shared.Prev.Block || cur.Hash != cb.Shared.Prev.Hash)) {
			return nil, fmt.Errorf("chain %d: %w", cb.ChainID, ErrCursorMoved)
		}
	}
	var dropped []string
	kept := map[string]bool{}
	for _, b := range cb.DAOs {
		cur, found := s.cursors[b.DAO]
		var ok bool
		switch {
		case b.Generation > 0 && found && cur.gen != b.Generation:
			ok = false // redefined, or a legacy cursor not settled
		case b.Joined:
			ok = found && cur.joined
		case b.Prev == nil:
			ok = !found
		default:
			ok = found && !cur.joined && cur.c.Block == b.Prev.Block && cur.c.Hash == b.Prev.Hash
		}
		if !ok {
			dropped = append(dropped, b.DAO)
			continue
		}
		kept[b.DAO] = true
		s.applyContent(b)
		if !b.Joined {
			s.cursors[b.DAO] = memCursor{chainID: b.ChainID, c: b.Cursor, gen: b.Generation}
		}
		s.chainOf[b.DAO] = b.ChainID
	}
	s.applied++
	for _, dao := range cb.Join {
		if kept[dao] {
			c := s.cursors[dao]
			c.joined = true
			s.cursors[dao] = c
		}
	}
	for _, dao := range cb.Leave {
		if c, ok := s.cursors[dao]; ok && c.joined {
			c.joined, c.c.Block, c.c.Hash = false, cb.Shared.Prev.Block, cb.Shared.Prev.Hash
			s.cursors[dao] = c
		}
	}
	if cb.Shared != nil {
		s.shared[cb.ChainID] = cb.Shared.Next
	}
	if s.blocks[cb.ChainID] == nil {
		s.blocks[cb.ChainID] = map[uint64]string{}
	}
	for _, r := range cb.Blocks {
		s.blocks[cb.ChainID][r.Number] = r.Hash
	}
	if cb.PruneBelow > 0 {
		for n := range s.blocks[cb.ChainID] {
			if n < cb.PruneBelow {
				delete(s.blocks[cb.ChainID], n)
			}
		}
	}
	return dropped, nil
}

func (s *memStore) applyContent(b Batch) {
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
		if s.orphaned[n.ID] {
			n.ID = n.ID + "~revived"
		}
		if !s.notified[n.ID] {
			s.notified[n.ID] = true
			s.notifications = append(s.notifications, n)
		}
	}
	if b.PruneBelow > 0 {
		for id, revs := range s.revisions[b.DAO] {
			// Keep the latest revision at or below PruneBelow.
			keepFrom := 0
			for i, r := range revs {
				if r.UpdatedBlock <= b.PruneBelow {
					keepFrom = i
				}
			}
			s.revisions[b.DAO][id] = revs[keepFrom:]
		}
	}
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
		if c.c.Block > to.Number && !c.joined {
			s.cursors[dao] = memCursor{chainID: chainID, c: Cursor{Block: to.Number, Hash: to.Hash, NotifyFrom: c.c.NotifyFrom}}
		}
	}
	if sh, ok := s.shared[chainID]; ok && sh.Block > to.Number {
		s.shared[chainID] = Cursor{Block: to.Number, Hash: to.Hash}
	}
	for _, n := range s.notifications {
		var m struct{ BlockNumber uint64 }
		json.Unmarshal(n.Data, &m)
		if s.chainOf[n.DAO] == chainID && m.BlockNumber > to.Number && !s.orphaned[n.ID] && n.Type != core.TypeNotificationOrphaned {
			s.orphaned[n.ID] = true
			s.orphanNotices = append(s.orphanNotices, n.ID)
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

// liveNotifications are the notifications no reorganisation orphaned.
func (s *memStore) liveNotifications() []core.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []core.Notification
	for _, n := range s.notifications {
		if !s.orphaned[n.ID] {
			out = append(out, n)
		}
	}
	return out
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
