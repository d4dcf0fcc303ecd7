package core

import "time"

// Indexing states of a DAO, as IndexingThresholds.Classify decides them.
const (
	// IndexingSyncing: catching up since start, and making progress.
	IndexingSyncing = "syncing"
	// IndexingFresh: within LaggingBlocks and LaggingAfter of the confirmed
	// head.
	IndexingFresh = "fresh"
	// IndexingLagging: further behind than that, having been caught up
	// before.
	IndexingLagging = "lagging"
	// IndexingStalled: no successful poll, or no progress while behind, for
	// StalledAfter.
	IndexingStalled = "stalled"
)

// IndexingStates lists the states, in the order above.
func IndexingStates() []string {
	return []string{IndexingSyncing, IndexingFresh, IndexingLagging, IndexingStalled}
}

// IndexingThresholds decide a DAO's indexing state. The indexer's status
// and the health document use the same rule (Classify), each with the
// thresholds of its own configuration section.
type IndexingThresholds struct {
	// LaggingBlocks and LaggingAfter make a DAO lagging when it is more
	// blocks, or more seconds of chain time, behind the confirmed head.
	LaggingBlocks uint64        `yaml:"lagging_blocks"`
	LaggingAfter  time.Duration `yaml:"lagging_after"`
	// StalledAfter makes a DAO stalled when no poll has succeeded, or the
	// cursor has not moved while behind, for that long.
	StalledAfter time.Duration `yaml:"stalled_after"`
}

// Defaults of IndexingThresholds.
const (
	DefaultLaggingBlocks = 20
	DefaultLaggingAfter  = 5 * time.Minute
	DefaultStalledAfter  = 2 * time.Minute
)

// WithDefaults returns t with zero fields set to the defaults.
func (t IndexingThresholds) WithDefaults() IndexingThresholds {
	if t.LaggingBlocks == 0 {
		t.LaggingBlocks = DefaultLaggingBlocks
	}
	if t.LaggingAfter == 0 {
		t.LaggingAfter = DefaultLaggingAfter
	}
	if t.StalledAfter == 0 {
		t.StalledAfter = DefaultStalledAfter
	}
	return t
}

// Classify returns the state of s at now, for an indexer that started at
// started. Before a poll has covered the DAO, the clocks run from when the
// indexer took it on: s.Since (a DAO added at run time), or started.
func (t IndexingThresholds) Classify(s IndexerStatus, started, now time.Time) string {
	since := started
	if s.Since.After(since) {
		since = s.Since
	}
	checked := s.LastCheckedAt
	if checked.IsZero() {
		checked = since
	}
	if now.Sub(checked) > t.StalledAfter {
		return IndexingStalled
	}
	behind := s.LagBlocks > t.LaggingBlocks || s.LagSeconds > t.LaggingAfter.Seconds()
	progress := s.LastIndexedAt
	if progress.IsZero() {
		progress = since
	}
	if s.LagBlocks > 0 && now.Sub(progress) > t.StalledAfter {
		return IndexingStalled
	}
	switch {
	case s.LastCheckedAt.IsZero() || (!s.CaughtUp && behind):
		return IndexingSyncing
	case behind:
		return IndexingLagging
	}
	return IndexingFresh
}

// IndexerStatus is how far one DAO's indexing stands: the facts the
// indexer keeps (in memory, so that reading them never waits on the chain
// or the database) and the state IndexingThresholds.Classify makes of
// them. The indexer reports it, the health monitor judges it, and the admin
// API serves it: one type, not a copy per adapter.
type IndexerStatus struct {
	DAO     string `json:"dao"`
	ChainID uint64 `json:"chainId"`
	// LastIndexedBlock is the cursor: every block up to it is indexed.
	LastIndexedBlock     uint64    `json:"lastIndexedBlock"`
	LastIndexedBlockTime time.Time `json:"lastIndexedBlockTime,omitzero"`
	// LastIndexedAt is when the cursor last moved (by this process, or as
	// seen in the store when another process indexes).
	LastIndexedAt time.Time `json:"lastIndexedAt,omitzero"`
	// LastCheckedAt is when a poll of the chain last succeeded.
	LastCheckedAt time.Time `json:"lastCheckedAt,omitzero"`
	Head          uint64    `json:"head"`
	HeadHash      string    `json:"headHash,omitempty"`
	HeadTime      time.Time `json:"headTime,omitzero"`
	// ConfirmedHead is the head minus the chain's confirmations: the
	// highest block the indexer will index now.
	ConfirmedHead uint64 `json:"confirmedHead"`
	// LagBlocks and LagSeconds measure the distance from the cursor to the
	// confirmed head, in blocks and in chain time (LagSeconds stays 0 in a
	// process that does not hold the chain's lease).
	LagBlocks  uint64  `json:"lagBlocks"`
	LagSeconds float64 `json:"lagSeconds"`
	State      string  `json:"state"`
	// CaughtUp is true once the cursor reached the confirmed head since start.
	CaughtUp bool `json:"caughtUp"`
	// Leader is true while this process holds the chain's lease.
	Leader bool `json:"leader"`
	// Backfill is the progress of the current catch-up while the DAO is
	// more than one range behind; nil once it is at the head.
	Backfill *Backfill `json:"backfill,omitempty"`
	// NotifyFromBlock is the first block whose changes are pushed to
	// webhooks (0: every block); earlier history is stored, not pushed.
	NotifyFromBlock uint64 `json:"notifyFromBlock"`
	// CountingMode is the governor's COUNTING_MODE() and ClockMode its
	// clock's unit, once read ("" before, and CountingMode for governors
	// without one).
	CountingMode string    `json:"countingMode,omitempty"`
	ClockMode    string    `json:"clockMode,omitempty"`
	LastError    string    `json:"lastError,omitempty"`
	LastErrorAt  time.Time `json:"lastErrorAt,omitzero"`
	// Fault is a cause that stops the DAO's indexing until the operator
	// acts: the chain refutes the DAO (a governor without code, of another
	// kind, a voting token not found), or the RPC serves another chain.
	// Health fails with it.
	Fault string `json:"fault,omitempty"`
	// Waiting says why a DAO no poll has covered yet is syncing:
	// WaitingAdded from the moment it is added (SetDAOs), WaitingStart at
	// start. Empty once a poll (or, in a process that does not lead, a look
	// at the store) has covered it.
	Waiting string `json:"waiting,omitempty"`
	// Since is when this process took the DAO on (its start, or the DAO's
	// addition): before the first poll, the stalled clock runs from it.
	Since time.Time `json:"since,omitzero"`
}
