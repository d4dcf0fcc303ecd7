package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/store"
)

// recordingStore is a real store that remembers the DAOs' parts of the
// batches written through it, so that a test can see how the indexer cut
// its work.
type recordingStore struct {
	indexer.Store
	mu      sync.Mutex
	batches []core.IndexBatch
}

func (s *recordingStore) ApplyBatches(ctx context.Context, b core.ChainBatch) ([]string, error) {
	dropped, err := s.Store.ApplyBatches(ctx, b)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	for _, p := range b.DAOs {
		if !slices.Contains(dropped, p.DAO) {
			s.batches = append(s.batches, p)
		}
	}
	s.mu.Unlock()
	return dropped, nil
}

// since returns the batches of dao written from the n-th batch on.
func (s *recordingStore) since(n int, dao string) []core.IndexBatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []core.IndexBatch
	for _, b := range s.batches[n:] {
		if b.DAO == dao {
			out = append(out, b)
		}
	}
	return out
}

func (s *recordingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.batches)
}

// timedLane is one store that indexes the chain, with the runner of the
// moment: a restart replaces it with a new runner on the same store.
type timedLane struct {
	name string
	st   *store.Store
	rec  *recordingStore
	r    *indexer.Runner
	api  *httptest.Server
}

// governorEventSigs are the topics of the governor events that a timeline
// names with their transaction (OpenZeppelin 5.x's declarations).
var governorEventSigs = map[common.Hash]string{
	crypto.Keccak256Hash([]byte("ProposalCreated(uint256,address,address[],uint256[],string[],bytes[],uint256,uint256,string)")): core.TimelineCreated,
	crypto.Keccak256Hash([]byte("ProposalQueued(uint256,uint256)")):                                                              core.TimelineQueued,
	crypto.Keccak256Hash([]byte("ProposalExecuted(uint256)")):                                                                    core.TimelineExecuted,
	crypto.Keccak256Hash([]byte("ProposalCanceled(uint256)")):                                                                    core.TimelineCanceled,
	crypto.Keccak256Hash([]byte("ProposalExtended(uint256,uint64)")):                                                             core.TimelineExtended,
}

// TestTimedPayloadsTrueAtTheirBlock walks proposals on five governors (the
// block clock, the offset clock of an L2 token, the timestamp clock, the
// fractional and the overridable counting modules) through their opening,
// several votes in later blocks, their close, queue and execution, and
// indexes it two ways on both stores: once with the opening, the votes
// and the close in ONE batch of a runner started after the proposal was
// indexed; once across a restart, a new runner on the same store taking
// over after the opening and the first vote. Each time, every time-driven
// notification's data (state, tallies, quorum, quorumReached) and every
// revision the batches wrote equal what state(), proposalVotes() and
// quorum() answer at the block they name; each time-driven notification
// comes once; the served timeline's blocks and transactions are the
// governor's events' and the blocks where state() changed, and the
// statistics add up to the tallies.
//
// Every block compared lies among the last 128, whose state the simulated
// node keeps (go-ethereum's TriesInMemory): each proposal's walk is checked
// right after it is indexed, and a block the node no longer serves fails
// the test rather than being skipped.
func TestTimedPayloadsTrueAtTheirBlock(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Logger: quiet})
	gw := newGW(t, c)
	deps := []*devchain.Deployment{c.OZ, c.OZOffset, c.OZTime, c.OZFrac, c.OZOverride}
	head, err := c.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var daos []core.DAO
	for _, d := range deps {
		dao := d.DAO()
		from := head.Number.Uint64() + 1 // push what the walks do
		dao.NotifyFromBlock = &from
		daos = append(daos, dao)
	}

	var lanes []*timedLane
	for _, b := range storetest.Backends() {
		st := storetest.Open(t, b.NewDatabase(t), storetest.NewBox(t), store.Options{})
		api := serveAPI(t, daos, httpapi.ProposalRoutes(st, core.FixedDAOs(daos), quiet))
		lanes = append(lanes, &timedLane{name: b.Name, st: st, rec: &recordingStore{Store: st}, api: api})
	}
	// restart gives every lane a new runner on its store, as a new
	// process would have: nothing of the old one's caches carries over.
	restart := func() {
		t.Helper()
		for _, l := range lanes {
			r, err := indexer.NewRunner(gw, l.rec, indexer.NewLocalLocker(), devchain.ChainID, 0, daos, indexer.Config{}, indexer.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			l.r = r
		}
	}
	index := func() {
		t.Helper()
		for _, l := range lanes {
			if err := l.r.Sync(ctx); err != nil {
				t.Fatalf("%s: %v", l.name, err)
			}
		}
	}
	restart()
	index()

	round := uint64(0)
	for _, d := range deps {
		for _, oneBatch := range []bool{true, false} {
			name := d.Slug + "/across a restart"
			if oneBatch {
				name = d.Slug + "/in one batch"
			}
			t.Run(name, func(t *testing.T) {
				round++
				p, err := c.Propose(ctx, d, 0, fmt.Sprintf("# Timed walk %d on %s\n\nStores %d in the Box.", round, d.Slug, 7000+round), 7000+round)
				if err != nil {
					t.Fatal(err)
				}
				index() // the proposal is stored, pending
				marks := map[string]int{}
				for _, l := range lanes {
					marks[l.name] = l.rec.count()
				}
				if oneBatch {
					restart() // the runner that indexes the walk starts with it
				}
				if err := c.OpenVoting(ctx, p); err != nil {
					t.Fatal(err)
				}
				votes := walkVotes(t, c, p, true)
				if !oneBatch {
					index()
					restart()
				}
				votes += walkVotes(t, c, p, false)
				if err := c.CloseVoting(ctx, p); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Queue(ctx, p); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Execute(ctx, p); err != nil {
					t.Fatal(err)
				}
				index()
				for _, l := range lanes {
					batches := l.rec.since(marks[l.name], d.Slug)
					if oneBatch {
						if len(batches) != 1 {
							t.Fatalf("%s: the walk took %d batches, want one", l.name, len(batches))
						}
						kinds := map[string]int{}
						for _, n := range batches[0].Notifications {
							kinds[n.Type]++
						}
						if kinds[core.TypeProposalActive] != 1 || kinds[core.TypeProposalSucceeded] != 1 || kinds[core.TypeVoteCast]+kinds[core.TypeVoteOverridden] != votes {
							t.Fatalf("%s: the batch has %v, want the opening, %d votes and the close", l.name, kinds, votes)
						}
					}
					checkWalk(t, c, gw, d, p, l, batches)
				}
			})
		}
	}
}

// walkVotes casts the walk's votes on p, each in a block of its own: the
// first vote (first) or the later ones. It returns how many vote
// notifications they make. The sides always pass the proposal.
func walkVotes(t *testing.T, c *devchain.Chain, p *devchain.Proposal, first bool) int {
	t.Helper()
	ctx := context.Background()
	tok := func(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e18)) }
	var err error
	n := 0
	cast := func(f func() error) {
		if err == nil {
			err = f()
			n++
		}
	}
	vote := func(voter int, support uint8) {
		cast(func() error { _, err := c.Vote(ctx, p, voter, support, ""); return err })
	}
	switch {
	case p.DAO == c.OZFrac && first:
		// A partial split vote, its rest later.
		cast(func() error {
			_, err := c.VoteFractional(ctx, p, 1, tok(10), tok(20), tok(5), "a first part")
			return err
		})
	case p.DAO == c.OZFrac:
		cast(func() error {
			_, err := c.VoteFractional(ctx, p, 1, tok(0), tok(30), tok(0), "the rest, later")
			return err
		})
		vote(2, devchain.For)
		cast(func() error { _, err := c.VoteFractional(ctx, p, 3, tok(1000), tok(0), tok(2000), ""); return err })
	case p.DAO == c.OZOverride && first:
		vote(0, devchain.For) // with the weight of its delegators 4 and 5
	case p.DAO == c.OZOverride:
		cast(func() error { _, err := c.OverrideVote(ctx, p, 4, devchain.Against, "not with my tokens"); return err })
		vote(1, devchain.Abstain)
		cast(func() error { _, err := c.OverrideVote(ctx, p, 5, devchain.For, ""); return err })
	case first:
		vote(1, devchain.For)
	default:
		vote(2, devchain.Against)
		vote(3, devchain.For)
		vote(4, devchain.Abstain)
	}
	if err != nil {
		t.Fatalf("votes on %s: %v", p.DAO.Slug, err)
	}
	return n
}

// checkWalk checks what one lane indexed of p's walk against the governor.
func checkWalk(t *testing.T, c *devchain.Chain, gw *chain.Gateway, d *devchain.Deployment, p *devchain.Proposal, l *timedLane, batches []core.IndexBatch) {
	t.Helper()
	ctx := context.Background()
	id := p.ID.String()
	at := func(block uint64) oracle {
		if !served(gw, d, block) {
			t.Fatalf("%s: block %d is no longer served: the walk must stay within the node's recent states", l.name, block)
		}
		return oracle{t: t, gw: gw, block: new(big.Int).SetUint64(block)}
	}
	same := func(a, b truth) bool {
		return fmt.Sprint(a.state, a.forV, a.against, a.abstain, deref(a.quorum)) == fmt.Sprint(b.state, b.forV, b.against, b.abstain, deref(b.quorum))
	}
	reached := func(tr truth) bool {
		if tr.quorum == nil {
			return false
		}
		q, _ := new(big.Int).SetString(*tr.quorum, 10)
		counted, _ := new(big.Int).SetString(tr.forV, 10)
		abstain, _ := new(big.Int).SetString(tr.abstain, 10)
		return counted.Add(counted, abstain).Cmp(q) >= 0 // OpenZeppelin's quorum=for,abstain
	}

	// Every revision the batches wrote is the proposal as the governor saw
	// it at the end of the block it names.
	revisions := 0
	for _, b := range batches {
		for _, r := range b.Proposals {
			if r.ProposalID != id {
				continue
			}
			revisions++
			tr := at(r.UpdatedBlock).truth(d, p.ID, r.VoteStart)
			got := truth{state: r.State, forV: r.ForVotes, against: r.AgainstVotes, abstain: r.AbstainVotes, quorum: r.Quorum}
			if !same(got, tr) || r.QuorumReached != reached(tr) {
				t.Errorf("%s: revision at block %d:\n written  %+v quorum %s reached %v\n contract %+v quorum %s reached %v",
					l.name, r.UpdatedBlock, got, deref(got.quorum), r.QuorumReached, tr, deref(tr.quorum), reached(tr))
			}
		}
	}
	if revisions == 0 {
		t.Fatalf("%s: no revision of the proposal written", l.name)
	}

	// Every time-driven notification, once, true at its block, which is
	// where state() changed.
	ns, err := l.st.ListNotifications(ctx, core.NotificationFilter{DAO: d.Slug, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	once := map[string]int{}
	for _, n := range ns {
		var data struct {
			ProposalID, State, ForVotes, AgainstVotes, AbstainVotes string
			BlockNumber                                             uint64
			Quorum                                                  *string
			QuorumReached                                           bool
			VoteStart                                               string
		}
		if err := json.Unmarshal(n.Data, &data); err != nil {
			t.Fatal(err)
		}
		if data.ProposalID != id {
			continue
		}
		switch n.Type {
		case core.TypeProposalActive, core.TypeProposalSucceeded, core.TypeProposalDefeated, core.TypeProposalExpired, core.TypeProposalEndingSoon:
		default:
			continue
		}
		once[n.Type]++
		tr := at(data.BlockNumber).truth(d, p.ID, p.VoteStart)
		got := truth{state: data.State, forV: data.ForVotes, against: data.AgainstVotes, abstain: data.AbstainVotes, quorum: data.Quorum}
		if !same(got, tr) || data.QuorumReached != reached(tr) {
			t.Errorf("%s: %s at block %d:\n payload  %+v quorum %s reached %v\n contract %+v quorum %s reached %v",
				l.name, n.Type, data.BlockNumber, got, deref(got.quorum), data.QuorumReached, tr, deref(tr.quorum), reached(tr))
		}
		if n.Type != core.TypeProposalEndingSoon {
			if prev := at(data.BlockNumber-1).truth(d, p.ID, p.VoteStart); prev.state == tr.state {
				t.Errorf("%s: %s names block %d, but state() was already %s at block %d", l.name, n.Type, data.BlockNumber, tr.state, data.BlockNumber-1)
			}
		}
	}
	for _, typ := range []string{core.TypeProposalActive, core.TypeProposalSucceeded} {
		if once[typ] != 1 {
			t.Errorf("%s: %d %s notifications, want one (all: %v)", l.name, once[typ], typ, once)
		}
	}

	// The timeline: the governor's events with their blocks and
	// transactions, and the clock's changes at the blocks where state()
	// answered them.
	var served struct {
		Proposal   core.Proposal
		Timeline   []core.TimelineEntry
		Statistics core.VoteStats
	}
	getJSON(t, l.api.URL+"/"+d.Slug+"/proposals/"+id, &served)
	logs, err := gw.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: p.Receipt.BlockNumber, Addresses: []common.Address{d.Governor}})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, lg := range logs {
		ev, ok := governorEventSigs[lg.Topics[0]]
		if !ok {
			continue
		}
		pid := new(big.Int)
		if ev == core.TimelineExtended {
			pid.SetBytes(lg.Topics[1].Bytes())
		} else {
			pid.SetBytes(lg.Data[:32])
		}
		if pid.Cmp(p.ID) == 0 {
			want = append(want, fmt.Sprint(ev, " ", lg.BlockNumber, " ", lg.TxHash.Hex()))
		}
	}
	var got, clocked []string
	for i, e := range served.Timeline {
		if i > 0 && e.Block < served.Timeline[i-1].Block {
			t.Errorf("%s: timeline out of chain order: %+v", l.name, served.Timeline)
		}
		clocked = append(clocked, e.Event)
		if e.TxHash != "" {
			got = append(got, fmt.Sprint(e.Event, " ", e.Block, " ", e.TxHash))
			continue
		}
		if st := at(e.Block).truth(d, p.ID, p.VoteStart).state; st != e.Event {
			t.Errorf("%s: timeline %s at block %d, where state() is %s", l.name, e.Event, e.Block, st)
		}
		if st := at(e.Block-1).truth(d, p.ID, p.VoteStart).state; st == e.Event {
			t.Errorf("%s: timeline %s at block %d, but state() was %s a block before", l.name, e.Event, e.Block, st)
		}
		hdr, err := c.Client().HeaderByNumber(ctx, new(big.Int).SetUint64(e.Block))
		if err != nil || hdr.Time != uint64(e.Time.Unix()) {
			t.Errorf("%s: timeline %s at block %d, time %s: the block's header %v, %v", l.name, e.Event, e.Block, e.Time, hdr, err)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: the timeline's events\n %v\nthe governor's\n %v", l.name, got, want)
	}
	if wantSteps := []string{core.TimelineCreated, core.TimelineActive, core.TimelineSucceeded, core.TimelineQueued, core.TimelineExecuted}; !slices.Equal(clocked, wantSteps) {
		t.Errorf("%s: timeline %v, want %v", l.name, clocked, wantSteps)
	}
	st, pr := served.Statistics, served.Proposal
	if st.ForWeight != pr.ForVotes || st.AgainstWeight != pr.AgainstVotes || st.AbstainWeight != pr.AbstainVotes {
		t.Errorf("%s: statistics %s/%s/%s, tallies %s/%s/%s", l.name, st.ForWeight, st.AgainstWeight, st.AbstainWeight, pr.ForVotes, pr.AgainstVotes, pr.AbstainVotes)
	}
}
