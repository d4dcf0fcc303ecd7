package webui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
)

// The delegates of seedDelegates, EIP-55.
var (
	alice = eip55("0x8E4ED221fa034245F14205f781E0b13C5bd6a42E")
	bob   = eip55("0x6f3E6272A167e8AcCb32072d08E0957F9c79223d")
	carol = eip55("0x2B1Ad6184a6B0fac06bD225ed37C2AbC04415fF4")
	dave  = eip55("0xf92f3c1b6f8e0b5d7c4a3e9b1d2c5f8a7e6d7b1c")
	erin  = eip55("0xe2388f22cf5e328c197d6530663809cc0f2e3b70")
	yuri  = eip55("0x4b0897b0513fdc7c541b6d9d7e929c4e5364d2db")
	// whale1 and whale2 only delegate (to carol; to bob, then erin), zoe
	// delegates to yuri without a token.
	whale1 = eip55("0x1f9840a85d5af5bf1d1762f925bdaddc4201f984")
	whale2 = eip55("0xc00e94cb662c3520282e6f5717214004a7f26888")
	zoe    = eip55("0x9f8f72aa9304c8b593d555f12ef6589cc3a579a2")
)

func eip55(a string) string { return common.HexToAddress(a).Hex() }

// txHash is a made-up transaction or block hash that looks like one.
func txHash(kind string, n uint64) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s %d", kind, n))
	return "0x" + hex.EncodeToString(h[:])
}

// small is the i-th of the twelve holders of 100,000 tokens who delegate
// to alice.
func small(i int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "holder %d", i))
	return common.BytesToAddress(h[:20]).Hex()
}

// votingToken turns mints and delegations into the events an ERC20Votes
// token emits for them, in its order: DelegateChanged, then a
// DelegateVotesChanged for each side whose votes move.
type votingToken struct {
	dao      string
	chainID  uint64
	balance  map[string]*big.Int
	delegate map[string]string
	votes    map[string]*big.Int
	events   []core.TokenEvent
	block    uint64
	tx, log  int
	timeOf   func(block uint64) time.Time
}

func (k *votingToken) at(block uint64) *votingToken { k.block, k.log = block, 0; return k }

func (k *votingToken) emit(e core.TokenEvent) {
	e.DAO, e.ChainID, e.Token, e.BlockNumber = k.dao, k.chainID, "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984", k.block
	e.BlockHash, e.TxHash, e.LogIndex, e.At = txHash("block", k.block), txHash("tx", uint64(k.tx)), uint(k.log), k.timeOf(k.block)
	k.log++
	k.events = append(k.events, e)
}

func (k *votingToken) get(m map[string]*big.Int, a string) *big.Int {
	if m[a] == nil {
		m[a] = new(big.Int)
	}
	return m[a]
}

func (k *votingToken) move(from, to string, amount *big.Int) {
	if from == to || amount.Sign() == 0 {
		return
	}
	for _, side := range []struct {
		d    string
		sign int64
	}{{from, -1}, {to, 1}} {
		if side.d == "" {
			continue
		}
		old := new(big.Int).Set(k.get(k.votes, side.d))
		n := new(big.Int).Add(old, new(big.Int).Mul(amount, big.NewInt(side.sign)))
		k.votes[side.d] = n
		k.emit(core.TokenEvent{Kind: core.TypeDelegateVotesChanged, Delegate: side.d, PreviousVotes: old.String(), NewVotes: n.String()})
	}
}

// mint gives to tokens (of 18 decimals); no event of the token's own but
// the votes its delegate gains.
func (k *votingToken) mint(to string, tokens int64) *votingToken {
	k.tx++
	v := new(big.Int).Mul(big.NewInt(tokens), big.NewInt(1e18))
	k.get(k.balance, to).Add(k.balance[to], v)
	k.move("", k.delegate[to], v)
	return k
}

func (k *votingToken) delegateTo(a, to string) *votingToken {
	k.tx++
	old := k.delegate[a]
	k.delegate[a] = to
	moved, from := "", old
	if bal := k.get(k.balance, a); bal.Sign() > 0 {
		moved = bal.String()
	}
	if from == "" {
		from = zeroAddress
	}
	k.emit(core.TokenEvent{Kind: core.TypeDelegateChanged, Delegator: a, FromDelegate: from, ToDelegate: to, Moved: moved})
	k.move(old, to, k.get(k.balance, a))
	return k
}

// Blocks of seedDelegates' history: the token is minted and delegated at
// base+100 and base+200, erin takes power at base+5000, and six proposals
// are created at base+1000 ... base+10000; the cursor ends at head.
const (
	seedBase = uint64(21_862_000)
	seedHead = uint64(21_874_309)
)

// seedDelegates writes a history of uniswap's voting token and governor
// through the indexer's write path (ApplyBatch with token events, proposals
// and votes, in chain order, in two batches), so that the delegate pages
// have something true to show:
//
//	delegate  power (tokens)  delegators  votes  proposals since
//	alice     26,200,000      13          3      6
//	carol     25,000,000       2          5      6
//	erin       9,000,000       2          2      3 (power from base+5000)
//	bob            1,200       1          2      6 (whale2 left it for erin)
//	dave               5       1          1      6
//	yuri               0       1          0      0 (zoe delegates no tokens)
//
// The total delegated is 60,201,205 tokens.
func (s *stack) seedDelegates(t *testing.T) {
	t.Helper()
	const e18 = "000000000000000000"
	timeOf := func(b uint64) time.Time { return headTime.Add(-time.Duration(seedHead-b) * 12 * time.Second) }
	tok := &votingToken{dao: "uniswap", chainID: 1, balance: map[string]*big.Int{}, delegate: map[string]string{}, votes: map[string]*big.Int{}, timeOf: timeOf}
	tok.at(seedBase+100).mint(alice, 25_000_000).mint(carol, 16_000_000).mint(whale1, 9_000_000).mint(bob, 1_200).mint(dave, 5).
		mint(erin, 6_000_000).mint(whale2, 3_000_000)
	for i := range 12 {
		tok.mint(small(i), 100_000)
	}
	tok.at(seedBase+200).delegateTo(alice, alice).delegateTo(carol, carol).delegateTo(bob, bob).delegateTo(dave, dave).
		delegateTo(whale1, carol).delegateTo(whale2, bob).delegateTo(zoe, yuri)
	for i := range 12 {
		tok.delegateTo(small(i), alice)
	}
	early := len(tok.events)
	tok.at(seedBase+5000).delegateTo(erin, erin).delegateTo(whale2, erin)

	n := 0
	quorum := "40000000" + e18
	prop := func(id, title, state string, created uint64, forV, against, abstain string) core.Proposal {
		n++
		end := created + 900
		if state == core.ProposalActive {
			end = seedHead + 1800
		}
		return core.Proposal{DAO: "uniswap", ChainID: 1, ProposalID: id, Proposer: alice, Title: title,
			Description: "# " + title + "\n\nSeeded by the admin page's delegate tests.",
			Targets:     []string{"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"}, Values: []string{"0"}, Signatures: []string{""}, Calldatas: []string{"0x"},
			VoteStart: created + 100, VoteEnd: end, Clock: core.ClockBlockNumber, State: state, Quorum: &quorum,
			QuorumReached: forV != "0", ForVotes: forV, AgainstVotes: against, AbstainVotes: abstain,
			CreatedBlock: created, CreatedTx: txHash("propose", uint64(n)), CreatedAt: timeOf(created),
			UpdatedBlock: created + 1000, UpdatedAt: timeOf(created + 1000)}
	}
	p1 := prop("81", "Renew the Uniswap grants programme", core.ProposalExecuted, seedBase+1000, "51200000"+e18, "3001200"+e18, "0")
	p2 := prop("82", "Move the treasury to a new Safe", core.ProposalDefeated, seedBase+2000, "0", "51200000"+e18, "5"+e18)
	p3 := prop("83", "Lower the proposal threshold to 1M", core.ProposalCanceled, seedBase+3000, "0", "0", "0")
	p4 := prop("84", "Activate the fee switch on v3 pools", core.ProposalExecuted, seedBase+6000, "60200000"+e18, "0", "0")
	p5 := prop("85", "Fund the Uniswap Foundation for 2027", core.ProposalQueued, seedBase+8000, "25000000"+e18, "9000000"+e18, "0")
	p5.ETA = uint64(headTime.Add(26 * time.Hour).Unix())
	p6 := prop("86", "Deploy Uniswap v4 on Unichain", core.ProposalActive, seedBase+10000, "25001200"+e18, "0", "0")
	i := 0
	vote := func(p core.Proposal, voter string, support uint8, weight, reason string) core.Vote {
		i++
		b := p.VoteStart + uint64(10*i)
		return core.Vote{DAO: "uniswap", ChainID: 1, ProposalID: p.ProposalID, Voter: voter, Support: support, Weight: weight, Reason: reason,
			BlockNumber: b, BlockHash: txHash("block", b), TxHash: txHash("vote", uint64(i)), CastAt: timeOf(b)}
	}
	first := []core.Vote{
		vote(p1, alice, 1, "26200000"+e18, "Grants brought the v4 hooks ecosystem."),
		vote(p1, carol, 1, "25000000"+e18, ""),
		vote(p1, bob, 0, "3001200"+e18, "Too large a budget this year."),
		vote(p2, carol, 0, "25000000"+e18, "The migration plan has no rollback."),
		vote(p2, alice, 0, "26200000"+e18, ""),
		vote(p2, dave, 2, "5"+e18, "Abstaining: I advise the Safe team."),
	}
	second := []core.Vote{
		vote(p4, carol, 1, "25000000"+e18, "LPs were consulted."),
		vote(p4, erin, 1, "9000000"+e18, "LPs are ready."),
		vote(p4, alice, 1, "26200000"+e18, ""),
		vote(p5, carol, 1, "25000000"+e18, ""),
		vote(p5, erin, 0, "9000000"+e18, "Ask for a smaller first tranche."),
		vote(p6, carol, 1, "25000000"+e18, "Unichain is where the next users are."),
		vote(p6, bob, 1, "1200"+e18, ""),
	}
	ctx := context.Background()
	_, found, err := s.st.Cursor(ctx, "uniswap")
	if err != nil || found {
		t.Fatalf("seedDelegates needs uniswap without history: cursor %v %v", found, err)
	}
	mid := core.Cursor{Block: seedBase + 4999, Hash: txHash("block", seedBase+4999)}
	for _, b := range []core.IndexBatch{
		{DAO: "uniswap", ChainID: 1, Cursor: mid, Proposals: []core.Proposal{p1, p2, p3}, Votes: first, TokenEvents: tok.events[:early]},
		{DAO: "uniswap", ChainID: 1, Prev: &mid, Cursor: core.Cursor{Block: seedHead, Hash: txHash("block", seedHead)},
			Proposals: []core.Proposal{p4, p5, p6}, Votes: second, TokenEvents: tok.events[early:]},
	} {
		if err := s.st.ApplyBatch(ctx, b); err != nil {
			t.Fatalf("seed uniswap's delegates: %v", err)
		}
	}
}

// rows returns the addresses of a leaderboard's rows, in order.
func rows(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr data-id="[^"]+" data-address="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestShareAndParticipation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		d             core.Delegate
		pct, w, part  string
		power, addrIn string
	}{
		{"largest", core.Delegate{Address: strings.ToLower(alice), VotingPower: "26200000000000000000000000", Share: 0.4352, VotesCast: 3, ProposalsSince: 6, Participation: 0.5}, "43.5%", "43.52", "50%", "26.2M", alice},
		{"dust", core.Delegate{Address: bob, VotingPower: "5000000000000000000", Share: 0.00000008, VotesCast: 1, ProposalsSince: 6, Participation: 1.0 / 6}, "< 0.1%", "0", "17%", "5", bob},
		{"no power, no proposals since", core.Delegate{Address: yuri, VotingPower: "0", VotesCast: 0}, "0%", "0", "", "0", yuri},
		{"share past 1 is clamped", core.Delegate{Address: dave, VotingPower: "1", Share: 1.2, ProposalsSince: 2, VotesCast: 3, Participation: 1}, "100%", "100", "100%", "< 0.01", dave},
	}
	for _, tt := range tests {
		v := viewDelegate(tt.d, 1)
		if v.Share.Pct != tt.pct || v.Share.W != tt.w || v.Participation != tt.part || v.Power != tt.power || v.Address != tt.addrIn {
			t.Errorf("%s: %+v", tt.name, v)
		}
	}
	for in, ok := range map[string]bool{alice: true, strings.ToLower(alice): true, "0x" + strings.Repeat("0", 40): true,
		"8E4ED221fa034245F14205f781E0b13C5bd6a42E": false, alice + "00": false, "0xZZ4ED221fa034245F14205f781E0b13C5bd6a42E": false, "": false} {
		if got, good := addressParam(in); good != ok || (ok && got != eip55(in)) {
			t.Errorf("addressParam(%q) = %q, %v", in, got, good)
		}
	}
}

// TestDelegatePages renders the delegate pages on the stack's real store,
// read through the real REST API's delegate routes.
func TestDelegatePages(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	s.seedDelegates(t)
	c, _ := signIn(t, s)
	lower := strings.ToLower(alice)
	tests := []struct {
		name   string
		path   string
		status int
		want   []string
		not    []string
	}{
		{"navigation", "/admin/", 200, []string{`<a href="/admin/ui/delegates" >Delegates</a>`}, nil},
		{"first DAO without a choice", "/admin/ui/delegates", 200, []string{"Uniswap delegates", `<option value="uniswap" selected>`, `aria-current="page">Delegates`, `id="delegates"`}, nil},
		{"leaderboard", "/admin/ui/delegates?dao=uniswap", 200, []string{
			"Leaderboard by voting power", `aria-sort="descending"><a href="/admin/ui/delegates?dao=uniswap" data-sort="votingPower">Voting power`,
			`href="/admin/ui/delegates/uniswap/` + alice + `" title="` + alice + `">0x8E4E…a42E</a>`,
			"26.2M", "43.5%", "25M", "41.5%", "9M", "14.9%", "< 0.1%", "1.2K", "Total delegated 60.2M", `title="60201205000000000000000000"`,
			"3 of 6 · 50%", "5 of 6 · 83%", "2 of 3 · 67%", "0 of 0 · —", "never",
			`href="/admin/ui/delegates?dao=uniswap&amp;sort=delegators"`, `href="/admin/ui/delegates?dao=uniswap&amp;sort=votes"`,
		}, []string{`id="older"`, "Back to the top"}},
		{"sorted by delegators", "/admin/ui/delegates?dao=uniswap&sort=delegators", 200, []string{"Leaderboard by delegators", `<option value="delegators" selected>`, `aria-sort="descending"><a href="/admin/ui/delegates?dao=uniswap&amp;sort=delegators"`}, nil},
		{"bad sort is by power", "/admin/ui/delegates?dao=uniswap&sort=%3Cscript%3E", 200, []string{"Leaderboard by voting power"}, []string{"<script>"}},
		{"bad cursor: the first page, said so", "/admin/ui/delegates?dao=uniswap&before=bm9wZQ&start=7", 200, []string{"That page of the leaderboard does not exist", "26.2M"}, nil},
		{"cursor of another order", "/admin/ui/delegates?dao=uniswap&sort=votes&before=" + delegatesCursor(t, s, "votingPower"), 200, []string{"That page of the leaderboard does not exist"}, nil},
		{"empty DAO", "/admin/ui/delegates?dao=ens", 200, []string{"ENS delegates", "No delegates yet", "ENS's delegates appear here"}, []string{`id="delegates"`}},
		{"unknown DAO", "/admin/ui/delegates?dao=nope", 404, []string{"No such DAO", `govgate does not follow a DAO "nope"`}, nil},
		{"live fragment", "/admin/ui/delegates?partial=live&dao=uniswap&sort=votes", 200, []string{`id="delegates"`, "Leaderboard by votes cast"}, []string{"<html"}},

		{"delegate", "/admin/ui/delegates/uniswap/" + alice, 200, []string{
			alice, "Delegate in Uniswap", "delegates its own tokens to itself since block #21862200",
			"26.2M", "43.5%", "of 60.2M delegated in Uniswap", "50%", "3 votes on 6 proposals since it first held power", ">13<", "itself included",
			`id="delegators"`, "itself", "block #21862200", `id="votes"`,
			`href="/admin/ui/proposals/uniswap/84">Activate the fee switch on v3 pools</a>`, "pstate-executed", "pstate-defeated", "vote-for", "vote-against",
			"Grants brought the v4 hooks ecosystem.", "block #21863110",
		}, []string{"Older votes", "More delegators", "Deploy Uniswap v4 on Unichain"}},
		{"address in lower case", "/admin/ui/delegates/uniswap/" + lower, 200, []string{alice, "26.2M"}, nil},
		{"delegate to someone else", "/admin/ui/delegates/uniswap/" + carol, 200, []string{"5 votes on 6 proposals", "Deploy Uniswap v4 on Unichain", "pstate-active", "pstate-queued", "Unichain is where the next users are."}, nil},
		{"delegate without power", "/admin/ui/delegates/uniswap/" + yuri, 200, []string{"0%", "No votes yet", "0x9f8F…79A2", "does not delegate its own tokens"}, nil},
		{"power taken away", "/admin/ui/delegates/uniswap/" + erin, 200, []string{"9M", "2 votes on 3 proposals", "first held power at #21867000", "Ask for a smaller first tranche."}, nil},
		{"a delegator only", "/admin/ui/delegates/uniswap/" + whale1, 404, []string{"Not a delegate", "It delegates its own votes to", `href="/admin/ui/delegates/uniswap/` + carol + `"`}, nil},
		{"an unknown account", "/admin/ui/delegates/uniswap/0x000000000000000000000000000000000000dEaD", 404, []string{"Not a delegate", "Check the address", `href="/admin/ui/delegates?dao=uniswap"`}, nil},
		{"not an address", "/admin/ui/delegates/uniswap/0x8E4E", 404, []string{"No such delegate", "0x and 40 hex digits"}, nil},
		{"unknown DAO of a delegate", "/admin/ui/delegates/nope/" + alice, 404, []string{"No such DAO"}, nil},
		{"a DAO where it is no delegate", "/admin/ui/delegates/ens/" + alice, 404, []string{"Not a delegate", "ENS's token never gave"}, nil},
		{"bad cursors are ignored", "/admin/ui/delegates/uniswap/" + alice + "?delegatorsBefore=nope&votesBefore=-3", 200, []string{"26.2M", `id="votes"`, `id="delegators"`}, []string{"Back to the"}},
		{"proposal page links voters to delegates", "/admin/ui/proposals/uniswap/86", 200, []string{`<a href="/admin/ui/delegates/uniswap/` + carol + `">0x2B1A…5fF4</a>`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := send(t, c, "GET", s.srv.URL+tt.path, nil)
			if resp.StatusCode != tt.status {
				t.Fatalf("GET %s: %d, want %d\n%s", tt.path, resp.StatusCode, tt.status, html(body))
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

// delegatesCursor returns the REST API's cursor after the first delegate
// of uniswap in an order.
func delegatesCursor(t *testing.T, s *stack, sort string) string {
	t.Helper()
	var list struct{ NextBefore *string }
	if err := s.ui.rest(context.Background(), "/uniswap/delegates?limit=1&sort="+sort, &list); err != nil || list.NextBefore == nil {
		t.Fatalf("cursor: %v", err)
	}
	return *list.NextBefore
}

// TestDelegatesOrder: each order of the leaderboard, ties by address as
// the API breaks them, ranked from 1.
func TestDelegatesOrder(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	s.seedDelegates(t)
	c, _ := signIn(t, s)
	tests := []struct {
		sort string
		want []string
	}{
		{"votingPower", []string{alice, carol, erin, bob, dave, yuri}},
		{"delegators", []string{alice, carol, erin, yuri, bob, dave}},
		{"votes", []string{carol, alice, bob, erin, dave, yuri}},
	}
	for _, tt := range tests {
		_, body := send(t, c, "GET", s.srv.URL+"/admin/ui/delegates?dao=uniswap&sort="+tt.sort, nil)
		if got := rows(body); !slices.Equal(got, tt.want) {
			t.Errorf("sort %s: %v, want %v", tt.sort, got, tt.want)
		}
		ranks := regexp.MustCompile(`<td class="num rank" data-label="Rank">(\d+)</td>`).FindAllStringSubmatch(body, -1)
		if len(ranks) != 6 || ranks[0][1] != "1" || ranks[5][1] != "6" {
			t.Errorf("sort %s: ranks %v", tt.sort, ranks)
		}
		if n := strings.Count(body, `aria-sort="descending"`); n != 1 || !strings.Contains(body, `aria-sort="descending"><a href="`) || !strings.Contains(body, `data-sort="`+tt.sort+`">`) {
			t.Errorf("sort %s: %d headers marked sorted", tt.sort, n)
		}
	}
}

// TestDelegatesPaging pages through each order two delegates at a time
// with the API's cursor: every delegate once, ranks running on.
func TestDelegatesPaging(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	s.seedDelegates(t)
	s.ui.perPage = 2
	c, _ := signIn(t, s)
	older := regexp.MustCompile(`id="older" href="([^"]+)"`)
	rank := regexp.MustCompile(`data-label="Rank">([^<]+)</td>`)
	for _, sort := range []string{"votingPower", "delegators", "votes"} {
		path := "/admin/ui/delegates?dao=uniswap&sort=" + sort
		var seen, ranks []string
		for pages := 0; path != ""; pages++ {
			if pages > 3 {
				t.Fatalf("%s: more pages than delegates", sort)
			}
			_, body := send(t, c, "GET", s.srv.URL+strings.ReplaceAll(path, "&amp;", "&"), nil)
			seen = append(seen, rows(body)...)
			for _, m := range rank.FindAllStringSubmatch(body, -1) {
				ranks = append(ranks, m[1])
			}
			if pages > 0 && !strings.Contains(body, `id="first"`) {
				t.Errorf("%s page %d: no way back to the top", sort, pages+1)
			}
			path = ""
			if m := older.FindStringSubmatch(body); m != nil {
				path = m[1]
				if !strings.Contains(path, "sort="+sort) && sort != "votingPower" {
					t.Errorf("%s: the next page forgets the order: %s", sort, path)
				}
			}
		}
		slices.Sort(seen)
		if len(seen) != 6 || len(slices.Compact(seen)) != 6 {
			t.Errorf("%s: paging showed %v", sort, seen)
		}
		if !slices.Equal(ranks, []string{"1", "2", "3", "4", "5", "6"}) {
			t.Errorf("%s: ranks %v", sort, ranks)
		}
	}
	// A later page without its start: the rows, ranks unknown.
	_, body := send(t, c, "GET", s.srv.URL+"/admin/ui/delegates?dao=uniswap&before="+delegatesCursor(t, s, "votingPower"), nil)
	if got := rows(body); len(got) != 2 || got[0] != carol || !strings.Contains(body, `data-label="Rank">—</td>`) {
		t.Errorf("a page without its start: %v", got)
	}
}

// TestDelegatePagePaging pages alice's thirteen delegators and carol's five
// votes, each list keeping the other's place.
func TestDelegatePagePaging(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	s.seedDelegates(t)
	s.ui.detailRows = 5
	c, _ := signIn(t, s)
	next := func(body, id string) string {
		m := regexp.MustCompile(`id="` + id + `" href="([^"]+)"`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return strings.ReplaceAll(m[1], "&amp;", "&")
	}
	delegators := regexp.MustCompile(`<tr data-address="(0x[0-9a-fA-F]{40})">`)
	path := "/admin/ui/delegates/uniswap/" + alice
	var seen []string
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("more pages than delegators")
		}
		_, body := send(t, c, "GET", s.srv.URL+path, nil)
		for _, m := range delegators.FindAllStringSubmatch(body, -1) {
			seen = append(seen, m[1])
		}
		path = next(body, "older-delegators")
		if path != "" && !strings.HasSuffix(path, "#delegators") {
			t.Errorf("the next delegators do not scroll to them: %s", path)
		}
	}
	if len(seen) != 13 || !slices.IsSorted(seen) || !slices.Contains(seen, alice) || !slices.Contains(seen, small(11)) {
		t.Fatalf("alice's delegators: %d %v", len(seen), seen)
	}

	s.ui.detailRows = 2
	titles := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`href="/admin/ui/proposals/uniswap/(\d+)"`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	// carol's five votes, newest first, two at a time.
	var votes []string
	path = "/admin/ui/delegates/uniswap/" + carol
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("more pages than votes")
		}
		_, body := send(t, c, "GET", s.srv.URL+path, nil)
		votes = append(votes, titles(body)...)
		path = next(body, "older-votes")
		if path != "" && !strings.HasSuffix(path, "#votes") {
			t.Errorf("the older votes do not scroll to them: %s", path)
		}
	}
	if !slices.Equal(votes, []string{"86", "85", "84", "82", "81"}) {
		t.Fatalf("carol's votes: %v", votes)
	}
	// alice's older votes, then her next delegators: the votes stay where
	// they were.
	_, body := send(t, c, "GET", s.srv.URL+"/admin/ui/delegates/uniswap/"+alice, nil)
	if got := titles(body); !slices.Equal(got, []string{"84", "82"}) {
		t.Fatalf("alice's newest votes: %v", got)
	}
	_, body = send(t, c, "GET", s.srv.URL+next(body, "older-votes"), nil)
	if got := titles(body); !slices.Equal(got, []string{"81"}) || strings.Contains(body, `id="older-votes"`) || !strings.Contains(body, "Back to the newest") {
		t.Fatalf("alice's oldest vote: %v", got)
	}
	more := next(body, "older-delegators")
	if !strings.Contains(more, "votesBefore=") || !strings.Contains(more, "delegatorsBefore=") {
		t.Fatalf("paging delegators drops the votes' place: %s", more)
	}
	_, body = send(t, c, "GET", s.srv.URL+more, nil)
	if got := titles(body); !slices.Equal(got, []string{"81"}) {
		t.Fatalf("votes after paging the delegators: %v", got)
	}
	if got := delegators.FindAllStringSubmatch(body, -1); len(got) != 2 || got[0][1] != seen[2] {
		t.Fatalf("alice's second page of delegators: %v, want from %s", got, seen[2])
	}
}

// TestDelegatesEscaping: on-chain text (proposal titles, vote reasons)
// on the delegate page is escaped.
func TestDelegatesEscaping(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	evil := `<img src=x onerror="alert(1)">`
	tok := &votingToken{dao: "ens", chainID: 1, balance: map[string]*big.Int{}, delegate: map[string]string{}, votes: map[string]*big.Int{},
		timeOf: func(b uint64) time.Time { return headTime.Add(-time.Duration(1000-b) * 12 * time.Second) }}
	tok.at(10).mint(alice, 100).delegateTo(alice, alice)
	p := core.Proposal{DAO: "ens", ChainID: 1, ProposalID: "7", Proposer: alice, Title: "Pay " + evil, Description: "# Pay " + evil + "\n\n<script>alert(2)</script>",
		VoteStart: 100, VoteEnd: 200, Clock: core.ClockBlockNumber, State: core.ProposalDefeated, ForVotes: "0", AgainstVotes: "100", AbstainVotes: "0",
		CreatedBlock: 90, CreatedTx: fmt.Sprintf("0x%064x", 1), UpdatedBlock: 201}
	v := core.Vote{DAO: "ens", ChainID: 1, ProposalID: "7", Voter: alice, Support: 0, Weight: "100", Reason: "no </td><script>alert(3)</script>",
		BlockNumber: 120, BlockHash: fmt.Sprintf("0x%064x", 120), TxHash: fmt.Sprintf("0x%064x", 2), CastAt: headTime}
	if err := s.st.ApplyBatch(context.Background(), core.IndexBatch{DAO: "ens", ChainID: 1, Cursor: core.Cursor{Block: 300, Hash: fmt.Sprintf("0x%064x", 300)},
		Proposals: []core.Proposal{p}, Votes: []core.Vote{v}, TokenEvents: tok.events}); err != nil {
		t.Fatal(err)
	}
	c, _ := signIn(t, s)
	resp, body := send(t, c, "GET", s.srv.URL+"/admin/ui/delegates/ens/"+alice, nil)
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "<img src=x") || strings.Contains(body, "<script>alert") {
		t.Fatalf("on-chain text is not escaped: %d\n%s", resp.StatusCode, body)
	}
	if !strings.Contains(body, "Pay &lt;img src=x") || !strings.Contains(body, "no &lt;/td&gt;&lt;script&gt;") || !strings.Contains(body, "100%") {
		t.Fatalf("the escaped text is missing:\n%s", body)
	}
	// A DAO slug or address with markup never reaches a page unescaped.
	for _, path := range []string{"/admin/ui/delegates?dao=%3Cb%3Ex", "/admin/ui/delegates/%3Cb%3Ex/" + alice, "/admin/ui/delegates/ens/%3Cb%3E"} {
		_, body := send(t, c, "GET", s.srv.URL+path, nil)
		if strings.Contains(body, "<b>x") || strings.Contains(body, "<b>") {
			t.Errorf("GET %s echoes markup:\n%s", path, body)
		}
	}
}

// TestDelegatesWithoutREST: a build that does not hand the REST API to the
// page says so instead of failing.
func TestDelegatesWithoutREST(t *testing.T) {
	t.Parallel()
	s := newStack(t, false, func(c *Config) { c.REST = nil })
	c, _ := signIn(t, s)
	resp, body := send(t, c, "GET", s.srv.URL+"/admin/ui/delegates?dao=uniswap", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "The delegate list is not available in this govgate build yet.") || strings.Contains(body, "No delegates yet") {
		t.Errorf("list without REST: %d\n%s", resp.StatusCode, html(body))
	}
	resp, body = send(t, c, "GET", s.srv.URL+"/admin/ui/delegates/uniswap/"+alice, nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "The delegate API is not available in this govgate build yet.") {
		t.Errorf("delegate without REST: %d\n%s", resp.StatusCode, html(body))
	}
}
