package webui

import (
	"math"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserDelegates goes through the delegate pages in Chromium on the
// in-process stack: the real REST API's delegate routes on a real store
// holding seedDelegates' history of uniswap's token, written as the indexer
// writes it. With GOVGATE_SCREENSHOTS=1 it also takes
// docs/screenshots/delegates.png, delegates-dark.png and delegate.png.
func TestBrowserDelegates(t *testing.T) {
	tb := newTab(t)
	s := newStack(t, true)
	s.seedDelegates(t)
	s.ui.perPage = 4
	base := s.srv.URL
	shots := tb.screenshots()
	tb.signIn(base, testToken)
	order := func() []string {
		return evaluate[[]string](tb, `[...document.querySelectorAll("#delegates tbody tr")].map((tr) => tr.dataset.address)`)
	}
	ranks := func() []string {
		return evaluate[[]string](tb, `[...document.querySelectorAll("#delegates tbody td.rank")].map((td) => td.textContent.trim())`)
	}
	// bars measures each row's share bar against its track, as drawn.
	bars := func() []float64 {
		t.Helper()
		v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]float64](`[...document.querySelectorAll("#delegates tbody .share")].map((s) =>
			s.querySelector(".bar-share").getBoundingClientRect().width / s.querySelector(".bar-track").getBoundingClientRect().width)`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 0.005 }
	sum := func(v []float64) float64 {
		total := 0.0
		for _, f := range v {
			total += f
		}
		return total
	}

	// The navigation's Delegates entry opens the first DAO's leaderboard,
	// by voting power, four to a page.
	tb.do("delegates", chromedp.Click(chromedp.CSS(`nav[aria-label="Main"] a[href="/admin/ui/delegates"]`)), chromedp.WaitVisible(chromedp.ID("delegates")))
	tb.wantText("h1", "Uniswap delegates")
	tb.wantText(`nav[aria-label="Main"] [aria-current="page"]`, "Delegates")
	tb.wantText("#total-power", "60.2M")
	if got := order(); !slices.Equal(got, []string{alice, carol, erin, bob}) {
		t.Fatalf("first page by power: %v", got)
	}
	if got := ranks(); !slices.Equal(got, []string{"1", "2", "3", "4"}) {
		t.Fatalf("first page's ranks: %v", got)
	}
	tb.wantText("#delegates", "0x8E4E…a42E", "26.2M", "43.5%", "25M", "41.5%", "9M", "14.9%", "1.2K", "< 0.1%", "3 of 6 · 50%", "2 of 3 · 67%")
	// The share bars are drawn to scale against the total delegated.
	first := bars()
	for i, want := range []float64{26.2 / 60.201205, 25 / 60.201205, 9 / 60.201205, 0.0012 / 60.201205} {
		if i >= len(first) || !near(first[i], want) {
			t.Fatalf("share bars of the first page: %v, want %v at %d", first, want, i)
		}
	}
	// The API's cursor: the other two, ranks running on.
	tb.do("next", chromedp.Click(chromedp.ID("older")))
	tb.waitLocation("before=")
	tb.do("next page", chromedp.WaitVisible(chromedp.ID("delegates")))
	if got := order(); !slices.Equal(got, []string{dave, yuri}) {
		t.Fatalf("second page by power: %v", got)
	}
	if got := ranks(); !slices.Equal(got, []string{"5", "6"}) {
		t.Fatalf("second page's ranks: %v", got)
	}
	second := bars()
	if total := sum(first) + sum(second); !near(total, 1) {
		t.Fatalf("the share bars of every delegate add up to %.4f of the track, want 1", total)
	}
	tb.wantText("#delegates", "0 of 0 · —", "never")

	// Sorting: the column header, then the toolbar's select.
	tb.do("back to the top", chromedp.Click(chromedp.ID("first")), chromedp.WaitVisible(chromedp.ID("delegates")))
	tb.do("by delegators", chromedp.Click(chromedp.CSS(`#delegates th a[data-sort="delegators"]`)))
	tb.waitLocation("sort=delegators")
	tb.do("sorted", chromedp.WaitVisible(chromedp.CSS(`th[aria-sort="descending"] a[data-sort="delegators"]`)))
	if got := order(); !slices.Equal(got, []string{alice, carol, erin, yuri}) {
		t.Fatalf("by delegators: %v", got)
	}
	tb.wantText("#list-title", "by delegators")
	tb.scripted()
	tb.do("by votes", chromedp.SetValue(chromedp.ID("d-sort"), "votes"))
	tb.waitLocation("sort=votes")
	tb.do("sorted by votes", chromedp.WaitVisible(chromedp.CSS(`th[aria-sort="descending"] a[data-sort="votes"]`)))
	if got := order(); !slices.Equal(got, []string{carol, alice, bob, erin}) {
		t.Fatalf("by votes cast: %v", got)
	}

	// The DAO selector: ENS's token has no delegates yet.
	tb.scripted()
	tb.do("pick ENS", chromedp.SetValue(chromedp.ID("d-dao"), "ens"))
	tb.waitLocation("dao=ens")
	tb.do("ENS", chromedp.WaitVisible(chromedp.CSS("#live .empty")))
	tb.wantText("h1", "ENS delegates")
	tb.wantText("#live .empty", "No delegates yet")

	// The whole leaderboard on one page.
	s.ui.perPage = 20
	tb.do("every delegate", chromedp.Navigate(base+"/admin/ui/delegates?dao=uniswap"), chromedp.WaitVisible(chromedp.ID("delegates")))
	if got := order(); !slices.Equal(got, []string{alice, carol, erin, bob, dave, yuri}) {
		t.Fatalf("one page by power: %v", got)
	}
	if total := sum(bars()); !near(total, 1) {
		t.Fatalf("the share bars add up to %.4f, want 1", total)
	}
	if shots {
		tb.shot("delegates")
		tb.colorScheme("dark")
		tb.shot("delegates-dark")
		tb.colorScheme("light")
	}

	// A delegate's page, five delegators and votes at a time.
	s.ui.detailRows = 5
	tb.do("alice", chromedp.Click(chromedp.CSS(`#delegates tr[data-address="`+alice+`"] a`)), chromedp.WaitVisible(chromedp.ID("votes")))
	tb.waitLocation("/admin/ui/delegates/uniswap/" + alice)
	tb.wantText("h1", alice)
	tb.wantText(".crumbs", "Delegates", "Uniswap", "0x8E4E…a42E")
	tb.wantText("#delegate-summary", "26.2M", "43.5%", "of 60.2M delegated in Uniswap", "50%", "3 votes on 6 proposals", "13", "itself included")
	share, err := chromedp.Run(tb.ctx, chromedp.Evaluate[float64](`(() => {
		const s = document.querySelector("#delegate-summary .share");
		return s.querySelector(".bar-share").getBoundingClientRect().width / s.querySelector(".bar-track").getBoundingClientRect().width;
	})()`))
	if err != nil || !near(share, 26.2/60.201205) {
		t.Fatalf("the delegate's share bar at %.4f (%v), want 0.435", share, err)
	}
	delegators := func() []string {
		return evaluate[[]string](tb, `[...document.querySelectorAll("#delegators tbody tr")].map((tr) => tr.dataset.address)`)
	}
	firstDelegators := delegators()
	if len(firstDelegators) != 5 || !slices.IsSorted(firstDelegators) {
		t.Fatalf("first delegators: %v", firstDelegators)
	}
	tb.wantText("#votes", "Activate the fee switch on v3 pools", "Executed", "Move the treasury to a new Safe", "Defeated",
		"Renew the Uniswap grants programme", "For", "Against", "Grants brought the v4 hooks ecosystem.", "26.2M", "block #21863110")
	if shots {
		tb.shot("delegate")
	}
	tb.do("more delegators", chromedp.Click(chromedp.ID("older-delegators")))
	tb.waitLocation("delegatorsBefore=")
	tb.do("next delegators", chromedp.WaitVisible(chromedp.ID("delegators")))
	if got := delegators(); len(got) != 5 || !slices.IsSorted(got) || got[0] <= firstDelegators[4] {
		t.Fatalf("next delegators: %v after %v", got, firstDelegators)
	}

	// From a vote to its proposal, and from the proposal's voters to
	// another delegate.
	tb.do("the fee switch", chromedp.Click(chromedp.CSS(`#votes a[href="/admin/ui/proposals/uniswap/84"]`)))
	tb.waitLocation("/admin/ui/proposals/uniswap/84")
	tb.wantText("h1", "Activate the fee switch on v3 pools", "Executed")
	tb.do("erin", chromedp.Click(chromedp.CSS(`#votes a[href="/admin/ui/delegates/uniswap/`+erin+`"]`)))
	tb.waitLocation("/admin/ui/delegates/uniswap/" + erin)
	tb.wantText("#delegate-summary", "9M", "14.9%", "2 votes on 3 proposals", "first held power at #21867000")
	tb.wantText("#votes", "Fund the Uniswap Foundation for 2027", "Queued", "Ask for a smaller first tranche.")
	tb.do("breadcrumb", chromedp.Click(chromedp.CSS(`.crumbs a[href="/admin/ui/delegates?dao=uniswap"]`)), chromedp.WaitVisible(chromedp.ID("delegates")))
	tb.wantText("h1", "Uniswap delegates")

	// An account that only delegates is no delegate: its page says whom
	// it delegates to.
	tb.do("whale", chromedp.Navigate(base+"/admin/ui/delegates/uniswap/"+whale1), chromedp.WaitVisible(chromedp.ID("not-a-delegate")))
	tb.wantText("h1", "Not a delegate")
	tb.do("its delegate", chromedp.Click(chromedp.CSS(`#not-a-delegate a`)), chromedp.WaitVisible(chromedp.ID("votes")))
	tb.wantText("h1", carol)

	// On a phone the leaderboard's rows become cards: no header row, each
	// figure labelled, nothing wider than the screen.
	tb.do("phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/admin/ui/delegates?dao=uniswap"), chromedp.WaitVisible(chromedp.ID("delegates")))
	layout, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]string](`[
		getComputedStyle(document.querySelector("#delegates thead")).display,
		getComputedStyle(document.querySelector("#delegates tbody td[data-label=Share]"), "::before").content,
		String(document.documentElement.scrollWidth <= window.innerWidth),
	]`))
	if err != nil || !slices.Equal(layout, []string{"none", `"Share: "`, "true"}) {
		t.Fatalf("phone layout: %q (%v)", layout, err)
	}
}
