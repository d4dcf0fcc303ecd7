package core

import (
	"strings"
	"time"
)

// Cursor is how far a DAO has been indexed: every block up to and including
// Block is in the store.
type Cursor struct {
	Block uint64
	Hash  string // 0x-hex hash of Block as the chain reported it
	// NotifyFrom is the first block whose changes are pushed to webhooks;
	// 0 pushes every block. It is set when the DAO is first indexed.
	NotifyFrom uint64
}

// DAOCursor is a DAO's cursor as the store keeps it: Joined when the DAO
// follows its chain's shared cursor (then Block and Hash are the shared
// cursor's), and the DAO generation it was written for.
type DAOCursor struct {
	Cursor
	Joined     bool
	Generation int64
}

// GovernorDetails is what the indexer's probe learns of a DAO's governor
// when it checks the DAO against its chain: its clock, how it counts, its
// timelock's grace period and its voting token. The store keeps it for the
// DAO's generation, so that a new leader or a restarted process does not
// ask the chain again about a DAO that has not changed.
type GovernorDetails struct {
	DAO        string
	Generation int64
	// Clock is ClockBlockNumber or ClockTimestamp (ERC-6372 CLOCK_MODE);
	// HasClock is true where the governor answers clock().
	Clock    string
	HasClock bool
	// CountingMode is the governor's COUNTING_MODE() ("" without one);
	// QuorumAbstain is true where abstentions count towards its quorum.
	CountingMode  string
	QuorumAbstain bool
	// GraceSeconds is the timelock's GRACE_PERIOD (0: none).
	GraceSeconds uint64
	// Token is the voting token, 0x-hex.
	Token string
}

// BlockRef is a block the indexer has seen, kept to detect reorganisations.
type BlockRef struct {
	Number uint64
	Hash   string // 0x-hex
}

// Proposal states, as the governor's own state(proposalId) names them. The
// ProposalState enum of OpenZeppelin Governor 4.x/5.x, GovernorBravo and
// GovernorAlpha share this order, so StateName maps the uint8 of any of them.
const (
	ProposalPending   = "pending"
	ProposalActive    = "active"
	ProposalCanceled  = "canceled"
	ProposalDefeated  = "defeated"
	ProposalSucceeded = "succeeded"
	ProposalQueued    = "queued"
	ProposalExpired   = "expired"
	ProposalExecuted  = "executed"
)

// ProposalStates lists the states in the governors' enum order.
var ProposalStates = []string{
	ProposalPending, ProposalActive, ProposalCanceled, ProposalDefeated,
	ProposalSucceeded, ProposalQueued, ProposalExpired, ProposalExecuted,
}

// StateName returns the name of a governor's ProposalState value, "" for a
// value outside the enum.
func StateName(v uint8) string {
	if int(v) < len(ProposalStates) {
		return ProposalStates[v]
	}
	return ""
}

// ValidProposalState reports whether s names one of the eight states.
func ValidProposalState(s string) bool {
	for _, v := range ProposalStates {
		if v == s {
			return true
		}
	}
	return false
}

// Clock modes of ERC-6372: the unit of a governor's timepoints.
const (
	ClockBlockNumber = "blocknumber"
	ClockTimestamp   = "timestamp"
)

// Proposal is a proposal as it stood at the end of block UpdatedBlock. The
// identity and content fields never change after creation; State, the
// tallies, ETA and VoteEnd (late-quorum extension) do.
type Proposal struct {
	DAO        string   `json:"dao"`
	ChainID    uint64   `json:"chainId"`
	ProposalID string   `json:"proposalId"` // decimal; a hash for OpenZeppelin, a sequence for Bravo
	Proposer   string   `json:"proposer"`   // EIP-55
	Targets    []string `json:"targets"`
	Values     []string `json:"values"`     // decimal wei
	Signatures []string `json:"signatures"` // Bravo-style function signatures; "" each for OpenZeppelin
	Calldatas  []string `json:"calldatas"`  // 0x-hex
	// Title is the description's first line without markdown heading
	// marks, as governance front ends show it.
	Title string `json:"title"`
	// Description is the proposal text, often markdown. It can be long.
	Description string `json:"description"`
	// VoteStart and VoteEnd are clock timepoints: block numbers for Bravo and
	// for OpenZeppelin governors on a block-number clock (the usual), Unix
	// seconds for OpenZeppelin governors on a timestamp clock.
	VoteStart uint64 `json:"voteStart"`
	VoteEnd   uint64 `json:"voteEnd"`
	// Clock is the unit of VoteStart and VoteEnd: ClockBlockNumber or
	// ClockTimestamp (ERC-6372 CLOCK_MODE of the governor). On a
	// block-number clock the timepoints are the governor's clock() (an L2
	// token may count layer-1 blocks), not necessarily the chain's numbers.
	Clock string `json:"clock"`
	// State is what the governor's state(proposalId) answers at the DAO's
	// indexed block (one of ProposalStates).
	State string `json:"state"`
	// Quorum is the votes needed, at the proposal's snapshot (decimal),
	// read from the block where voting opened. It is nil while the
	// proposal is pending, and stays nil for a proposal canceled before
	// voting opened: such a proposal never had a snapshot to count against.
	Quorum *string `json:"quorum"`
	// QuorumReached applies the governor's own rule to the tallies: the
	// quorum= of its COUNTING_MODE (for+abstain on OpenZeppelin's Simple,
	// Fractional and Overridable modules), for on Bravo and Alpha.
	QuorumReached bool      `json:"quorumReached"`
	ForVotes      string    `json:"forVotes"`     // decimal
	AgainstVotes  string    `json:"againstVotes"` // decimal
	AbstainVotes  string    `json:"abstainVotes"` // decimal
	ETA           uint64    `json:"eta"`          // Unix seconds when queued, else 0
	CreatedBlock  uint64    `json:"createdBlock"`
	CreatedTx     string    `json:"createdTx"`
	CreatedAt     time.Time `json:"createdAt"` // block time
	UpdatedBlock  uint64    `json:"updatedBlock"`
	UpdatedAt     time.Time `json:"updatedAt"` // block time
	// Milestones records which time-driven notifications the indexer has
	// emitted for the proposal (Milestone bits), so that each goes out once.
	Milestones uint32 `json:"-"`
	// Actions are the proposal's calls, decoded (Action), one per target.
	// The store does not keep them: the REST API decodes them as it serves
	// the proposal, with the ABIs the operator configures at that time.
	Actions []Action `json:"actions,omitzero"`
}

// Milestone bits of Proposal.Milestones.
const (
	MilestoneActive  uint32 = 1 << 0
	MilestoneClosed  uint32 = 1 << 1 // succeeded or defeated
	MilestoneExpired uint32 = 1 << 2
	// MilestoneEndingSoon shifted left by a lead's index marks that lead.
	MilestoneEndingSoon uint32 = 1 << 8
)

// ProposalTitle returns the first line of a proposal's description without
// its markdown heading marks.
func ProposalTitle(description string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(description), "\n")
	return strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
}

// Vote kinds.
const (
	// VoteKindVote is a VoteCast or VoteCastWithParams: a delegate voting
	// with its delegated weight.
	VoteKindVote = "vote"
	// VoteKindOverride is an OverrideVoteCast (GovernorCountingOverridable):
	// a delegator voting with its own balance in place of its delegate.
	VoteKindOverride = "override"
)

// SupportFractional is the support of a split vote (GovernorCountingFractional).
const SupportFractional uint8 = 255

// Vote is one VoteCast, VoteCastWithParams or OverrideVoteCast event.
type Vote struct {
	DAO        string `json:"dao"`
	ChainID    uint64 `json:"chainId"`
	ProposalID string `json:"proposalId"`
	Voter      string `json:"voter"` // EIP-55
	// Kind is VoteKindVote or VoteKindOverride.
	Kind string `json:"kind"`
	// Support is 0 against, 1 for, 2 abstain, or 255 (SupportFractional)
	// for a split vote.
	Support uint8  `json:"support"`
	Weight  string `json:"weight"` // decimal: what this event counted
	// ForWeight, AgainstWeight and AbstainWeight are how Weight was
	// counted: all of it on the side of Support, or a split vote's three
	// parts. They add up to Weight.
	ForWeight     string `json:"forWeight"`
	AgainstWeight string `json:"againstWeight"`
	AbstainWeight string `json:"abstainWeight"`
	// Delegate, DelegateSupport and ReducedWeight are set on an override
	// that took weight back from a delegate that had voted (VoteReduced):
	// the delegate's tally on DelegateSupport fell by ReducedWeight.
	Delegate        string    `json:"delegate,omitempty"`
	DelegateSupport *uint8    `json:"delegateSupport,omitempty"`
	ReducedWeight   string    `json:"reducedWeight,omitempty"`
	Reason          string    `json:"reason"`
	Params          string    `json:"params,omitempty"` // 0x-hex; "" for VoteCast
	BlockNumber     uint64    `json:"blockNumber"`
	BlockHash       string    `json:"blockHash"`
	TxHash          string    `json:"txHash"`
	LogIndex        uint      `json:"logIndex"`
	CastAt          time.Time `json:"castAt"` // block time
}

// IndexBatch is what one indexing step writes, all or nothing.
type IndexBatch struct {
	DAO     string
	ChainID uint64
	// Prev is the cursor the batch was built on (nil: the DAO had none). The
	// store refuses the batch with ErrCursorMoved if the stored cursor
	// differs, so two indexers racing on one DAO cannot both write.
	Prev *Cursor
	// Cursor is the DAO's cursor after the batch.
	Cursor Cursor
	// Proposals holds one revision per proposal per block in which it
	// changed, in block order: the row reads as the last revision, and every
	// revision is kept until it is older than the kept blocks, for Rollback.
	Proposals []Proposal
	// Votes are inserted; a vote already stored (same ChainID, TxHash,
	// LogIndex) is left as it is.
	Votes []Vote
	// TokenEvents are the voting token's delegation events, in chain order;
	// the store keeps them and the delegates and delegations they make.
	TokenEvents []TokenEvent
	// Notifications are inserted with their delivery fan-out; one whose ID
	// is already stored is skipped.
	Notifications []Notification
	// Timeline are entries of proposals' timelines; one already stored
	// (same DAO, proposal, event and block) is left as it is.
	Timeline []TimelineEntry
	// Governor, when set, is what the DAO's governor said of itself, to
	// keep (it replaces what was kept).
	Governor *GovernorInfo
	// Blocks are block hashes to remember.
	Blocks []BlockRef
	// Joined marks a part of a ChainBatch whose DAO follows the chain's
	// shared cursor: Prev and Cursor are not used.
	Joined bool
	// Generation is the DAO's (DAO.Generation): the store refuses a batch
	// of an older definition of the DAO. 0 skips the check.
	Generation int64
	// PruneBelow, when positive, lets the store forget this chain's block
	// refs below that block, and proposal revisions below it superseded by a
	// later revision also at or below it.
	PruneBelow uint64
}

// ChainBatch is what one indexing step of a chain writes, all or nothing
// (Store.ApplyBatches): the events of many DAOs over one block range.
//
// A chain has one shared cursor, which every DAO joined to it follows: a
// DAO at the head costs no write when nothing of it happened, because its
// cursor is the chain's. Its IndexBatch, when it has content, says Joined.
// A DAO catching up (new, or backfilling) has a cursor of its own, fenced
// by IndexBatch.Prev as ApplyBatch does; it joins the shared cursor once
// its own equals it (Join).
type ChainBatch struct {
	ChainID uint64
	// Shared, when set, moves the chain's shared cursor: the store refuses
	// the whole batch with ErrCursorMoved when the stored shared cursor is
	// not Shared.Prev (another indexer moved it).
	Shared *SharedMove
	// DAOs are the per-DAO parts. A part that no longer applies (its DAO
	// was removed or redefined meanwhile, or its Prev is not the stored
	// cursor) is left out and named in the result; the rest is written.
	DAOs []IndexBatch
	// Join lists DAOs whose own cursor, equal to Shared.Next once this
	// batch is written, follows the shared cursor from now on.
	Join []string
	// Leave lists joined DAOs that stop following the shared cursor (the
	// indexer refused them): each gets an own cursor at Shared.Prev, up to
	// which it is indexed.
	Leave []string
	// Blocks are block hashes to remember; PruneBelow as in IndexBatch.
	Blocks     []BlockRef
	PruneBelow uint64
}

// SharedMove moves a chain's shared cursor from Prev (nil: the chain has
// none yet) to Next.
type SharedMove struct {
	Prev *Cursor
	Next Cursor
}

// Time-driven notification types: the indexer emits them when the confirmed
// head crosses a proposal's voteStart, voteEnd (or a lead before it), or
// its ETA plus the timelock's grace period.
const (
	TypeProposalActive     = "proposal.active"
	TypeProposalSucceeded  = "proposal.succeeded"
	TypeProposalDefeated   = "proposal.defeated"
	TypeProposalExpired    = "proposal.expired"
	TypeProposalEndingSoon = "proposal.ending_soon"
)

// ErrCursorMoved is returned (wrapped) when an index batch was built on a
// cursor that another indexer has since moved.
var ErrCursorMoved = Errorf(ECodeConflict, "cursor moved by another indexer")

// Backfill is how far an indexer's catch-up of a DAO has come: blocks done
// of the total, the rate over the catch-up so far, and the time left at
// that rate. Health reports it while a DAO backfills.
type Backfill struct {
	FromBlock       uint64  `json:"fromBlock"`
	ToBlock         uint64  `json:"toBlock"`
	BlocksDone      uint64  `json:"blocksDone"`
	BlocksTotal     uint64  `json:"blocksTotal"`
	Events          uint64  `json:"events"`
	EventsPerSecond float64 `json:"eventsPerSecond"`
	BlocksPerSecond float64 `json:"blocksPerSecond"`
	// ETASeconds is the estimated time left, -1 until there is a rate.
	ETASeconds float64 `json:"etaSeconds"`
}

// Timeline events: the state changes and events of a proposal.
const (
	TimelineCreated   = "created"
	TimelineActive    = "active"
	TimelineExtended  = "extended"
	TimelineSucceeded = "succeeded"
	TimelineDefeated  = "defeated"
	TimelineQueued    = "queued"
	TimelineExecuted  = "executed"
	TimelineCanceled  = "canceled"
	TimelineExpired   = "expired"
)

// TimelineEntry is one step of a proposal's life: an event the governor
// emitted (TxHash set), or a change of state() that the clock made (no
// transaction: Block is the first block where state() answered the new
// state).
type TimelineEntry struct {
	DAO        string    `json:"-"`
	ProposalID string    `json:"-"`
	ChainID    uint64    `json:"-"`
	Event      string    `json:"event"`
	Block      uint64    `json:"block"`
	Time       time.Time `json:"time"`
	TxHash     string    `json:"txHash,omitempty"`
}

// VoteStats are a proposal's votes counted by side, from its stored votes.
type VoteStats struct {
	// Voters counts the accounts whose counted weight on the side is
	// positive (a split vote counts on each side it gives weight to; a
	// delegate whose vote overrides took back entirely counts on none).
	VotersFor     int64 `json:"votersFor"`
	VotersAgainst int64 `json:"votersAgainst"`
	VotersAbstain int64 `json:"votersAbstain"`
	Voters        int64 `json:"voters"`
	// The weights add up to the proposal's tallies.
	ForWeight     string `json:"forWeight"`
	AgainstWeight string `json:"againstWeight"`
	AbstainWeight string `json:"abstainWeight"`
	TotalWeight   string `json:"totalWeight"`
	// ForShare, AgainstShare and AbstainShare are each side's part of
	// TotalWeight, 0 to 1 (0 with no votes).
	ForShare     float64 `json:"forShare"`
	AgainstShare float64 `json:"againstShare"`
	AbstainShare float64 `json:"abstainShare"`
	// QuorumShare is the votes that count towards quorum (the governor's
	// rule) over the quorum; above 1 once reached; nil without a quorum.
	QuorumShare *float64 `json:"quorumShare"`
	// DelegatedAtSnapshot is the voting power delegated at the snapshot:
	// the sum of every delegate's votes at voteStart, from the token's
	// DelegateVotesChanged events; Turnout is TotalWeight over it.
	DelegatedAtSnapshot *string  `json:"delegatedAtSnapshot"`
	Turnout             *float64 `json:"turnout"`
}

// PowerChange is one change of an account's voting power: a
// DelegateVotesChanged of the token.
type PowerChange struct {
	Block uint64 `json:"block"`
	// Timepoint is the governor's clock at Block: what ?at= takes.
	Timepoint     uint64    `json:"timepoint"`
	Time          time.Time `json:"time"`
	TxHash        string    `json:"txHash"`
	LogIndex      uint      `json:"logIndex"`
	PreviousPower string    `json:"previousPower"`
	Power         string    `json:"power"`
}

// GovernorInfo is what a DAO's governor says of itself, as the indexer
// read it: how it counts votes and the unit of its timepoints.
type GovernorInfo struct {
	// CountingMode is its COUNTING_MODE(), such as
	// "support=bravo&quorum=for,abstain"; "" for a governor without one
	// (GovernorBravo, GovernorAlpha).
	CountingMode string `json:"countingMode"`
	// ClockMode is ClockBlockNumber or ClockTimestamp (ERC-6372).
	ClockMode string `json:"clockMode"`
}

// QuorumCountsAbstain reports whether abstentions count towards the
// governor's quorum: the quorum= of its COUNTING_MODE names abstain
// (every OpenZeppelin counting module). A governor without a
// COUNTING_MODE counts for votes only (Bravo and Alpha), unless it is an
// OpenZeppelin governor (kind), whose modules all count abstentions.
func (g GovernorInfo) QuorumCountsAbstain(kind GovernorKind) bool {
	for _, kv := range strings.Split(g.CountingMode, "&") {
		if v, ok := strings.CutPrefix(kv, "quorum="); ok {
			for _, side := range strings.Split(v, ",") {
				if side == "abstain" {
					return true
				}
			}
			return false
		}
	}
	return kind == KindOZGovernor
}
