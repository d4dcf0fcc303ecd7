package indexer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/govgate/govgate/core"
)

// How proposal states are kept true to the governor
//
// Events say when a proposal is created, queued, executed or canceled. The
// other transitions (pending to active, active to succeeded or defeated,
// queued to expired) happen when the chain's clock passes a timepoint, with
// no event. The indexer predicts from each open proposal's voteStart,
// voteEnd and ETA plus the timelock's grace period when its state can have
// changed, and only then asks the governor's own state(proposalId) at the
// confirmed head (eth_call at that block). The calls therefore grow with
// the proposals that change, not with blocks times proposals: a proposal
// costs about four calls in its life (two crossings, its quorum, an expiry).
// A vote proves the proposal active, and a queue or an execution proves it
// succeeded, so those transitions need no call at all.

// TimedNotificationID is the deterministic id of a time-driven notification:
// "evt_" and the first 32 hex digits of SHA-256 over the chain id (8 bytes,
// big-endian), the governor address (20 bytes), the proposal id (32 bytes)
// and the milestone name ("active", "closed", "expired",
// "ending_soon:SECONDS"). Being the same whoever emits it, after a restart,
// a leader takeover or a reorganisation, the store keeps it once.
func TimedNotificationID(chainID uint64, governor common.Address, proposalID *big.Int, milestone string) string {
	h := sha256.New()
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], chainID)
	h.Write(buf[:])
	h.Write(governor[:])
	h.Write(common.BigToHash(proposalID).Bytes())
	h.Write([]byte(milestone))
	return "evt_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// maxLeads is how many ending_soon leads fit the milestone bits.
const maxLeads = 8

// timedNote is a time-driven notification of the batch, in its place among
// the batch's notifications, whose data finish renders.
type timedNote struct {
	index     int // in batch.Notifications
	t         *tracked
	typ       string
	block     uint64
	blockHash string
	at        time.Time // the block's time
	// ending_soon
	lead      time.Duration
	left      float64 // seconds to voteEnd
	estimated bool
	pace      float64
	// expired
	grace uint64
}

// proposalStateData is the data of proposal.active, proposal.succeeded,
// proposal.defeated and proposal.expired: the proposal as the governor
// sees it at BlockNumber, the confirmed block where the change was seen.
type proposalStateData struct {
	ChainID       uint64  `json:"chainId"`
	Governor      string  `json:"governor"`
	ProposalID    string  `json:"proposalId"`
	BlockNumber   uint64  `json:"blockNumber"`
	BlockHash     string  `json:"blockHash"`
	State         string  `json:"state"`
	Title         string  `json:"title"`
	Proposer      string  `json:"proposer"`
	Clock         string  `json:"clock"`
	VoteStart     string  `json:"voteStart"`
	VoteEnd       string  `json:"voteEnd"`
	ForVotes      string  `json:"forVotes"`
	AgainstVotes  string  `json:"againstVotes"`
	AbstainVotes  string  `json:"abstainVotes"`
	Quorum        *string `json:"quorum"`
	QuorumReached bool    `json:"quorumReached"`
}

type proposalExpiredData struct {
	proposalStateData
	ETA         string `json:"eta"`
	GracePeriod string `json:"gracePeriod"`
}

type proposalEndingSoonData struct {
	proposalStateData
	LeadSeconds int64     `json:"leadSeconds"`
	SecondsLeft int64     `json:"secondsLeft"`
	EndsAt      time.Time `json:"endsAt"`
	// Estimated is true on block-number clocks, where EndsAt is the
	// confirmed head's time plus the blocks left at SecondsPerBlock.
	Estimated       bool    `json:"estimated"`
	SecondsPerBlock float64 `json:"secondsPerBlock,omitempty"`
}

// implied records what an event proves about the time-driven states before
// it: a vote that the proposal was active, a queue or an execution that it
// succeeded.
func (b *builder) implied(t *tracked, l *types.Log, st string) {
	hash := l.BlockHash.Hex()
	if t.p.State == core.ProposalPending {
		t.p.State = core.ProposalActive
		b.milestone(t, core.MilestoneActive, core.TypeProposalActive, l.BlockNumber, hash)
	}
	if st == core.ProposalSucceeded && t.p.State == core.ProposalActive {
		t.p.State = core.ProposalSucceeded
		b.milestone(t, core.MilestoneClosed, core.TypeProposalSucceeded, l.BlockNumber, hash)
	}
	b.touch(t.p.ProposalID)
}

// milestone emits a time-driven notification once per proposal: the bit
// in Milestones says it was emitted (or skipped as history).
func (b *builder) milestone(t *tracked, bit uint32, typ string, block uint64, hash string) *timedNote {
	if t.p.Milestones&bit != 0 {
		return nil
	}
	t.p.Milestones |= bit
	b.touch(t.p.ProposalID)
	b.r.metrics.event(b.d.dao.Slug, typ)
	if block < b.notifyFrom {
		return nil
	}
	b.batch.Notifications = append(b.batch.Notifications, core.Notification{Type: typ, DAO: b.d.dao.Slug})
	b.timed = append(b.timed, timedNote{index: len(b.batch.Notifications) - 1, t: t, typ: typ, block: block, blockHash: hash, at: b.blockTime})
	return &b.timed[len(b.timed)-1]
}

// settle brings the proposals whose state the clock can change up to date
// at block `to`, the confirmed head: it asks the governor where a
// timepoint was crossed, reads quorums once their snapshot has passed, and
// emits the time-driven notifications.
func (b *builder) settle(ctx context.Context, to uint64, toHash common.Hash, toTime uint64) error {
	open, err := b.r.store.OpenProposals(ctx, b.d.dao.Slug)
	if err != nil {
		return fmt.Errorf("open proposals: %w", err)
	}
	for _, p := range open {
		if _, ok := b.proposals[p.ProposalID]; !ok {
			b.proposals[p.ProposalID] = &tracked{p: p, forV: parseDec(p.ForVotes), against: parseDec(p.AgainstVotes), abstan: parseDec(p.AbstainVotes)}
		}
	}
	b.flush()
	b.block, b.blockTime = to, time.Unix(int64(toTime), 0).UTC()
	info := b.d.info
	now := to
	if info.clock == core.ClockTimestamp {
		now = toTime
	}
	hash := toHash.Hex()
	c := caller{r: b.r, d: b.d, governor: b.d.governor}
	for _, t := range b.trackedInOrder() {
		p := &t.p
		if p.Clock != info.clock {
			p.Clock = info.clock
			b.touch(p.ProposalID)
		}
		var check bool
		switch p.State {
		case core.ProposalPending:
			check = now > p.VoteStart
		case core.ProposalActive:
			check = now > p.VoteEnd
		case core.ProposalQueued:
			check = info.grace > 0 && p.ETA > 0 && toTime >= p.ETA+info.grace
		}
		id, _ := new(big.Int).SetString(p.ProposalID, 10)
		if check {
			st, err := c.state(ctx, id, to)
			if err != nil {
				return fmt.Errorf("proposal %s: %w", p.ProposalID, err)
			}
			if st == core.ProposalActive && p.State == core.ProposalActive && b.d.dao.Kind == core.KindOZGovernor {
				// Still open past voteEnd: a deadline extension this
				// indexer has not seen. The governor's own deadline rules.
				dl, err := c.deadline(ctx, id, to)
				if err != nil {
					return fmt.Errorf("proposal %s: %w", p.ProposalID, err)
				}
				if dl != p.VoteEnd {
					p.VoteEnd = dl
					b.touch(p.ProposalID)
				}
			}
			b.setState(t, st, to, hash)
		}
		if p.Quorum == nil && now > p.VoteStart && p.State != core.ProposalCanceled {
			q, err := c.quorum(ctx, p.VoteStart, to)
			switch {
			case err == nil:
				s := q.String()
				p.Quorum = &s
				b.touch(p.ProposalID)
			case !isRevert(err):
				return fmt.Errorf("proposal %s: %w", p.ProposalID, err)
			}
		}
		if p.State == core.ProposalActive {
			if err := b.endingSoon(ctx, t, to, hash, toTime); err != nil {
				return err
			}
		}
	}
	return nil
}

// setState moves a proposal to the state the governor reported and emits
// what the move means.
func (b *builder) setState(t *tracked, st string, block uint64, hash string) {
	old := t.p.State
	if st == old {
		return
	}
	t.p.State = st
	b.touch(t.p.ProposalID)
	switch st {
	case core.ProposalActive:
		b.milestone(t, core.MilestoneActive, core.TypeProposalActive, block, hash)
	case core.ProposalSucceeded, core.ProposalDefeated:
		if old == core.ProposalPending {
			// The whole voting window passed between two polls.
			b.milestone(t, core.MilestoneActive, core.TypeProposalActive, block, hash)
		}
		typ := core.TypeProposalSucceeded
		if st == core.ProposalDefeated {
			typ = core.TypeProposalDefeated
		}
		b.milestone(t, core.MilestoneClosed, typ, block, hash)
	case core.ProposalExpired:
		if n := b.milestone(t, core.MilestoneExpired, core.TypeProposalExpired, block, hash); n != nil {
			n.grace = b.d.info.grace
		}
	}
}

// endingSoon emits proposal.ending_soon for the shortest configured lead
// that the time left to voteEnd has come within. Leads longer than the
// proposal's voting period do not apply to it.
func (b *builder) endingSoon(ctx context.Context, t *tracked, to uint64, hash string, toTime uint64) error {
	leads := b.r.cfg.EndingSoon
	if len(leads) == 0 {
		return nil
	}
	p := &t.p
	var left, period, pace float64
	estimated := p.Clock != core.ClockTimestamp
	if estimated {
		var err error
		if pace, err = b.r.secondsPerBlock(ctx, to, toTime); err != nil {
			return err
		}
		left = float64(int64(p.VoteEnd)-int64(to)) * pace
		period = float64(int64(p.VoteEnd)-int64(p.VoteStart)) * pace
	} else {
		left = float64(int64(p.VoteEnd) - int64(toTime))
		period = float64(int64(p.VoteEnd) - int64(p.VoteStart))
	}
	if left < 0 {
		return nil
	}
	hit := -1
	for i, lead := range leads {
		bit := core.MilestoneEndingSoon << i
		if period > lead.Seconds() && left <= lead.Seconds() && p.Milestones&bit == 0 {
			if hit >= 0 {
				// A longer lead passed unseen (the process was down): only
				// the shortest one is worth pushing now.
				p.Milestones |= core.MilestoneEndingSoon << hit
			}
			hit = i
		}
	}
	if hit < 0 {
		return nil
	}
	if n := b.milestone(t, core.MilestoneEndingSoon<<hit, core.TypeProposalEndingSoon, to, hash); n != nil {
		n.lead, n.left, n.estimated, n.pace = leads[hit], left, estimated, pace
	}
	return nil
}

// secondsPerBlock estimates the chain's block time over the 256 blocks
// before `to`, sampled again every 64 blocks.
func (r *Runner) secondsPerBlock(ctx context.Context, to, toTime uint64) (float64, error) {
	if r.pace > 0 && to >= r.paceBlock && to < r.paceBlock+64 {
		return r.pace, nil
	}
	back := min(to, 256)
	if back == 0 {
		return 12, nil // no history yet: Ethereum's slot time
	}
	_, _, t0, err := r.chain.BlockStamp(ctx, new(big.Int).SetUint64(to-back))
	if err != nil {
		return 0, fmt.Errorf("block time sample: %w", err)
	}
	pace := float64(int64(toTime)-int64(t0)) / float64(back)
	if pace <= 0 {
		pace = 1
	}
	r.pace, r.paceBlock = pace, to
	return pace, nil
}

// trackedInOrder returns the batch's known proposals by creation.
func (b *builder) trackedInOrder() []*tracked {
	out := make([]*tracked, 0, len(b.proposals))
	for _, t := range b.proposals {
		if t != nil {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].p.CreatedBlock != out[j].p.CreatedBlock {
			return out[i].p.CreatedBlock < out[j].p.CreatedBlock
		}
		return out[i].p.ProposalID < out[j].p.ProposalID
	})
	return out
}

// finish flushes the last changes and renders the time-driven
// notifications with the proposals' final figures.
func (b *builder) finish() error {
	b.flush()
	if err := b.finishTokens(); err != nil {
		return err
	}
	for _, n := range b.timed {
		p := n.t.p
		id, _ := new(big.Int).SetString(p.ProposalID, 10)
		base := proposalStateData{
			ChainID: b.r.chainID, Governor: b.d.governorHex, ProposalID: p.ProposalID,
			BlockNumber: n.block, BlockHash: n.blockHash, State: p.State, Title: core.ProposalTitle(p.Description),
			Proposer: p.Proposer, Clock: p.Clock,
			VoteStart: strconv.FormatUint(p.VoteStart, 10), VoteEnd: strconv.FormatUint(p.VoteEnd, 10),
			ForVotes: p.ForVotes, AgainstVotes: p.AgainstVotes, AbstainVotes: p.AbstainVotes,
			Quorum: p.Quorum, QuorumReached: p.QuorumReached,
		}
		milestone := ""
		var data any = base
		switch n.typ {
		case core.TypeProposalActive:
			base.State = core.ProposalActive
			data, milestone = base, "active"
		case core.TypeProposalSucceeded, core.TypeProposalDefeated:
			base.State = strings.TrimPrefix(n.typ, "proposal.")
			data, milestone = base, "closed"
		case core.TypeProposalExpired:
			milestone = "expired"
			data = proposalExpiredData{proposalStateData: base, ETA: strconv.FormatUint(p.ETA, 10),
				GracePeriod: strconv.FormatUint(n.grace, 10)}
		case core.TypeProposalEndingSoon:
			base.State = core.ProposalActive
			milestone = "ending_soon:" + strconv.FormatInt(int64(n.lead.Seconds()), 10)
			d := proposalEndingSoonData{proposalStateData: base, LeadSeconds: int64(n.lead.Seconds()),
				SecondsLeft: int64(n.left), Estimated: n.estimated}
			if n.estimated {
				d.SecondsPerBlock = n.pace
			}
			d.EndsAt = n.at.Add(time.Duration(n.left * float64(time.Second))).UTC().Truncate(time.Second)
			data = d
		}
		raw, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("encode %s data: %w", n.typ, err)
		}
		note := &b.batch.Notifications[n.index]
		note.ID = TimedNotificationID(b.r.chainID, b.d.governor, id, milestone)
		note.OccurredAt = n.at
		note.Data = raw
	}
	return nil
}
