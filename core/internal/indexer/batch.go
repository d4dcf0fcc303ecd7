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
	Reason       string `json:"reason"`
	Params       string `json:"params,omitempty"`
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
	}
	return "other"
}

// tracked is a proposal being updated by a batch.
type tracked struct {
	p                     Proposal
	forV, against, abstan *big.Int
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

	proposals  map[string]*tracked // by proposal id; nil value: not in the store
	dirty      []string            // proposals changed in the current block
	block      uint64
	blockTime  time.Time
	blockTimes map[uint64]time.Time
}

func newBuilder(r *Runner, d *daoState, notifyFrom uint64) *builder {
	return &builder{
		r:          r,
		d:          d,
		notifyFrom: notifyFrom,
		lastChange: -1,
		batch:      Batch{DAO: d.dao.Slug, ChainID: r.chainID},
		proposals:  map[string]*tracked{},
		blockTimes: map[uint64]time.Time{},
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
	return nil
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
		b.batch.Proposals = append(b.batch.Proposals, t.p)
	}
	b.dirty = b.dirty[:0]
}

// quorumReached applies the governor's quorum rule to the tallies:
// OpenZeppelin's GovernorCountingSimple counts for and abstain votes,
// Bravo and Alpha count for votes only.
func (b *builder) quorumReached(t *tracked) bool {
	if t.p.Quorum == nil {
		return false
	}
	q := parseDec(*t.p.Quorum)
	if b.d.dao.Kind == core.KindOZGovernor {
		return q.Cmp(new(big.Int).Add(t.forV, t.abstan)) <= 0
	}
	return t.forV.Cmp(q) >= 0
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
	t := &tracked{p: p, forV: parseDec(p.ForVotes), against: parseDec(p.AgainstVotes), abstan: parseDec(p.AbstainVotes)}
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
		b.proposals[id] = &tracked{p: p, forV: new(big.Int), against: new(big.Int), abstan: new(big.Int)}
		b.touch(id)
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
	case "VoteCast", "VoteCastWithParams":
		typ = core.TypeVoteCast
		v := Vote{
			DAO: b.d.dao.Slug, ChainID: b.r.chainID, ProposalID: id, Voter: ev.voter.Hex(),
			Support: ev.support, Weight: ev.weight.String(), Reason: ev.reason,
			BlockNumber: l.BlockNumber, BlockHash: meta.BlockHash, TxHash: meta.TxHash, LogIndex: l.Index,
			CastAt: b.blockTime,
		}
		if ev.hasParams {
			v.Params = hexutil.Encode(ev.params)
		}
		b.batch.Votes = append(b.batch.Votes, v)
		t, err := b.proposal(ctx, id)
		if err != nil {
			return err
		}
		if t != nil {
			// A vote is only accepted while voting is open.
			b.implied(t, l, core.ProposalActive)
			switch ev.support {
			case 0:
				t.against.Add(t.against, ev.weight)
			case 1:
				t.forV.Add(t.forV, ev.weight)
			case 2:
				t.abstan.Add(t.abstan, ev.weight)
			}
			b.touch(id)
		}
		data = voteCastData{
			eventMeta: meta, Voter: v.Voter, Support: v.Support, SupportLabel: supportLabel(v.Support),
			Weight: v.Weight, Reason: v.Reason, Params: v.Params,
		}
	case "ProposalQueued":
		typ = core.TypeProposalQueued
		if err := b.update(ctx, id, func(t *tracked) {
			b.implied(t, l, core.ProposalSucceeded)
			t.p.State, t.p.ETA = core.ProposalQueued, clampUint64(ev.eta)
		}); err != nil {
			return err
		}
		data = proposalQueuedData{eventMeta: meta, ETA: ev.eta.String()}
	case "ProposalExecuted":
		typ = core.TypeProposalExecuted
		if err := b.update(ctx, id, func(t *tracked) {
			b.implied(t, l, core.ProposalSucceeded)
			t.p.State = core.ProposalExecuted
		}); err != nil {
			return err
		}
		data = meta
	case "ProposalCanceled":
		typ = core.TypeProposalCanceled
		if err := b.update(ctx, id, func(t *tracked) { t.p.State = core.ProposalCanceled }); err != nil {
			return err
		}
		data = meta
	case "ProposalExtended":
		typ = core.TypeProposalExtended
		if err := b.update(ctx, id, func(t *tracked) { t.p.VoteEnd = ev.extendedDeadline }); err != nil {
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
func (b *builder) update(ctx context.Context, id string, change func(*tracked)) error {
	t, err := b.proposal(ctx, id)
	if err != nil || t == nil {
		return err
	}
	change(t)
	b.touch(id)
	return nil
}
