package indexer

import (
	"sort"
	"time"
)

// progressLog paces the indexer's progress reports.
type progressLog struct {
	last       time.Time
	lastShared uint64
}

// maxDAOLines bounds the per-DAO lines of one progress report: the DAOs
// with the most events get one each, the rest are counted.
const maxDAOLines = 20

// logProgress logs, every ProgressEvery, where the chain's indexing stands
// and what each DAO that had events since the last report indexed.
func (r *Runner) logProgress() {
	now := r.now()
	if r.progress.last.IsZero() {
		r.progress.last = now
		return
	}
	if now.Sub(r.progress.last) < r.cfg.ProgressEvery {
		return
	}
	r.progress.last = now
	type line struct {
		dao           string
		events, notes uint64
		block         uint64
	}
	var (
		lines                                  []line
		joined, behind, refused                int
		events, notes, head, confirmed, shared uint64
	)
	r.headMu.Lock()
	if r.shared != nil {
		shared = r.shared.Block
	}
	r.headMu.Unlock()
	r.mu.Lock()
	for _, d := range r.daos {
		switch d.phase {
		case phaseJoined:
			joined++
		case phaseRefused:
			refused++
		default:
			behind++
		}
		head, confirmed = d.status.Head, d.status.ConfirmedHead
		if d.events > 0 || d.notes > 0 {
			lines = append(lines, line{d.dao.Slug, d.events, d.notes, d.status.LastIndexedBlock})
			events += d.events
			notes += d.notes
			d.events, d.notes = 0, 0
		}
	}
	r.mu.Unlock()
	blocks := uint64(0)
	if r.progress.lastShared > 0 && shared > r.progress.lastShared {
		blocks = shared - r.progress.lastShared
	}
	r.progress.lastShared = shared
	r.log.Info("indexer progress", "head", head, "confirmed_head", confirmed, "shared_cursor", shared, "blocks", blocks,
		"daos", joined+behind+refused, "at_head", joined, "catching_up", behind, "refused", refused, "events", events, "notifications", notes)
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].events != lines[j].events {
			return lines[i].events > lines[j].events
		}
		return lines[i].dao < lines[j].dao
	})
	for i, l := range lines {
		if i == maxDAOLines {
			r.log.Info("dao progress", "more_daos", len(lines)-i)
			break
		}
		r.log.Info("dao progress", "dao", l.dao, "last_indexed_block", l.block, "events", l.events, "notifications", l.notes)
	}
}

// Summary is where a chain's indexing stands as a whole.
type Summary struct {
	ChainID       uint64 `json:"chainId"`
	Leader        bool   `json:"leader"`
	Head          uint64 `json:"head"`
	ConfirmedHead uint64 `json:"confirmedHead"`
	// SharedCursor is the block every DAO at the head is indexed to (the
	// lowest indexed block in a process that does not lead).
	SharedCursor uint64 `json:"sharedCursor"`
	DAOs         int    `json:"daos"`
	AtHead       int    `json:"atHead"`
	CatchingUp   int    `json:"catchingUp"`
	Refused      int    `json:"refused"`
	Fault        string `json:"fault,omitempty"`
}

// Summary returns where the chain's indexing stands, without a line per DAO.
func (r *Runner) Summary() Summary {
	s := Summary{ChainID: r.chainID}
	r.headMu.Lock()
	if r.shared != nil {
		s.SharedCursor = r.shared.Block
	}
	r.headMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	low, first := uint64(0), true
	for _, d := range r.daos {
		s.DAOs++
		s.Head, s.ConfirmedHead, s.Leader = d.status.Head, d.status.ConfirmedHead, d.status.Leader
		switch {
		case d.refusal != nil:
			s.Refused++
			continue
		case d.phase == phaseJoined || (!s.Leader && d.caughtUp):
			s.AtHead++
		default:
			s.CatchingUp++
		}
		if first || d.status.LastIndexedBlock < low {
			low, first = d.status.LastIndexedBlock, false
		}
	}
	if !s.Leader {
		s.SharedCursor = low
	}
	if r.faultErr != nil {
		s.Fault = r.faultErr.Error()
	}
	return s
}
