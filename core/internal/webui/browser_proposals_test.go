package webui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/govgate/govgate/core"
)

// TestBrowserProposals goes through the proposal pages in Chromium on the
// in-process stack: the real REST API on a real store with proposals in
// every state, and the contract's health snapshots (ENS backfilling). With
// GOVGATE_SCREENSHOTS=1 it also takes docs/screenshots/proposals.png,
// proposals-dark.png, proposal.png and voting-now.png, from this seeded data, which
// shows a proposal in each of the eight states at once.
func TestBrowserProposals(t *testing.T) {
	tb := newTab(t)
	s := newStack(t, true)
	s.seed(t)
	s.seedProposals(t)
	s.ui.perPage = 5
	base := s.srv.URL
	shots := tb.screenshots()
	tb.signIn(base, testToken)

	// The overview: every DAO's active proposals, with time left against
	// each chain's clock, and ENS's backfill.
	tb.wantText("#voting-now", "Deploy Uniswap v4 on Unichain", "[EP 6.1] Fund the Public Goods working group", "[Constitutional] Upgrade the ArbOS version",
		"≈ 6 h left", "at an assumed 12 s a block", "≈ 24 h 18 min left", "at 12.5 s a block, measured", "2 h 30 min left", "Quorum reached", "36% of quorum")
	if got := tb.text("#voting-now tbody"); strings.Contains(got, "Create a Unichain security council") {
		t.Fatalf("a pending proposal is in Voting now:\n%s", got)
	}
	tb.wantText(`[data-dao="ens"] .backfill`, "75%", "655,732 of 874,310 blocks", "412.5 events/s", "1,480 blocks/s", "about 2 min left")
	tb.wantText(`[data-dao="ens"]`, "Notify from", "#21874311", "history not pushed")
	if got := tb.text(`[data-dao="uniswap"]`); strings.Contains(got, "Backfill") || !strings.Contains(got, "every block") {
		t.Fatalf("uniswap is at the head, without a backfill:\n%s", got)
	}
	progress, err := chromedp.Run(tb.ctx, chromedp.Evaluate[float64](`document.querySelector('[data-dao="ens"] .backfill progress').position`))
	if err != nil || progress < 0.74 || progress > 0.76 {
		t.Fatalf("backfill progress bar at %v (%v), want 0.75", progress, err)
	}
	if shots {
		tb.shot("voting-now", "#voting-now-section")
	}

	// From ENS's card to its proposals.
	tb.do("ENS proposals", chromedp.Click(chromedp.CSS(`[data-dao="ens"] .card-link`)), chromedp.WaitVisible(chromedp.ID("proposals")))
	tb.waitLocation("dao=ens")
	tb.wantText("h1", "ENS proposals")
	tb.wantText("#proposals", "[EP 6.1] Fund the Public Goods working group", "[EP 5.28] Renew the ENS Labs stream", "Quorum reached", "1.5M of 1M (for + abstain)")

	// The navigation's Proposals link lists every DAO's; the DAO filter
	// narrows it to one.
	tb.do("every DAO", chromedp.Click(chromedp.CSS(`nav[aria-label="Main"] a[href="/admin/ui/proposals"]`)), chromedp.WaitVisible(chromedp.ID("proposals")))
	tb.wantText("#proposals", "Create a Unichain security council", "[Non-constitutional] Gaming catalyst programme, round 2")
	tb.scripted()
	tb.do("pick uniswap", chromedp.SetValue(chromedp.ID("p-dao"), "uniswap"))
	tb.waitLocation("dao=uniswap")
	tb.do("uniswap's proposals", chromedp.WaitVisible(chromedp.ID("proposals")))
	if got := tb.text("#proposals"); strings.Contains(got, "ENS") || strings.Contains(got, "Arbitrum") {
		t.Fatalf("the DAO filter kept other DAOs:\n%s", got)
	}
	// Newest first, five to a page: pending, active, queued, executed, defeated.
	tb.wantText("#proposals", "Create a Unichain security council", "in ≈ 1 h", "Deploy Uniswap v4 on Unichain", "≈ 6 h left",
		"1800 blocks to #21876109, at an assumed 12 s a block", "executable in 26 h 30 min", "30% of quorum", "12M of 40M (for votes)")
	states := func() string {
		s, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#proposals > li")].map((li) => li.dataset.state + "=" + li.querySelector(".pstate").textContent.replace(/\s+/g, " ").trim()).join(",")`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := states(); got != "pending=◷ Pending,active=● Active,queued=◔ Queued,executed=✔ Executed,defeated=✕ Defeated" {
		t.Fatalf("first page: %s", got)
	}
	// The quorum bar is drawn to scale: the defeated proposal's for votes
	// are 30% of its quorum; the active one's pass it, and the bar is full.
	ratio := func(id string) float64 {
		r, err := chromedp.Run(tb.ctx, chromedp.Evaluate[float64](`(() => {
			const q = document.querySelector('[data-id="uniswap/`+id+`"] .quorum');
			return q.querySelector(".bar-quorum").getBoundingClientRect().width / q.querySelector(".bar-track").getBoundingClientRect().width;
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := ratio("72"); r < 0.29 || r > 0.31 {
		t.Fatalf("defeated proposal's quorum bar at %.3f of its track, want 0.30", r)
	}
	if r := ratio("75"); r < 0.99 {
		t.Fatalf("active proposal's quorum bar at %.3f of its track, want full", r)
	}
	tb.wantText(`[data-id="uniswap/75"] .quorum`, "Quorum reached")
	tb.wantText(`[data-id="uniswap/72"] .quorum`, "30% of quorum")
	// The tally bar too: for 41.25M, against 1.2K, abstain 5 of the active one.
	forShare, err := chromedp.Run(tb.ctx, chromedp.Evaluate[float64](`(() => {
		const t = document.querySelector('[data-id="uniswap/75"] .tally');
		return t.querySelector(".bar-for").getBoundingClientRect().width / t.querySelector(".bar-track").getBoundingClientRect().width;
	})()`))
	if err != nil || forShare < 0.99 {
		t.Fatalf("for share of the active proposal's tally bar: %v (%v)", forShare, err)
	}

	// Older: the other three.
	tb.do("older", chromedp.Click(chromedp.ID("older")))
	tb.waitLocation("before=")
	tb.do("older page", chromedp.WaitVisible(chromedp.ID("proposals")))
	if got := states(); got != "canceled=⊘ Canceled,expired=◌ Expired,succeeded=✓ Succeeded" {
		t.Fatalf("second page: %s", got)
	}

	// Every state has a colour of its own.
	tb.do("every state", chromedp.Navigate(base+"/admin/ui/proposals?dao=uniswap"), chromedp.WaitVisible(chromedp.ID("proposals")))
	s.ui.perPage = 20
	tb.do("all eight", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("proposals")))
	colours, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#proposals .pstate")].map((b) => getComputedStyle(b).backgroundColor + "/" + getComputedStyle(b).color)`))
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for _, c := range colours {
		distinct[c] = true
	}
	if len(colours) != 8 || len(distinct) != 8 {
		t.Fatalf("state badges: %d badges in %d colours, want 8 in 8: %v", len(colours), len(distinct), colours)
	}
	if shots {
		tb.shot("proposals", `#proposals > li:nth-child(6)`)
		tb.colorScheme("dark")
		tb.shot("proposals-dark", `#proposals > li:nth-child(6)`)
		tb.colorScheme("light")
	}

	// The state filter: only defeated proposals.
	tb.scripted()
	tb.do("defeated only", chromedp.SetValue(chromedp.ID("p-state"), "defeated"))
	tb.waitLocation("state=defeated")
	tb.do("filtered", chromedp.WaitVisible(chromedp.ID("proposals")))
	if got := states(); got != "defeated=✕ Defeated" {
		t.Fatalf("state filter: %s", got)
	}
	tb.do("queued in ENS", chromedp.Navigate(base+"/admin/ui/proposals?dao=ens&state=queued"), chromedp.WaitVisible(chromedp.CSS("#live .empty")))
	tb.wantText("#live .empty", "No Queued proposals")

	// A timestamp clock counts from the head's block time, without "≈".
	tb.do("arbitrum", chromedp.Navigate(base+"/admin/ui/proposals?dao=arbitrum"), chromedp.WaitVisible(chromedp.ID("proposals")))
	tb.wantText("#proposals", "2 h 30 min left", "Nov 24, 14:30 UTC, by the chain head's block time", "in 45 min", "Quorum is read at the snapshot")
	if got := tb.text("#proposals"); strings.Contains(got, "≈") {
		t.Fatalf("a timestamp clock's times are not estimates:\n%s", got)
	}

	// The proposal page, with its votes.
	tb.do("uniswap again", chromedp.Navigate(base+"/admin/ui/proposals?dao=uniswap&state=active"), chromedp.WaitVisible(chromedp.ID("proposals")))
	tb.do("open the active one", chromedp.Click(chromedp.CSS(`[data-id="uniswap/75"] .proposal-title a`)), chromedp.WaitVisible(chromedp.ID("votes")))
	tb.waitLocation("/admin/ui/proposals/uniswap/75")
	tb.wantText("h1", "Deploy Uniswap v4 on Unichain", "Active")
	tb.wantText("#proposal-summary", "41.25M", "Quorum reached", "≈ 6 h left")
	tb.wantText("#votes", "0x8E4E…a42E", "For", "25M", "Unichain is where the next users are.",
		"Against", "1.2K", "The deployment should wait for the audit.", "Abstain", "Abstaining: conflict of interest.")
	rows, err := chromedp.Run(tb.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#votes tbody tr").length`))
	if err != nil || rows != 4 {
		t.Fatalf("%d vote rows (%v), want 4", rows, err)
	}
	tb.do("description", chromedp.Click(chromedp.CSS("details.description summary")), chromedp.WaitVisible(chromedp.CSS("details.description pre")))
	tb.wantText("details.description pre", "seeded by the admin page's tests")
	if shots {
		tb.shot("proposal")
	}
	// The breadcrumb leads back to the DAO's list.
	tb.do("back", chromedp.Click(chromedp.CSS(`.crumbs a[href="/admin/ui/proposals?dao=uniswap"]`)), chromedp.WaitVisible(chromedp.ID("proposals")))
	tb.wantText("h1", "Uniswap proposals")

	// The list refreshes itself: a proposal that the indexer finds active
	// shows so without a reload.
	tb.do("arbitrum again", chromedp.Navigate(base+"/admin/ui/proposals?dao=arbitrum"), chromedp.WaitVisible(chromedp.ID("proposals")))
	tb.scripted()
	const gaming = "10582391828192758122948571029384756102938475610293847561029384756102938475610"
	p, found, err := s.st.Proposal(context.Background(), "arbitrum", gaming)
	if err != nil || !found {
		t.Fatalf("seeded proposal: %v %v", found, err)
	}
	q := "150000000000000000000000000"
	p.State, p.Quorum, p.UpdatedBlock = core.ProposalActive, &q, 305112900
	if err := s.st.ApplyBatch(context.Background(), core.IndexBatch{DAO: "arbitrum", ChainID: 42161,
		Prev:   &core.Cursor{Block: 305112800, Hash: fmt.Sprintf("0x%064x", 0xa11ce000+900)},
		Cursor: core.Cursor{Block: 305112900, Hash: fmt.Sprintf("0x%064x", 0xb0b)}, Proposals: []core.Proposal{p}}); err != nil {
		t.Fatal(err)
	}
	tb.do("live list", chromedp.Poll[chromedp.Void](`document.querySelector('[data-id="arbitrum/`+gaming+`"]').dataset.state === "active"`, chromedp.WithPollingTimeout(25*time.Second)))
	tb.wantText(`[data-id="arbitrum/`+gaming+`"]`, "Active", "0% of quorum", "No votes yet")
}
