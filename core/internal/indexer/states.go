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
// succeeded. Each change is placed at the first block where the governor's
// clock had passed the timepoint (crossingBlock), not at the event's.
func (b *builder) implied(ctx context.Context, t *tracked, l *types.Log, st string) error {
	if t.p.State == core.ProposalPending {
		at, err := b.crossingBlock(ctx, t, t.p.VoteStart, l.BlockNumber)
		if err != nil {
			return err
		}
		if err := b.transition(ctx, t, core.ProposalActive, at); err != nil {
			return err
		}
	}
	if st == core.ProposalSucceeded && t.p.State == core.ProposalActive {
		at, err := b.crossingBlock(ctx, t, t.p.VoteEnd, l.BlockNumber)
		if err != nil {
			return err
		}
		if err := b.transition(ctx, t, core.ProposalSucceeded, at); err != nil {
			return err
		}
	}
	b.touch(t.p.ProposalID)
	return nil
}

// transition moves a proposal to a state that the clock brought, at the
// first block where state() answered it: it records the change there
// (crossing, timeline) and emits the time-driven notification of the
// change. Opening voting reads the quorum at that block.
func (b *builder) transition(ctx context.Context, t *tracked, st string, block uint64) error {
	t.p.State = st
	b.touch(t.p.ProposalID)
	at, hash, err := b.stampOf(ctx, block)
	if err != nil {
		return err
	}
	t.crossings = append(t.crossings, crossing{block: block, state: st})
	// The notification and the timeline name this block, which may hold
	// no log: remember its hash too, so that a reorganisation's common
	// ancestor is found at or above it while it stands (and what names
	// it is not taken for orphaned).
	b.batch.Blocks = append(b.batch.Blocks, BlockRef{Number: block, Hash: hash})
	b.timeline(t.p.ProposalID, st, block, at, "")
	if st == core.ProposalActive && t.p.Quorum == nil {
		if err := b.readQuorum(ctx, t, block); err != nil {
			return err
		}
	}
	switch st {
	case core.ProposalActive:
		b.milestone(t, core.MilestoneActive, core.TypeProposalActive, block, hash, at)
	case core.ProposalSucceeded, core.ProposalDefeated:
		typ := core.TypeProposalSucceeded
		if st == core.ProposalDefeated {
			typ = core.TypeProposalDefeated
		}
		b.milestone(t, core.MilestoneClosed, typ, block, hash, at)
	case core.ProposalExpired:
		if n := b.milestone(t, core.MilestoneExpired, core.TypeProposalExpired, block, hash, at); n != nil {
			n.grace = b.d.info.grace
		}
	}
	return nil
}

// readQuorum reads a proposal's quorum at its snapshot, at block (where
// voting is open, so the snapshot has passed). A revert leaves it unread.
// A node that no longer serves that block's state (pruned) is asked at the
// confirmed head instead: quorum(snapshot) does not change once the
// snapshot has passed.
func (b *builder) readQuorum(ctx context.Context, t *tracked, block uint64) error {
	c := caller{r: b.r, d: b.d, governor: b.d.governor}
	q, err := c.quorum(ctx, t.p.VoteStart, block)
	if err != nil && !isRevert(err) && ctx.Err() == nil && isMissingState(err) {
		q, err = c.quorum(ctx, t.p.VoteStart, b.block)
	}
	switch {
	case err == nil:
		s := q.String()
		t.p.Quorum = &s
		b.touch(t.p.ProposalID)
	case !isRevert(err):
		return fmt.Errorf("proposal %s: %w", t.p.ProposalID, err)
	}
	return nil
}

// milestone emits a time-driven notification once per proposal: the bit
// in Milestones says it was emitted (or skipped as history).
func (b *builder) milestone(t *tracked, bit uint32, typ string, block uint64, hash string, at time.Time) *timedNote {
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
	b.timed = append(b.timed, timedNote{index: len(b.batch.Notifications) - 1, t: t, typ: typ, block: block, blockHash: hash, at: at})
	return &b.timed[len(b.timed)-1]
}

// settle brings the proposals whose state the clock can change up to date
// at block `to`, the confirmed head: it reads the governor's clock there,
// asks the governor where a timepoint was crossed, reads quorums once
// their snapshot has passed, and emits the time-driven notifications.
func (b *builder) settle(ctx context.Context, to uint64, toHash common.Hash, toTime uint64) error {
	open, err := b.r.store.OpenProposals(ctx, b.d.dao.Slug)
	if err != nil {
		return fmt.Errorf("open proposals: %w", err)
	}
	for _, p := range open {
		if _, ok := b.proposals[p.ProposalID]; !ok {
			b.proposals[p.ProposalID] = newTracked(p)
		}
	}
	b.flush()
	b.block, b.blockTime = to, time.Unix(int64(toTime), 0).UTC()
	b.blockHashes[to] = toHash.Hex()
	b.blockTimes[to] = b.blockTime
	info := b.d.info
	tracked := b.trackedInOrder()
	if len(tracked) == 0 {
		return nil
	}
	// The governor's own timepoint: never assumed to be the block number
	// or time (an L2 token's clock() may count layer-1 blocks).
	now, err := b.clockAt(ctx, to)
	if err != nil {
		return fmt.Errorf("clock at block %d: %w", to, err)
	}
	c := caller{r: b.r, d: b.d, governor: b.d.governor}
	for _, t := range tracked {
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
			if err := b.setState(ctx, t, st, to); err != nil {
				return err
			}
		}
		if p.Quorum == nil && now > p.VoteStart && p.State != core.ProposalCanceled && p.State != core.ProposalPending {
			if err := b.readQuorum(ctx, t, to); err != nil {
				return err
			}
		}
		if p.State == core.ProposalActive {
			if err := b.endingSoon(ctx, t, to, toHash.Hex(), toTime, now); err != nil {
				return err
			}
		}
	}
	b.d.settled = to
	return nil
}

// setState moves a proposal to the state the governor reported at block
// `to`, placing each change the clock made at the block where it happened.
func (b *builder) setState(ctx context.Context, t *tracked, st string, to uint64) error {
	old := t.p.State
	if st == old {
		return nil
	}
	switch st {
	case core.ProposalActive:
		at, err := b.crossingBlock(ctx, t, t.p.VoteStart, to)
		if err != nil {
			return err
		}
		return b.transition(ctx, t, st, at)
	case core.ProposalSucceeded, core.ProposalDefeated:
		if old == core.ProposalPending {
			// The whole voting window passed between two polls.
			at, err := b.crossingBlock(ctx, t, t.p.VoteStart, to)
			if err != nil {
				return err
			}
			if err := b.transition(ctx, t, core.ProposalActive, at); err != nil {
				return err
			}
		}
		at, err := b.crossingBlock(ctx, t, t.p.VoteEnd, to)
		if err != nil {
			return err
		}
		return b.transition(ctx, t, st, at)
	case core.ProposalExpired:
		at, err := b.expiryBlock(ctx, t, to)
		if err != nil {
			return err
		}
		return b.transition(ctx, t, st, at)
	}
	// A change no event of this batch explains (an event before the DAO's
	// start block): taken as seen.
	t.p.State = st
	b.touch(t.p.ProposalID)
	return nil
}

// endingSoon emits proposal.ending_soon for the shortest configured lead
// that the time left to voteEnd has come within, at the governor's clock
// now. Leads longer than the proposal's voting period do not apply to it.
func (b *builder) endingSoon(ctx context.Context, t *tracked, to uint64, hash string, toTime, now uint64) error {
	leads := b.r.cfg.EndingSoon
	if len(leads) == 0 {
		return nil
	}
	p := &t.p
	var left, period, pace float64
	estimated := p.Clock != core.ClockTimestamp
	if estimated {
		var err error
		if pace, err = b.secondsPerTick(ctx, to, toTime, now); err != nil {
			return err
		}
		left = float64(int64(p.VoteEnd)-int64(now)) * pace
		period = float64(int64(p.VoteEnd)-int64(p.VoteStart)) * pace
	} else {
		left = float64(int64(p.VoteEnd) - int64(now))
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
	if n := b.milestone(t, core.MilestoneEndingSoon<<hit, core.TypeProposalEndingSoon, to, hash, b.blockTime); n != nil {
		n.lead, n.left, n.estimated, n.pace = leads[hit], left, estimated, pace
	}
	return nil
}

// secondsPerTick estimates the seconds per unit of the governor's
// block-number clock over the 256 blocks before `to`, sampled again every
// 64 blocks: the chain's block time when the clock is the block number,
// the layer-1 block time when it counts layer-1 blocks.
func (b *builder) secondsPerTick(ctx context.Context, to, toTime, now uint64) (float64, error) {
	d := b.d
	if d.pace > 0 && to >= d.paceBlock && to < d.paceBlock+64 {
		return d.pace, nil
	}
	// The governor answers only from its deployment on; a pruned node
	// only for its recent blocks, hence the shorter samples after.
	var pace float64
	for _, want := range []uint64{256, 64, 8} {
		back := min(to-min(to, b.d.dao.StartBlock), want)
		if back == 0 {
			return 12, nil // no history yet: Ethereum's slot time
		}
		_, _, t0, err := b.r.chain.BlockStamp(ctx, new(big.Int).SetUint64(to-back))
		if err != nil {
			return 0, fmt.Errorf("block time sample: %w", err)
		}
		c0, err := b.clockAt(ctx, to-back)
		if err != nil {
			if isMissingState(err) {
				continue
			}
			return 0, fmt.Errorf("clock sample: %w", err)
		}
		pace = 1
		if now > c0 && toTime > t0 {
			pace = float64(toTime-t0) / float64(now-c0)
		}
		break
	}
	if pace == 0 {
		return 12, nil // no past clock served: Ethereum's slot time
	}
	d.pace, d.paceBlock = pace, to
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
	b.recordCrossings()
	for _, n := range b.timed {
		// The proposal as the governor saw it at the block the
		// notification names, not as it stands at the batch's end.
		p := b.asOf(n.t, n.block)
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
	// Revisions in block order: the last one written is the row.
	sort.SliceStable(b.batch.Proposals, func(i, j int) bool {
		return b.batch.Proposals[i].UpdatedBlock < b.batch.Proposals[j].UpdatedBlock
	})
	b.batch.Blocks = mergeRefs(nil, b.batch.Blocks)
	return nil
}

// recordCrossings adds a revision at each block where the clock changed a
// proposal's state and no revision of the batch stands: the proposal as it
// was at the end of that block, in its new state, so that the revision and
// the notification that names the block tell what state() and the tallies
// were there.
func (b *builder) recordCrossings() {
	for _, t := range b.trackedInOrder() {
		for _, c := range t.crossings {
			have := false
			for _, i := range t.revs {
				if b.batch.Proposals[i].UpdatedBlock == c.block {
					have = true
				}
			}
			if have {
				continue
			}
			r := b.asOf(t, c.block)
			r.State, r.UpdatedBlock = c.state, c.block
			r.UpdatedAt = b.blockTimes[c.block]
			if r.Quorum == nil && c.state != core.ProposalPending {
				r.Quorum = t.p.Quorum
			}
			r.QuorumReached = b.quorumRule(r.Quorum, parseDec(r.ForVotes), parseDec(r.AbstainVotes))
			r.Milestones = t.p.Milestones
			r.Clock = t.p.Clock
			t.revs = append(t.revs, len(b.batch.Proposals))
			b.batch.Proposals = append(b.batch.Proposals, r)
			// asOf reads t.revs in block order.
			sort.SliceStable(t.revs, func(i, j int) bool {
				return b.batch.Proposals[t.revs[i]].UpdatedBlock < b.batch.Proposals[t.revs[j]].UpdatedBlock
			})
		}
	}
}
