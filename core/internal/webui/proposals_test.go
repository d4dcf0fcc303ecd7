package webui

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"zero", "0", "0"},
		{"dust", "7", "< 0.01"},
		{"one token", "1000000000000000000", "1"},
		{"fraction", "2500000000000000000", "2.5"},
		{"thousands", "1200000000000000000000", "1.2K"},
		{"millions", "41250000000000000000000000", "41.25M"},
		{"billions", "1000000000000000000000000000", "1B"},
		{"not a number", "n/a", "n/a"},
	}
	for _, tt := range tests {
		if got := tokens(tt.in); got != tt.want {
			t.Errorf("%s: tokens(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestQuorumOf(t *testing.T) {
	t.Parallel()
	q := func(s string) *string { return &s }
	tests := []struct {
		name    string
		p       core.Proposal
		abstain bool
		known   bool
		pct     int
		w, rule string
		reached bool
		counted string
	}{
		{"OpenZeppelin counts abstain", core.Proposal{ForVotes: "300", AgainstVotes: "900", AbstainVotes: "200", Quorum: q("1000")}, true, true, 50, "50", "for + abstain", false, "< 0.01"},
		{"Bravo counts for only", core.Proposal{ForVotes: "300", AgainstVotes: "900", AbstainVotes: "200", Quorum: q("1000")}, false, true, 30, "30", "for votes", false, "< 0.01"},
		{"past the quorum, bar full", core.Proposal{ForVotes: "3000000000000000000000", Quorum: q("2000000000000000000000"), QuorumReached: true}, false, true, 150, "100", "for votes", true, "3K"},
		{"pending: not known yet", core.Proposal{ForVotes: "0", State: core.ProposalPending}, true, false, 0, "", "for + abstain", false, "0"},
	}
	if q := quorumOf(core.Proposal{State: core.ProposalCanceled}, true); q.Known || !q.Ended {
		t.Errorf("canceled before its snapshot: %+v", q)
	}
	if q := quorumOf(core.Proposal{State: core.ProposalPending}, true); q.Known || q.Ended {
		t.Errorf("pending: %+v", q)
	}
	for _, tt := range tests {
		got := quorumOf(tt.p, tt.abstain)
		if got.Known != tt.known || got.Pct != tt.pct || got.W != tt.w || got.Rule != tt.rule || got.Reached != tt.reached || got.Counted != tt.counted {
			t.Errorf("%s: %+v", tt.name, got)
		}
	}
}

func TestTimingOf(t *testing.T) {
	t.Parallel()
	head := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	assumed := chainClock{Head: 1000, Confirmed: 990, HeadTime: head, SecPerBlock: 12}
	measured := clockOf(map[string]any{"checks": map[string]any{
		"chainHead": map[string]any{"number": "1000", "timestamp": head.Format(time.RFC3339)},
		"indexer":   map[string]any{"confirmedHead": "990", "lastIndexedBlock": "950", "lagBlocks": "40", "lagSeconds": "80"}}})
	if !measured.Measured || measured.SecPerBlock != 2 || measured.Confirmed != 990 || !measured.HeadTime.Equal(head) {
		t.Fatalf("clockOf: %+v", measured)
	}
	now := head.Add(time.Hour) // the server's clock is not the chain's
	at := func(d time.Duration) uint64 { return uint64(head.Add(d).Unix()) }
	tests := []struct {
		name       string
		p          core.Proposal
		c          chainClock
		label, val string
		noteHas    string
	}{
		{"active, block clock, assumed 12 s", core.Proposal{State: core.ProposalActive, Clock: core.ClockBlockNumber, VoteEnd: 1290}, assumed, "Time left", "≈ 1 h left", "300 blocks to #1290, at an assumed 12 s a block"},
		{"active, block clock, measured", core.Proposal{State: core.ProposalActive, Clock: core.ClockBlockNumber, VoteEnd: 1290}, measured, "Time left", "≈ 10 min left", "measured from the health check's block times"},
		{"active, timestamp clock", core.Proposal{State: core.ProposalActive, Clock: core.ClockTimestamp, VoteEnd: at(150 * time.Minute)}, assumed, "Time left", "2 h 30 min left", "by the chain head's block time"},
		{"active, past its end", core.Proposal{State: core.ProposalActive, Clock: core.ClockBlockNumber, VoteEnd: 980}, assumed, "Time left", "Closing now", "0 blocks"},
		{"pending, block clock", core.Proposal{State: core.ProposalPending, Clock: core.ClockBlockNumber, VoteStart: 995}, assumed, "Voting starts", "in ≈ 1 min", "5 blocks to #995"},
		{"pending, timestamp clock", core.Proposal{State: core.ProposalPending, Clock: core.ClockTimestamp, VoteStart: at(45 * time.Minute)}, assumed, "Voting starts", "in 45 min", ""},
		{"queued", core.Proposal{State: core.ProposalQueued, ETA: at(26*time.Hour + 30*time.Minute)}, assumed, "ETA", "executable in 26 h 30 min", "Nov 25, 14:30 UTC"},
		{"queued, due", core.Proposal{State: core.ProposalQueued, ETA: at(-time.Minute)}, assumed, "ETA", "executable now", ""},
		{"block clock without a head", core.Proposal{State: core.ProposalActive, Clock: core.ClockBlockNumber, VoteEnd: 1290}, chainClock{SecPerBlock: 12}, "Time left", "at block #1290", "no chain head"},
		{"no head time: the server's clock", core.Proposal{State: core.ProposalActive, Clock: core.ClockTimestamp, VoteEnd: at(150 * time.Minute)}, chainClock{SecPerBlock: 12}, "Time left", "1 h 30 min left", "by this server's clock"},
	}
	for _, tt := range tests {
		got := timingOf(tt.p, tt.c, now)
		if got == nil || got.Label != tt.label || got.Value != tt.val || !strings.Contains(got.Note, tt.noteHas) {
			t.Errorf("%s: %+v", tt.name, got)
		}
	}
	for _, s := range []string{core.ProposalExecuted, core.ProposalDefeated, core.ProposalCanceled} {
		if got := timingOf(core.Proposal{State: s}, assumed, now); got != nil {
			t.Errorf("%s: %+v, want none", s, got)
		}
	}
}

func TestBackfillOf(t *testing.T) {
	t.Parallel()
	if b := backfillOf(map[string]any{"state": "fresh"}); b != nil {
		t.Fatalf("no backfill: %+v", b)
	}
	m := decodeNumbers([]byte(`{"backfill": {"fromBlock": 21000000, "toBlock": 21874310, "blocksDone": 655732, "blocksTotal": 874310, "events": 18230, "eventsPerSecond": 412.5, "blocksPerSecond": 1480.2, "etaSeconds": -1}}`))
	b := backfillOf(m)
	if b == nil || b.Pct != 75 || b.Done != "655,732" || b.Total != "874,310" || b.EventsPerSecond != "412.5" || b.BlocksPerSecond != "1,480" || b.Left != "" {
		t.Fatalf("backfill: %+v", b)
	}
}

// TestProposalPages renders the proposal pages on the stack's real store,
// read through the real REST API.
func TestProposalPages(t *testing.T) {
	t.Parallel()
	s := newStack(t, true)
	s.seed(t)
	s.seedProposals(t)
	c, _ := signIn(t, s)
	tests := []struct {
		name   string
		path   string
		status int
		want   []string
		not    []string
	}{
		{"overview: voting now and backfill", "/admin/", 200, []string{
			`id="voting-now"`, "Deploy Uniswap v4 on Unichain", "[EP 6.1] Fund the Public Goods working group", "[Constitutional] Upgrade the ArbOS version",
			"≈ 6 h left", "≈ 24 h 18 min left", "2 h 30 min left", "at 12.5 s a block, measured",
			"Backfill", "655,732 of 874,310 blocks", "412.5 events/s", "about 2 min left", "#21874311", `href="/admin/ui/proposals?dao=ens"`,
		}, []string{"Create a Unichain security council"}},
		{"every DAO", "/admin/ui/proposals", 200, []string{`id="proposals"`, "Deploy Uniswap v4 on Unichain", "[Constitutional] Upgrade the ArbOS version", `<option value="executed" >Executed</option>`}, nil},
		{"canceled before its snapshot", "/admin/ui/proposals?dao=uniswap&state=canceled", 200, []string{"Lower the proposal threshold to 1M"}, []string{"No quorum"}},
		{"one DAO, every state", "/admin/ui/proposals?dao=uniswap", 200, []string{
			"Uniswap proposals", "pstate-pending", "pstate-active", "pstate-canceled", "pstate-defeated", "pstate-succeeded", "pstate-queued", "pstate-expired", "pstate-executed",
			"✓</span> Quorum reached", "30% of quorum", "12M of 40M (for votes)", "in ≈ 1 h", "executable in 26 h 30 min", "0x8E4E…a42E",
		}, []string{"Fund the Public Goods"}},
		{"OpenZeppelin quorum counts abstain", "/admin/ui/proposals?dao=ens&state=active", 200, []string{"1.5M of 1M (for + abstain)", "Quorum reached", "48.5%"}, nil},
		{"timestamp clock", "/admin/ui/proposals?dao=arbitrum", 200, []string{"2 h 30 min left", "in 45 min", "Quorum is read at the snapshot", "36% of quorum"}, nil},
		{"state filter", "/admin/ui/proposals?dao=uniswap&state=defeated", 200, []string{"Raise the proposal threshold to 2.5M", `<option value="defeated" selected>`}, []string{"Deploy Uniswap v4"}},
		{"empty state", "/admin/ui/proposals?dao=ens&state=queued", 200, []string{"No Queued proposals"}, nil},
		{"bad state is all", "/admin/ui/proposals?state=nope", 200, []string{"Deploy Uniswap v4 on Unichain"}, nil},
		{"live fragment", "/admin/ui/proposals?partial=live&dao=uniswap", 200, []string{`id="proposals"`}, []string{"<html"}},
		{"unknown DAO", "/admin/ui/proposals?dao=nope", 404, []string{"No such DAO"}, nil},
		{"detail with votes", "/admin/ui/proposals/uniswap/75", 200, []string{
			"Deploy Uniswap v4 on Unichain", `id="votes"`, "Unichain is where the next users are.", "The deployment should wait for the audit.",
			"vote-for", "vote-against", "vote-abstain", "25M", "0x8E4E…a42E", "transfer(address,uint256)", "≈ 6 h left", "blocks #21835789 → #21876109",
		}, nil},
		{"detail on a timestamp clock", "/admin/ui/proposals/arbitrum/97685288731263391833044854304895851471157040105038894699042975271050068874277", 200, []string{"(timestamp clock)", "2026-11-24 14:30:00 UTC", "No votes yet"}, nil},
		{"missing proposal", "/admin/ui/proposals/uniswap/999", 404, []string{"Uniswap has no proposal 999"}, nil},
		{"bad proposal id", "/admin/ui/proposals/uniswap/0xabc", 404, []string{"No such proposal"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := send(t, c, "GET", s.srv.URL+tt.path, nil)
			if resp.StatusCode != tt.status {
				t.Fatalf("GET %s: %d, want %d\n%s", tt.path, resp.StatusCode, tt.status, body)
			}
			text := html(body)
			for _, w := range tt.want {
				if !strings.Contains(body, w) && !strings.Contains(text, w) {
					t.Errorf("GET %s: no %q in\n%s", tt.path, w, text)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(body, w) {
					t.Errorf("GET %s: %q should not be there", tt.path, w)
				}
			}
		})
	}
}

// TestProposalPaging pages through one DAO's eight proposals three at a time.
func TestProposalPaging(t *testing.T) {
	t.Parallel()
	s := newStack(t, true)
	s.seedProposals(t)
	s.ui.perPage = 3
	c, _ := signIn(t, s)
	older := regexp.MustCompile(`id="older" href="([^"]+)"`)
	path, seen := "/admin/ui/proposals?dao=uniswap", 0
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("more pages than proposals")
		}
		_, body := send(t, c, "GET", s.srv.URL+strings.ReplaceAll(path, "&amp;", "&"), nil)
		seen += strings.Count(body, `class="proposal card`)
		path = ""
		if m := older.FindStringSubmatch(body); m != nil {
			path = m[1]
		}
	}
	if seen != 8 {
		t.Fatalf("paging showed %d proposals, want 8", seen)
	}
}

// TestProposalsWithoutREST: a build that does not hand the REST API to the
// page says so instead of failing.
func TestProposalsWithoutREST(t *testing.T) {
	t.Parallel()
	s := newStack(t, true, func(c *Config) { c.REST = nil })
	c, _ := signIn(t, s)
	for path, want := range map[string]string{
		"/admin/":             "The proposal list is not available in this govgate build yet.",
		"/admin/ui/proposals": "The proposal list is not available in this govgate build yet.",
	} {
		resp, body := send(t, c, "GET", s.srv.URL+path, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, no %q", path, resp.StatusCode, want)
		}
	}
	resp, body := send(t, c, "GET", s.srv.URL+"/admin/ui/proposals/uniswap/75", nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "not available in this govgate build yet") {
		t.Errorf("detail without REST: %d\n%s", resp.StatusCode, body)
	}
}

var tags = regexp.MustCompile(`<[^>]+>`)
var spaces = regexp.MustCompile(`\s+`)

// html is a page's text without tags, spaces collapsed, for looking up
// what a reader sees.
func html(body string) string {
	s := tags.ReplaceAllString(body, " ")
	s = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#43;", "+", "&#34;", `"`, "&#39;", "'").Replace(s)
	return spaces.ReplaceAllString(s, " ")
}

// TestProposalVotesAndEscaping pages through a proposal's votes and shows
// that on-chain text (titles, descriptions, reasons) is escaped.
func TestProposalVotesAndEscaping(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	const id = "4242"
	evil := `<img src=x onerror="alert(1)">`
	p := core.Proposal{DAO: "ens", ChainID: 1, ProposalID: id, Proposer: "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E",
		Title: "Pay " + evil, Description: "# Pay " + evil + "\n\n<script>alert(2)</script>", VoteStart: 100, VoteEnd: 200,
		Clock: core.ClockBlockNumber, State: core.ProposalDefeated, ForVotes: "0", AgainstVotes: "55", AbstainVotes: "0",
		CreatedBlock: 90, CreatedTx: fmt.Sprintf("0x%064x", 1), UpdatedBlock: 201}
	var votes []core.Vote
	for i := range 55 {
		votes = append(votes, core.Vote{DAO: "ens", ChainID: 1, ProposalID: id, Voter: fmt.Sprintf("0x%040x", i+1), Support: 0, Weight: "1",
			Reason: fmt.Sprintf("reason %d %s", i, evil), BlockNumber: uint64(110 + i), BlockHash: fmt.Sprintf("0x%064x", 500+i),
			TxHash: fmt.Sprintf("0x%064x", 1000+i), LogIndex: 0})
	}
	if err := s.st.ApplyBatch(context.Background(), core.IndexBatch{DAO: "ens", ChainID: 1, Cursor: core.Cursor{Block: 300, Hash: fmt.Sprintf("0x%064x", 9)},
		Proposals: []core.Proposal{p}, Votes: votes}); err != nil {
		t.Fatal(err)
	}
	c, _ := signIn(t, s)
	_, body := send(t, c, "GET", s.srv.URL+"/admin/ui/proposals/ens/"+id, nil)
	if strings.Contains(body, "<img src=x") || strings.Contains(body, "<script>alert") {
		t.Fatalf("on-chain text is not escaped:\n%s", body)
	}
	if n := strings.Count(body, "reason "); n != votesPage {
		t.Fatalf("first page of votes: %d, want %d", n, votesPage)
	}
	m := regexp.MustCompile(`href="(/admin/ui/proposals/ens/4242\?before=\d+)">Older votes`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no link to older votes:\n%s", body)
	}
	_, body = send(t, c, "GET", s.srv.URL+m[1], nil)
	if n := strings.Count(body, "reason "); n != 55-votesPage || strings.Contains(body, "Older votes") || !strings.Contains(body, "reason 0 ") {
		t.Fatalf("second page: %d votes\n%s", n, body)
	}
	_, body = send(t, c, "GET", s.srv.URL+"/admin/ui/proposals?dao=ens", nil)
	if strings.Contains(body, "<img src=x") || !strings.Contains(body, "Pay &lt;img") {
		t.Fatalf("the list does not escape titles:\n%s", body)
	}
}
