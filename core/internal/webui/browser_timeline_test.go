package webui

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/govgate/govgate/core"
)

// TestBrowserProposalTimeline shows, in Chromium, an executed proposal of
// a governor with fractional and overridable counting: its timeline (each
// event with its block, time and transaction, the clock's changes marked
// as such), its vote statistics (voters and weight per side, each side's
// share, the share of quorum, the turnout against the power delegated at
// the snapshot), and its votes with a split vote's parts and an override
// with the delegate it took weight from. The store computes the
// statistics from the votes; the page must show what it computed. With
// GOVGATE_SCREENSHOTS=1 it takes docs/screenshots/proposal-timeline.png.
func TestBrowserProposalTimeline(t *testing.T) {
	tb := newTab(t)
	s := newStack(t, true)
	shots := tb.screenshots()
	e18 := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	tok := func(n int64) string { return new(big.Int).Mul(big.NewInt(n), e18).String() }
	hash := func(b byte) string { return "0x" + strings.Repeat(fmt.Sprintf("%02x", b), 32) }
	const (
		id       = "5343"
		delegate = "0xF92F185AbD9E00F56cb11B0b709029633d1E37B4"
		splitter = "0x2B1Ad6184a6B0fac06bD225ed37C2AbC04415fF4"
		override = "0x71C7656EC7ab88b098defB751B7401B5f6d8976F"
		abstainr = "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E"
		whale    = "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"
	)
	created := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	blockTime := func(n uint64) time.Time { return created.Add(time.Duration(n-21873990) * 12 * time.Second) }
	quorum := tok(3_000_000)
	p := core.Proposal{DAO: "arbitrum", ChainID: 42161, ProposalID: id, Proposer: delegate,
		Targets: []string{whale}, Values: []string{"0"}, Signatures: []string{""},
		Calldatas:   []string{"0xa9059cbb000000000000000000000000e2388f22cf5e328c197d6530663809cc0f2e3b7000000000000000000000000000000000000000000000d3c21bcecceda1000000"},
		Description: "# [AIP-7] Fund the security council\n\nSends 1M to the council's Safe.", VoteStart: 21874000, VoteEnd: 21874100,
		Clock: core.ClockBlockNumber, State: core.ProposalExecuted, Quorum: &quorum, QuorumReached: true,
		ForVotes: tok(2_980_000), AgainstVotes: tok(270_000), AbstainVotes: tok(350_000), ETA: uint64(blockTime(21874160).Unix()),
		CreatedBlock: 21873990, CreatedTx: hash(0xa1), CreatedAt: created, UpdatedBlock: 21874160, UpdatedAt: blockTime(21874160)}
	vote := func(i byte, voter string, support uint8, weight, params string) core.Vote {
		n := uint64(21874010 + 10*uint64(i))
		return core.Vote{DAO: "arbitrum", ChainID: 42161, ProposalID: id, Voter: voter, Kind: core.VoteKindVote, Support: support,
			Weight: weight, Params: params, BlockNumber: n, BlockHash: hash(0xb0 + i), TxHash: hash(0xc0 + i), LogIndex: uint(i), CastAt: blockTime(n)}
	}
	part := func(n int64) string {
		b := make([]byte, 16)
		new(big.Int).Mul(big.NewInt(n), e18).FillBytes(b)
		return fmt.Sprintf("%x", b)
	}
	split := vote(2, splitter, core.SupportFractional, tok(800_000), "0x"+part(150_000)+part(600_000)+part(50_000))
	split.Reason = "Most for; the rest split by our members' wishes."
	over := vote(3, override, 0, tok(120_000), "")
	forSide := uint8(1)
	over.Kind, over.Delegate, over.DelegateSupport, over.ReducedWeight, over.Reason = core.VoteKindOverride, delegate, &forSide, tok(120_000), "Not with my tokens."
	entry := func(ev string, n uint64, tx string) core.TimelineEntry {
		return core.TimelineEntry{DAO: "arbitrum", ProposalID: id, ChainID: 42161, Event: ev, Block: n, Time: blockTime(n), TxHash: tx}
	}
	power := func(i byte, who string, votes string) core.TokenEvent {
		return core.TokenEvent{DAO: "arbitrum", ChainID: 42161, Token: whale, Kind: core.TypeDelegateVotesChanged, BlockNumber: 21870000 + uint64(i),
			BlockHash: hash(0xd0 + i), TxHash: hash(0xe0 + i), LogIndex: uint(i), At: created.Add(-time.Hour), Delegate: who, PreviousVotes: "0", NewVotes: votes}
	}
	b := core.IndexBatch{DAO: "arbitrum", ChainID: 42161, Cursor: core.Cursor{Block: 21874160, Hash: hash(0xee)},
		TokenEvents: []core.TokenEvent{power(0, delegate, tok(2_500_000)), power(1, splitter, tok(800_000)), power(2, abstainr, tok(300_000)), power(3, whale, tok(4_400_000))},
		Proposals:   []core.Proposal{p},
		Votes:       []core.Vote{vote(1, delegate, 1, tok(2_500_000), ""), split, over, vote(4, abstainr, 2, tok(300_000), "")},
		Timeline: []core.TimelineEntry{entry(core.TimelineCreated, 21873990, hash(0xa1)), entry(core.TimelineActive, 21874001, ""),
			entry(core.TimelineSucceeded, 21874101, ""), entry(core.TimelineQueued, 21874110, hash(0xa2)), entry(core.TimelineExecuted, 21874160, hash(0xa3))}}
	if err := s.st.ApplyBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}

	tb.signIn(s.srv.URL, testToken)
	tb.do("proposal", chromedp.Navigate(s.srv.URL+"/admin/ui/proposals/arbitrum/"+id), chromedp.WaitVisible(chromedp.ID("timeline")))

	// The timeline: five steps in chain order, the clock's without a
	// transaction.
	rows := func(css string) []string {
		got, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(`+"`"+css+"`"+`)].map(r => r.innerText.replace(/\s+/g, " ").trim())`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	steps := rows("#timeline tbody tr")
	want := []struct{ label, block, tx string }{
		{"Proposed", "#21873990", "0xa1a1a1a1"},
		{"Voting opened", "#21874001", "none: by the clock"},
		{"Voting closed: succeeded", "#21874101", "none: by the clock"},
		{"Queued in the timelock", "#21874110", "0xa2a2a2a2"},
		{"Executed", "#21874160", "0xa3a3a3a3"},
	}
	if len(steps) != len(want) {
		t.Fatalf("%d timeline rows, want %d: %q", len(steps), len(want), steps)
	}
	for i, w := range want {
		if !strings.Contains(steps[i], w.label) || !strings.Contains(steps[i], w.block) || !strings.Contains(steps[i], w.tx) {
			t.Errorf("timeline row %d %q, want %s at %s, %s", i, steps[i], w.label, w.block, w.tx)
		}
	}
	if full, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.querySelector("#timeline tbody tr:last-child .mono").title`)); err != nil || full != hash(0xa3) {
		t.Errorf("the execution's full hash in its tooltip: %q (%v)", full, err)
	}
	if when, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.querySelector("#timeline tbody tr:nth-child(2) time").getAttribute("datetime")`)); err != nil || !strings.HasPrefix(when, blockTime(21874001).Format("2006-01-02T15:04:05")) {
		t.Errorf("voting opened at %q (%v), want the block's time %s", when, err, blockTime(21874001))
	}

	// The statistics, as the store counted them: the delegate's for
	// vote less the override, the split on its three sides.
	cells, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#statistics tbody tr")].map(r => [...r.cells].map(c => c.innerText.replace(/\s+/g, " ").trim()).join(" | "))`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"✓ For | 2 | 2.98M | 82.8%", "✕ Against | 2 | 270K | 7.5%", "– Abstain | 2 | 350K | 9.7%"}; strings.Join(cells, "\n") != strings.Join(want, "\n") {
		t.Errorf("statistics rows\n%s\nwant\n%s", strings.Join(cells, "\n"), strings.Join(want, "\n"))
	}
	tb.wantText("#statistics", "4 voters", "3.6M", "111% of the votes needed", "45%", "of the 8M delegated at the snapshot")

	// The votes: the split's parts, the override and whom it overrode.
	tb.wantText("#votes", "Split", "For 600K", "Against 150K", "Abstain 50K", "override", "in place of delegate", "0xF92F…37B4", "whose for vote lost 120K")
	if n, err := chromedp.Run(tb.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#votes .vote-override").length`)); err != nil || n != 1 {
		t.Errorf("%d override marks (%v), want 1", n, err)
	}
	if shots {
		tb.shot("proposal-timeline", "#votes")
	}
}
