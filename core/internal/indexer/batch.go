package indexer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/govgate/govgate/core"
)

// NotificationID is the deterministic id of the notification for the log at
// logIndex of transaction txHash on chain chainID: "evt_" and the first 32
// hex digits of SHA-256 over the chain id (8 bytes, big-endian), the
// transaction hash (32 bytes) and the log index (8 bytes, big-endian).
// Indexing the same log again (after a restart or a shallow reorg that
// keeps the transaction in place) yields the same id, which the store
// ignores.
func NotificationID(chainID uint64, txHash common.Hash, logIndex uint) string {
	var buf [8 + 32 + 8]byte
	binary.BigEndian.PutUint64(buf[:8], chainID)
	copy(buf[8:40], txHash[:])
	binary.BigEndian.PutUint64(buf[40:], uint64(logIndex))
	sum := sha256.Sum256(buf[:])
	return "evt_" + hex.EncodeToString(sum[:16])
}

// Notification data. Every uint256 of the event is a decimal string;
// addresses are EIP-55; bytes are 0x-hex; block numbers, log indexes and
// the chain id, which fit JSON numbers, are numbers.
type eventMeta struct {
	ChainID     uint64 `json:"chainId"`
	Governor    string `json:"governor"`
	ProposalID  string `json:"proposalId"`
	BlockNumber uint64 `json:"blockNumber"`
	BlockHash   string `json:"blockHash"`
	TxHash      string `json:"txHash"`
	LogIndex    uint   `json:"logIndex"`
}

type proposalCreatedData struct {
	eventMeta
	Proposer    string   `json:"proposer"`
	Targets     []string `json:"targets"`
	Values      []string `json:"values"`
	Signatures  []string `json:"signatures"`
	Calldatas   []string `json:"calldatas"`
	VoteStart   string   `json:"voteStart"`
	VoteEnd     string   `json:"voteEnd"`
	Description string   `json:"description"`
	// Actions are the calls decoded (core.Action), beside the raw
	// targets, values, signatures and calldatas that stay as they were.
	Actions []core.Action `json:"actions,omitempty"`
}

type voteCastData struct {
	eventMeta
	Voter        string `json:"voter"`
	Support      uint8  `json:"support"`
	SupportLabel string `json:"supportLabel"`
	Weight       string `json:"weight"`
	// ForWeight, AgainstWeight and AbstainWeight are how Weight counted:
	// all of it on Support's side, or a split vote's parts (support 255).
	ForWeight     string `json:"forWeight"`
	AgainstWeight string `json:"againstWeight"`
	AbstainWeight string `json:"abstainWeight"`
	Reason        string `json:"reason"`
	Params        string `json:"params,omitempty"`
}

// voteOverriddenData is vote.overridden: a delegator's OverrideVoteCast,
// with the VoteReduced of the same transaction when its delegate had voted
// (Delegate, DelegateSupport and ReducedWeight; null and "0" otherwise).
type voteOverriddenData struct {
	voteCastData
	Delegate        *string `json:"delegate"`
	DelegateSupport *uint8  `json:"delegateSupport"`
	ReducedWeight   string  `json:"reducedWeight"`
}

type proposalQueuedData struct {
	eventMeta
	ETA string `json:"eta"`
}

type proposalExtendedData struct {
	eventMeta
	ExtendedDeadline string `json:"extendedDeadline"`
}

func supportLabel(s uint8) string {
	switch s {
	case 0:
		return "against"
	case 1:
		return "for"
	case 2:
		return "abstain"
	case core.SupportFractional:
		return "fractional"
	}
	return "other"
}

// tracked is a proposal being updated by a batch.
type tracked struct {
	p                     Proposal
	forV, against, abstan *big.Int
	// base is the proposal as it stood before the batch (as stored, or as
	// created in it); revs index its revisions in batch.Proposals.
	base Proposal
	revs []int
	// crossings are the time-driven changes of state the batch found,
	// each at the first block where state() answered it.
	crossings []crossing
}

// crossing is a change of state that the clock made, at block.
type crossing struct {
	block uint64
	state string
}

func newTracked(p Proposal) *tracked {
	return &tracked{p: p, base: p, forV: parseDec(p.ForVotes), against: parseDec(p.AgainstVotes), abstan: parseDec(p.AbstainVotes)}
}

// asOf returns the proposal as it stood at the end of block: its last
// revision at or before it.
func (b *builder) asOf(t *tracked, block uint64) Proposal {
	for i := len(t.revs) - 1; i >= 0; i-- {
		if r := b.batch.Proposals[t.revs[i]]; r.UpdatedBlock <= block {
			return r
		}
	}
	return t.base
}

// reduction is a VoteReduced waiting for the OverrideVoteCast that follows
// it in the same transaction.
type reduction struct {
	tx       common.Hash
	proposal string
	delegate common.Address
	support  uint8
	weight   *big.Int
}

// builder turns one range of logs of one DAO into a Batch.
type builder struct {
	r     *Runner
	d     *daoState
	batch Batch
	// notifyFrom is the first block whose changes are pushed: below it,
	// proposals and votes are stored but no notification is.
	notifyFrom uint64
	// timed are the time-driven notifications of the batch, rendered by
	// finish once the proposals' tallies and quorum are final.
	timed []timedNote
	// tokenNotes are the batch's delegation notifications: index in
	// batch.Notifications, index in batch.TokenEvents.
	tokenNotes [][2]int
	// hexes memoizes EIP-55 addresses (builder.hex).
	hexes map[common.Address]string
	// lastChange is the index in batch.TokenEvents of the last
	// DelegateChanged, whose moved amount the DelegateVotesChanged of the
	// same transaction tell; -1 for none.
	lastChange int
	// reduced is the last VoteReduced, until its OverrideVoteCast.
	reduced *reduction
	// untimed is where in batch.TokenEvents the events without a
	// timepoint yet begin (stampTimepoints).
	untimed int

	proposals  map[string]*tracked // by proposal id; nil value: not in the store
	dirty      []string            // proposals changed in the current block
	block      uint64
	blockTime  time.Time
	blockTimes map[uint64]time.Time
	// blockHashes are the hashes of blocks whose time blockTimes holds
	// where known (stampOf).
	blockHashes map[uint64]string
}

func newBuilder(r *Runner, d *daoState, notifyFrom uint64) *builder {
	return &builder{
		r:           r,
		d:           d,
		notifyFrom:  notifyFrom,
		lastChange:  -1,
		batch:       Batch{DAO: d.dao.Slug, ChainID: r.chainID},
		proposals:   map[string]*tracked{},
		blockTimes:  map[uint64]time.Time{},
		blockHashes: map[uint64]string{},
	}
}

// add folds the logs of one range, in chain order, into the batch.
func (b *builder) add(ctx context.Context, logs []types.Log) error {
	var lastRef uint64
	for i := range logs {
		l := &logs[i]
		if l.Removed {
			continue
		}
		if l.BlockNumber != b.block || b.blockTime.IsZero() {
			b.flush()
			b.block = l.BlockNumber
			t, err := b.timeOf(ctx, l)
			if err != nil {
				return err
			}
			b.blockTime = t
			b.blockTimes[l.BlockNumber], b.blockHashes[l.BlockNumber] = t, l.BlockHash.Hex()
		}
		if l.BlockNumber != lastRef || len(b.batch.Blocks) == 0 {
			b.batch.Blocks = append(b.batch.Blocks, BlockRef{Number: l.BlockNumber, Hash: l.BlockHash.Hex()})
			lastRef = l.BlockNumber
		}
		if tok := b.d.info.token; l.Address == tok && tok != (common.Address{}) {
			b.applyToken(l)
			continue
		}
		if l.Address != b.d.governor {
			continue
		}
		ev, err := decodeLog(l)
		if err == errNotGovernorEvent {
			continue
		}
		if err != nil {
			// A governor that emits an undecodable event is misconfigured
			// (wrong address or kind); skipping it keeps the DAO moving.
			b.r.log.Warn("undecodable governor log", "dao", b.d.dao.Slug, "tx", l.TxHash, "log_index", l.Index, "err", err)
			continue
		}
		if err := b.apply(ctx, l, ev); err != nil {
			return err
		}
	}
	b.flush()
	return b.stampTimepoints(ctx)
}

// timeOf returns a log's block time: from the log itself where the node
// includes blockTimestamp (go-ethereum does), else from the block header.
func (b *builder) timeOf(ctx context.Context, l *types.Log) (time.Time, error) {
	if l.BlockTimestamp != 0 {
		return time.Unix(int64(l.BlockTimestamp), 0).UTC(), nil
	}
	if t, ok := b.blockTimes[l.BlockNumber]; ok {
		return t, nil
	}
	_, _, ts, err := b.r.chain.BlockStamp(ctx, new(big.Int).SetUint64(l.BlockNumber))
	if err != nil {
		return time.Time{}, fmt.Errorf("time of block %d: %w", l.BlockNumber, err)
	}
	t := time.Unix(int64(ts), 0).UTC()
	b.blockTimes[l.BlockNumber] = t
	return t, nil
}

// flush records a revision of every proposal changed in the current block.
func (b *builder) flush() {
	for _, id := range b.dirty {
		t := b.proposals[id]
		t.p.ForVotes, t.p.AgainstVotes, t.p.AbstainVotes = t.forV.String(), t.against.String(), t.abstan.String()
		t.p.QuorumReached = b.quorumReached(t)
		t.p.UpdatedBlock, t.p.UpdatedAt = b.block, b.blockTime
		t.revs = append(t.revs, len(b.batch.Proposals))
		b.batch.Proposals = append(b.batch.Proposals, t.p)
	}
	b.dirty = b.dirty[:0]
}

// quorumReached applies the governor's quorum rule to the tallies.
func (b *builder) quorumReached(t *tracked) bool {
	return b.quorumRule(t.p.Quorum, t.forV, t.abstan)
}

// quorumRule is the governor's rule: the quorum= of its COUNTING_MODE
// (for and abstain on OpenZeppelin's Simple, Fractional and Overridable
// modules), for votes only on Bravo and Alpha.
func (b *builder) quorumRule(quorum *string, forV, abstain *big.Int) bool {
	if quorum == nil {
		return false
	}
	q := parseDec(*quorum)
	counted := new(big.Int).Set(forV)
	if b.d.info.quorumAbstain {
		counted.Add(counted, abstain)
	}
	return counted.Cmp(q) >= 0
}

func (b *builder) touch(id string) {
	for _, d := range b.dirty {
		if d == id {
			return
		}
	}
	b.dirty = append(b.dirty, id)
}

// proposal returns the tracked proposal id, loading it from the store on
// first use; nil if the store does not have it (created before the DAO's
// start block).
func (b *builder) proposal(ctx context.Context, id string) (*tracked, error) {
	if t, ok := b.proposals[id]; ok {
		return t, nil
	}
	p, ok, err := b.r.store.Proposal(ctx, b.d.dao.Slug, id)
	if err != nil {
		return nil, fmt.Errorf("load proposal %s: %w", id, err)
	}
	if !ok {
		b.proposals[id] = nil
		return nil, nil
	}
	t := newTracked(p)
	b.proposals[id] = t
	return t, nil
}

func parseDec(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return new(big.Int)
	}
	return v
}

func (b *builder) apply(ctx context.Context, l *types.Log, ev *event) error {
	id := ev.proposalID.String()
	meta := eventMeta{
		ChainID:     b.r.chainID,
		Governor:    b.d.governorHex,
		ProposalID:  id,
		BlockNumber: l.BlockNumber,
		BlockHash:   l.BlockHash.Hex(),
		TxHash:      l.TxHash.Hex(),
		LogIndex:    l.Index,
	}
	var typ string
	var data any
	switch ev.name {
	case "ProposalCreated":
		typ = core.TypeProposalCreated
		p := Proposal{
			Clock:        b.d.info.clock,
			DAO:          b.d.dao.Slug,
			ChainID:      b.r.chainID,
			ProposalID:   id,
			Proposer:     ev.proposer.Hex(),
			Targets:      make([]string, len(ev.targets)),
			Values:       make([]string, len(ev.values)),
			Signatures:   append(make([]string, 0, len(ev.signatures)), ev.signatures...),
			Calldatas:    make([]string, len(ev.calldatas)),
			Description:  ev.description,
			VoteStart:    clampUint64(ev.voteStart),
			VoteEnd:      clampUint64(ev.voteEnd),
			State:        core.ProposalPending,
			CreatedBlock: l.BlockNumber,
			CreatedTx:    l.TxHash.Hex(),
			CreatedAt:    b.blockTime,
		}
		for i, a := range ev.targets {
			p.Targets[i] = a.Hex()
		}
		for i, v := range ev.values {
			p.Values[i] = v.String()
		}
		for i, c := range ev.calldatas {
			p.Calldatas[i] = hexutil.Encode(c)
		}
		b.proposals[id] = newTracked(p)
		b.touch(id)
		b.timeline(id, core.TimelineCreated, l.BlockNumber, b.blockTime, meta.TxHash)
		data = proposalCreatedData{
			eventMeta: meta, Proposer: p.Proposer, Targets: p.Targets, Values: p.Values,
			Signatures: p.Signatures, Calldatas: p.Calldatas,
			VoteStart: ev.voteStart.String(), VoteEnd: ev.voteEnd.String(), Description: ev.description,
		}
		if b.r.actions != nil && l.BlockNumber >= b.notifyFrom {
			// Decoded for the notification only: the store keeps the raw
			// calls, and the API decodes them as it serves them, with the
			// ABIs configured then.
			d := data.(proposalCreatedData)
			d.Actions = b.r.actions.Actions(p)
			data = d
		}
	case "VoteReduced":
		// Always followed, in the same transaction, by the
		// OverrideVoteCast that caused it, which carries it to receivers.
		b.reduced = &reduction{tx: l.TxHash, proposal: id, delegate: ev.voter, support: ev.support, weight: ev.weight}
		t, err := b.proposal(ctx, id)
		if err != nil || t == nil {
			return err
		}
		side := core.SplitVote(ev.support, ev.weight, nil)
		t.against.Sub(t.against, side.Against)
		t.forV.Sub(t.forV, side.For)
		t.abstan.Sub(t.abstan, side.Abstain)
		b.touch(id)
		return nil
	case "VoteCast", "VoteCastWithParams", "OverrideVoteCast":
		typ = core.TypeVoteCast
		sp := core.SplitVote(ev.support, ev.weight, ev.params)
		v := Vote{
			DAO: b.d.dao.Slug, ChainID: b.r.chainID, ProposalID: id, Voter: ev.voter.Hex(), Kind: core.VoteKindVote,
			Support: ev.support, Weight: ev.weight.String(),
			ForWeight: sp.For.String(), AgainstWeight: sp.Against.String(), AbstainWeight: sp.Abstain.String(),
			Reason:      ev.reason,
			BlockNumber: l.BlockNumber, BlockHash: meta.BlockHash, TxHash: meta.TxHash, LogIndex: l.Index,
			CastAt: b.blockTime,
		}
		if ev.hasParams {
			v.Params = hexutil.Encode(ev.params)
		}
		var over *voteOverriddenData
		if ev.name == "OverrideVoteCast" {
			typ, v.Kind = core.TypeVoteOverridden, core.VoteKindOverride
			over = &voteOverriddenData{ReducedWeight: "0"}
			if rd := b.reduced; rd != nil && rd.tx == l.TxHash && rd.proposal == id {
				d, sup := rd.delegate.Hex(), rd.support
				v.Delegate, v.DelegateSupport, v.ReducedWeight = d, &sup, rd.weight.String()
				over.Delegate, over.DelegateSupport, over.ReducedWeight = &d, &sup, v.ReducedWeight
			}
			b.reduced = nil
		}
		b.batch.Votes = append(b.batch.Votes, v)
		t, err := b.proposal(ctx, id)
		if err != nil {
			return err
		}
		if t != nil {
			// A vote is only accepted while voting is open.
			if err := b.implied(ctx, t, l, core.ProposalActive); err != nil {
				return err
			}
			t.against.Add(t.against, sp.Against)
			t.forV.Add(t.forV, sp.For)
			t.abstan.Add(t.abstan, sp.Abstain)
			b.touch(id)
		}
		cast := voteCastData{
			eventMeta: meta, Voter: v.Voter, Support: v.Support, SupportLabel: supportLabel(v.Support),
			Weight: v.Weight, ForWeight: v.ForWeight, AgainstWeight: v.AgainstWeight, AbstainWeight: v.AbstainWeight,
			Reason: v.Reason, Params: v.Params,
		}
		data = cast
		if over != nil {
			over.voteCastData = cast
			data = over
		}
	case "ProposalQueued":
		typ = core.TypeProposalQueued
		if err := b.update(ctx, id, func(t *tracked) error {
			if err := b.implied(ctx, t, l, core.ProposalSucceeded); err != nil {
				return err
			}
			t.p.State, t.p.ETA = core.ProposalQueued, clampUint64(ev.eta)
			b.timeline(id, core.TimelineQueued, l.BlockNumber, b.blockTime, meta.TxHash)
			return nil
		}); err != nil {
			return err
		}
		data = proposalQueuedData{eventMeta: meta, ETA: ev.eta.String()}
	case "ProposalExecuted":
		typ = core.TypeProposalExecuted
		if err := b.update(ctx, id, func(t *tracked) error {
			if err := b.implied(ctx, t, l, core.ProposalSucceeded); err != nil {
				return err
			}
			t.p.State = core.ProposalExecuted
			b.timeline(id, core.TimelineExecuted, l.BlockNumber, b.blockTime, meta.TxHash)
			return nil
		}); err != nil {
			return err
		}
		data = meta
	case "ProposalCanceled":
		typ = core.TypeProposalCanceled
		if err := b.update(ctx, id, func(t *tracked) error {
			t.p.State = core.ProposalCanceled
			b.timeline(id, core.TimelineCanceled, l.BlockNumber, b.blockTime, meta.TxHash)
			return nil
		}); err != nil {
			return err
		}
		data = meta
	case "ProposalExtended":
		typ = core.TypeProposalExtended
		if err := b.update(ctx, id, func(t *tracked) error {
			t.p.VoteEnd = ev.extendedDeadline
			b.timeline(id, core.TimelineExtended, l.BlockNumber, b.blockTime, meta.TxHash)
			return nil
		}); err != nil {
			return err
		}
		data = proposalExtendedData{eventMeta: meta, ExtendedDeadline: fmt.Sprint(ev.extendedDeadline)}
	default:
		return nil
	}
	b.r.metrics.event(b.d.dao.Slug, typ)
	if l.BlockNumber < b.notifyFrom {
		return nil // history: stored, not pushed
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s data: %w", typ, err)
	}
	b.batch.Notifications = append(b.batch.Notifications, core.Notification{
		ID:         NotificationID(b.r.chainID, l.TxHash, l.Index),
		Type:       typ,
		DAO:        b.d.dao.Slug,
		OccurredAt: b.blockTime,
		Data:       raw,
	})
	return nil
}

// update changes a known proposal; unknown proposals (created before the
// DAO's start block) are left alone, their events still notified.
func (b *builder) update(ctx context.Context, id string, change func(*tracked) error) error {
	t, err := b.proposal(ctx, id)
	if err != nil || t == nil {
		return err
	}
	if err := change(t); err != nil {
		return err
	}
	b.touch(id)
	return nil
}

// timeline records a step of a proposal's timeline.
func (b *builder) timeline(id, event string, block uint64, at time.Time, tx string) {
	b.batch.Timeline = append(b.batch.Timeline, core.TimelineEntry{
		DAO: b.d.dao.Slug, ProposalID: id, ChainID: b.r.chainID, Event: event, Block: block, Time: at, TxHash: tx,
	})
}
