package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/govgate/govgate/core"
)

// ---- Proposals ----

// assumedBlockSeconds is the block time "time left" assumes on a block
// clock when the health snapshot gives no way to measure it: Ethereum's
// slot time.
const assumedBlockSeconds = 12

// chainClock is where a DAO's chain stands, read from its health snapshot:
// the reference for "time left", "starts in" and a queued proposal's ETA.
type chainClock struct {
	Head     uint64
	HeadTime time.Time // the head's block time; zero when unknown
	// Confirmed is the confirmed head the indexer works to (or, without
	// one, the last indexed block, then the head).
	Confirmed uint64
	// SecPerBlock is the chain's block time: measured when Measured, else
	// assumedBlockSeconds.
	SecPerBlock float64
	Measured    bool
}

func clockOf(m map[string]any) chainClock {
	c := chainClock{SecPerBlock: assumedBlockSeconds}
	if m == nil {
		return c
	}
	head, idx := checkOf(m, "chainHead"), checkOf(m, "indexer")
	if v, ok := num(head, "number"); ok && v > 0 {
		c.Head = uint64(v)
	}
	if t, err := time.Parse(time.RFC3339Nano, str(head, "timestamp")); err == nil {
		c.HeadTime = t
	}
	for _, k := range []string{"confirmedHead", "lastIndexedBlock"} {
		if v, ok := num(idx, k); ok && v > 0 {
			c.Confirmed = uint64(v)
			break
		}
	}
	if c.Confirmed == 0 {
		c.Confirmed = c.Head
	}
	// The lag in blocks and the lag in seconds are the same two blocks (the
	// last indexed one and the confirmed head) counted in numbers and in
	// block times: their ratio is the chain's block time.
	lb, okb := num(idx, "lagBlocks")
	ls, oks := num(idx, "lagSeconds")
	if okb && oks && lb >= 1 && ls > 0 {
		c.SecPerBlock, c.Measured = ls/lb, true
	}
	return c
}

// blockTime says how a block count became a duration.
func (c chainClock) blockTime() string {
	if c.Measured {
		return "at " + strconv.FormatFloat(c.SecPerBlock, 'g', 3, 64) + " s a block, measured from the health check's block times"
	}
	return fmt.Sprintf("at an assumed %d s a block", assumedBlockSeconds)
}

// proposalView is a proposal with what its row shows.
type proposalView struct {
	core.Proposal
	DAOName string
	Tally   tallyView
	Quorum  quorumView
	When    *timingView
}

type tallyView struct {
	For, Against, Abstain voteShare
	Total                 string
	None                  bool // no weight cast yet
}

type voteShare struct {
	Raw    string // decimal, as served
	Amount string // compact token amount
	Pct    string // share of the votes cast, "62.5%"
	X, W   string // the bar segment's offset and width, 0 to 100
}

type quorumView struct {
	Known   bool // false while pending: the quorum is read at the snapshot
	Reached bool
	Counted string // compact token amounts
	Needed  string
	Pct     int    // of the quorum; may pass 100
	W       string // bar width, 0 to 100
	Rule    string // which votes count toward quorum
	Ended   bool   // unknown for good: canceled before the snapshot
}

// timingView is the time-driven part of a row: time left to vote, time
// until voting starts, or a queued proposal's ETA.
type timingView struct {
	Label, Value, Note string
	Soon               bool // under an hour
}

// countsAbstain reports whether abstain votes count toward the quorum of a
// governor of kind k: OpenZeppelin's GovernorCountingSimple counts for and
// abstain; GovernorBravo and GovernorAlpha count for votes only.
func countsAbstain(k core.GovernorKind) bool {
	return k != core.KindGovernorBravo && k != core.KindGovernorAlpha
}

func viewProposal(p core.Proposal, dao core.DAO, c chainClock, now time.Time) proposalView {
	v := proposalView{Proposal: p, DAOName: dao.Name}
	if v.DAOName == "" {
		v.DAOName = p.DAO
	}
	v.Tally = tallyOf(p)
	v.Quorum = quorumOf(p, countsAbstain(dao.Kind))
	v.When = timingOf(p, c, now)
	return v
}

func decimal(s string) *big.Int {
	n, ok := new(big.Int).SetString(strings.TrimSpace(s), 10)
	if !ok || n.Sign() < 0 {
		return new(big.Int)
	}
	return n
}

// ratio is a/b as a float, 0 when b is 0.
func ratio(a, b *big.Int) float64 {
	if b.Sign() == 0 {
		return 0
	}
	f, _ := new(big.Rat).SetFrac(a, b).Float64()
	return f
}

func pct(f float64) string {
	if f > 0 && f < 0.0005 {
		return "< 0.1%"
	}
	return trimFloat(f*100, 1) + "%"
}

func tallyOf(p core.Proposal) tallyView {
	fv, av, bv := decimal(p.ForVotes), decimal(p.AgainstVotes), decimal(p.AbstainVotes)
	total := new(big.Int).Add(fv, av)
	total.Add(total, bv)
	t := tallyView{Total: tokens(total.String()), None: total.Sign() == 0}
	x := 0.0
	share := func(n *big.Int) voteShare {
		r := ratio(n, total)
		s := voteShare{Raw: n.String(), Amount: tokens(n.String()), Pct: pct(r), X: trimFloat(x, 3), W: trimFloat(r*100, 3)}
		x += r * 100
		return s
	}
	t.For, t.Against, t.Abstain = share(fv), share(av), share(bv)
	return t
}

func quorumOf(p core.Proposal, abstain bool) quorumView {
	q := quorumView{Reached: p.QuorumReached, Rule: "for votes"}
	counted := decimal(p.ForVotes)
	if abstain {
		counted.Add(counted, decimal(p.AbstainVotes))
		q.Rule = "for + abstain"
	}
	q.Counted = tokens(counted.String())
	if p.Quorum == nil {
		q.Ended = p.State != core.ProposalPending && p.State != ""
		return q
	}
	need := decimal(*p.Quorum)
	q.Known, q.Needed = true, tokens(need.String())
	r := 1.0
	if need.Sign() > 0 {
		r = ratio(counted, need)
	}
	q.Pct = int(math.Floor(r * 100))
	q.W = trimFloat(math.Min(r, 1)*100, 3)
	return q
}

// timingOf says how long an active proposal has left, when a pending one
// starts, and when a queued one can be executed, all against the DAO's
// chain: its head's block time on a timestamp clock, its confirmed head and
// block time on a block clock.
func timingOf(p core.Proposal, c chainClock, now time.Time) *timingView {
	ref, refNote := c.HeadTime, "by the chain head's block time"
	if ref.IsZero() {
		ref, refNote = now, "by this server's clock (no chain head time)"
	}
	until := func(point uint64) (secs float64, note string, approx bool) {
		if p.Clock == core.ClockTimestamp {
			at := time.Unix(int64(point), 0).UTC()
			return at.Sub(ref).Seconds(), at.Format("Jan 2, 15:04 UTC") + ", " + refNote, false
		}
		var blocks uint64
		if point > c.Confirmed {
			blocks = point - c.Confirmed
		}
		return float64(blocks) * c.SecPerBlock, fmt.Sprintf("%s blocks to #%d, %s", strconv.FormatUint(blocks, 10), point, c.blockTime()), true
	}
	around := func(secs float64, approx bool) string {
		s := seconds(secs)
		if approx {
			return "≈ " + s
		}
		return s
	}
	if p.Clock != core.ClockTimestamp && c.Confirmed == 0 && (p.State == core.ProposalActive || p.State == core.ProposalPending) {
		label := "Time left"
		if p.State == core.ProposalPending {
			label = "Voting starts"
		}
		point := p.VoteEnd
		if p.State == core.ProposalPending {
			point = p.VoteStart
		}
		return &timingView{Label: label, Value: "at block #" + strconv.FormatUint(point, 10), Note: "no chain head in the health check yet to count from"}
	}
	switch p.State {
	case core.ProposalActive:
		secs, note, approx := until(p.VoteEnd)
		t := &timingView{Label: "Time left", Note: note, Soon: secs < 3600}
		if secs <= 0 {
			t.Value = "Closing now"
		} else {
			t.Value = around(secs, approx) + " left"
		}
		return t
	case core.ProposalPending:
		secs, note, approx := until(p.VoteStart)
		t := &timingView{Label: "Voting starts", Note: note}
		if secs <= 0 {
			t.Value = "Starting now"
		} else {
			t.Value = "in " + around(secs, approx)
		}
		return t
	case core.ProposalQueued:
		if p.ETA == 0 {
			return nil
		}
		eta := time.Unix(int64(p.ETA), 0).UTC()
		t := &timingView{Label: "ETA", Note: eta.Format("Jan 2, 15:04 UTC") + ", " + refNote}
		if d := eta.Sub(ref).Seconds(); d > 0 {
			t.Value = "executable in " + seconds(d)
		} else {
			t.Value = "executable now"
		}
		return t
	}
	return nil
}

// tokens renders a decimal vote weight as a compact token amount, taking
// the 18 decimals of nearly every governance token.
func tokens(dec string) string {
	n, ok := new(big.Int).SetString(strings.TrimSpace(dec), 10)
	if !ok {
		return dec
	}
	if n.Sign() == 0 {
		return "0"
	}
	f, _ := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)).Float64()
	switch {
	case f >= 1e9:
		return trimFloat(f/1e9, 2) + "B"
	case f >= 1e6:
		return trimFloat(f/1e6, 2) + "M"
	case f >= 1e3:
		return trimFloat(f/1e3, 1) + "K"
	case f >= 0.01:
		return trimFloat(f, 2)
	}
	return "< 0.01"
}

// trimFloat formats f with at most prec decimals and no trailing zeros.
func trimFloat(f float64, prec int) string {
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// shortAddr is 0x1234…abcd.
func shortAddr(a string) string {
	if len(a) <= 12 {
		return a
	}
	return a[:6] + "…" + a[len(a)-4:]
}

// stateIcon gives each proposal state a symbol besides its colour.
func stateIcon(state any) string {
	switch fmt.Sprint(state) {
	case core.ProposalPending:
		return "◷"
	case core.ProposalActive:
		return "●"
	case core.ProposalCanceled:
		return "⊘"
	case core.ProposalDefeated:
		return "✕"
	case core.ProposalSucceeded:
		return "✓"
	case core.ProposalQueued:
		return "◔"
	case core.ProposalExpired:
		return "◌"
	case core.ProposalExecuted:
		return "✔"
	}
	return "–"
}

// support names a vote's support value as the governors' counting module
// does.
func support(v uint8) string {
	switch v {
	case 0:
		return "against"
	case 1:
		return "for"
	case 2:
		return "abstain"
	case core.SupportFractional:
		return "split"
	}
	return "support " + strconv.Itoa(int(v))
}

// daoList returns the configured DAOs.
func (u *UI) daoList(ctx context.Context) ([]core.DAO, error) {
	var daos struct{ Items []core.DAO }
	err := u.get(ctx, "/admin/api/daos", &daos)
	return daos.Items, err
}

// healthSnaps returns each DAO's health snapshot by slug.
func (u *UI) healthSnaps(ctx context.Context) (map[string]map[string]any, error) {
	var health struct{ Items []rawJSON }
	err := u.get(ctx, "/admin/api/health", &health)
	snaps := map[string]map[string]any{}
	for _, raw := range health.Items {
		if m := decodeNumbers(raw); m != nil {
			snaps[str(m, "dao")] = m
		}
	}
	return snaps, err
}

func daoBySlug(daos []core.DAO, slug string) (core.DAO, bool) {
	for _, d := range daos {
		if d.Slug == slug {
			return d, true
		}
	}
	return core.DAO{Slug: slug, Name: slug}, false
}

func (u *UI) viewProposals(items []core.Proposal, daos []core.DAO, snaps map[string]map[string]any) []proposalView {
	now := u.now()
	out := make([]proposalView, 0, len(items))
	for _, p := range items {
		dao, _ := daoBySlug(daos, p.DAO)
		out = append(out, viewProposal(p, dao, clockOf(snaps[p.DAO]), now))
	}
	return out
}

type proposalsData struct {
	DAOs       []core.DAO
	DAO        string // "" for every DAO
	DAOName    string
	State      string // "" for every state
	States     []string
	Items      []proposalView
	Before     int64
	Next       *int64
	Note       string
	HealthNote string
	LiveSrc    string
	Updated    time.Time
}

// proposalsPage is how many proposals a page lists.
const proposalsPage = 20

func (u *UI) proposals(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	q := r.URL.Query()
	d := proposalsData{DAO: q.Get("dao"), State: q.Get("state"), States: core.ProposalStates, Updated: u.now()}
	if !core.ValidProposalState(d.State) {
		d.State = ""
	}
	var err error
	if d.DAOs, err = u.daoList(ctx); err != nil {
		d.Note = userMessage(err, "The DAO list")
	}
	if d.DAO != "" {
		dao, ok := daoBySlug(d.DAOs, d.DAO)
		if !ok {
			u.renderError(w, r, http.StatusNotFound, "No such DAO", fmt.Sprintf("govgate does not follow a DAO %q. Pick one on the overview.", d.DAO))
			return
		}
		d.DAOName = dao.Name
	}
	v := url.Values{}
	if d.DAO != "" {
		v.Set("dao", d.DAO)
	}
	if d.State != "" {
		v.Set("state", d.State)
	}
	if b, err := strconv.ParseInt(q.Get("before"), 10, 64); err == nil && b > 0 {
		d.Before = b
		v.Set("before", strconv.FormatInt(b, 10))
	}
	d.LiveSrc = "/admin/ui/proposals?partial=live&" + v.Encode()
	v.Del("dao")
	v.Set("limit", strconv.Itoa(u.perPage))
	path := "/proposals?"
	if d.DAO != "" {
		path = "/" + url.PathEscape(d.DAO) + "/proposals?"
	}
	var list struct {
		Items      []core.Proposal
		NextBefore *int64
	}
	if err := u.rest(ctx, path+v.Encode(), &list); err != nil {
		d.Note = userMessage(err, "The proposal list")
	}
	snaps, err := u.healthSnaps(ctx)
	if err != nil && len(list.Items) > 0 {
		d.HealthNote = userMessage(err, "The health API") + " Times left assume " + strconv.Itoa(assumedBlockSeconds) + " s a block and this server's clock."
	}
	d.Items, d.Next = u.viewProposals(list.Items, d.DAOs, snaps), list.NextBefore
	title := "Proposals"
	if d.DAOName != "" {
		title = d.DAOName + " proposals"
	}
	u.render(w, r, http.StatusOK, "proposals", page{Title: title, Nav: "proposals", Data: d})
}

// Older is the address of the next page.
func (d proposalsData) Older() string {
	v := url.Values{}
	if d.DAO != "" {
		v.Set("dao", d.DAO)
	}
	if d.State != "" {
		v.Set("state", d.State)
	}
	if d.Next != nil {
		v.Set("before", strconv.FormatInt(*d.Next, 10))
	}
	return "/admin/ui/proposals?" + v.Encode()
}

type voteView struct {
	core.Vote
	Side   string // for, against, abstain, split
	Amount string
	// Parts is a split vote's weight on each side it gave weight to
	// (GovernorCountingFractional), in for, against, abstain order.
	Parts []votePart
	// Override is an OverrideVoteCast (GovernorCountingOverridable): the
	// delegator voted its own balance; Reduced, when its delegate had
	// voted, is what that took back from the delegate's side.
	Override     bool
	Reduced      string
	DelegateSide string
}

// votePart is one side of a split vote.
type votePart struct {
	Side, Amount, Raw string
}

func viewVote(vt core.Vote) voteView {
	v := voteView{Vote: vt, Side: support(vt.Support), Amount: tokens(vt.Weight), Override: vt.Kind == core.VoteKindOverride}
	if vt.Support == core.SupportFractional {
		v.Side = "split"
		for _, p := range []votePart{{"for", "", vt.ForWeight}, {"against", "", vt.AgainstWeight}, {"abstain", "", vt.AbstainWeight}} {
			if decimal(p.Raw).Sign() > 0 {
				p.Amount = tokens(p.Raw)
				v.Parts = append(v.Parts, p)
			}
		}
	}
	if v.Override && vt.DelegateSupport != nil {
		v.Reduced, v.DelegateSide = tokens(vt.ReducedWeight), support(*vt.DelegateSupport)
	}
	return v
}

// timelineView is a step of a proposal's life as the page lists it.
type timelineView struct {
	core.TimelineEntry
	Label string
}

// timelineLabels name the timeline's events for a reader.
var timelineLabels = map[string]string{
	core.TimelineCreated: "Proposed", core.TimelineActive: "Voting opened", core.TimelineExtended: "Voting extended (late quorum)",
	core.TimelineSucceeded: "Voting closed: succeeded", core.TimelineDefeated: "Voting closed: defeated", core.TimelineQueued: "Queued in the timelock",
	core.TimelineExecuted: "Executed", core.TimelineCanceled: "Canceled", core.TimelineExpired: "Expired unexecuted",
}

func viewTimeline(es []core.TimelineEntry) []timelineView {
	out := make([]timelineView, len(es))
	for i, e := range es {
		out[i] = timelineView{TimelineEntry: e, Label: timelineLabels[e.Event]}
		if out[i].Label == "" {
			out[i].Label = label(e.Event)
		}
	}
	return out
}

// voteStatsView is a proposal's vote statistics as the page shows them.
type voteStatsView struct {
	Sides  []sideStats
	Voters int64
	Total  string // compact token amount
	// QuorumShare and Turnout are percentages; "" when unknown.
	QuorumShare string
	Turnout     string
	Delegated   string // compact: the power delegated at the snapshot
}

type sideStats struct {
	Side, Amount, Raw, Share string
	Voters                   int64
}

func viewStats(st *core.VoteStats) *voteStatsView {
	if st == nil {
		return nil
	}
	v := &voteStatsView{Voters: st.Voters, Total: tokens(st.TotalWeight), Sides: []sideStats{
		{"for", tokens(st.ForWeight), st.ForWeight, pct(st.ForShare), st.VotersFor},
		{"against", tokens(st.AgainstWeight), st.AgainstWeight, pct(st.AgainstShare), st.VotersAgainst},
		{"abstain", tokens(st.AbstainWeight), st.AbstainWeight, pct(st.AbstainShare), st.VotersAbstain},
	}}
	if st.QuorumShare != nil {
		v.QuorumShare = pct(*st.QuorumShare)
	}
	if st.Turnout != nil {
		v.Turnout = pct(*st.Turnout)
	}
	if st.DelegatedAtSnapshot != nil {
		v.Delegated = tokens(*st.DelegatedAtSnapshot)
	}
	return v
}

type proposalData struct {
	DAO      core.DAO
	P        proposalView
	Votes    []voteView
	Before   int64
	Next     *int64
	Actions  []actionView
	Timeline []timelineView
	Stats    *voteStatsView
}

// actionView is a proposal's call as the page shows it: the function with
// its named arguments written out, and the calls it carries, indented.
type actionView struct {
	core.Action
	Args  []argView
	Calls []actionView
}

type argView struct {
	Name, Type, Value string
	// Full is Value with no bytes shortened, for its tooltip.
	Full string
}

// viewActions prepares decoded actions for the page.
func viewActions(as []core.Action) []actionView {
	out := make([]actionView, len(as))
	for i, a := range as {
		v := actionView{Action: a, Calls: viewActions(a.Calls)}
		for _, arg := range a.Args {
			v.Args = append(v.Args, argView{Name: arg.Name, Type: arg.Type, Value: argText(arg.Type, arg.Value, true), Full: argText(arg.Type, arg.Value, false)})
		}
		out[i] = v
	}
	return out
}

// argText writes an argument's value for reading: strings without quotes,
// arrays in brackets, a tuple's components in parentheses with their
// names; anything unexpected as its JSON. With short, long bytes show
// their ends and their length: they are mostly calls, decoded below.
func argText(typ string, raw json.RawMessage, short bool) string {
	if i := strings.LastIndexByte(typ, '['); i > 0 && strings.HasSuffix(typ, "]") {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return string(raw)
		}
		parts := make([]string, len(items))
		for j, it := range items {
			parts[j] = argText(typ[:i], it, short)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if strings.HasPrefix(typ, "(") {
		var comps []core.Arg
		if json.Unmarshal(raw, &comps) != nil {
			return string(raw)
		}
		parts := make([]string, len(comps))
		for j, c := range comps {
			parts[j] = argText(c.Type, c.Value, short)
			if c.Name != "" {
				parts[j] = c.Name + ": " + parts[j]
			}
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		if short && typ == "bytes" && len(str) > 74 {
			return fmt.Sprintf("%s…%s (%d bytes)", str[:34], str[len(str)-8:], (len(str)-2)/2)
		}
		return str
	}
	return string(raw)
}

// votesPage is how many votes the proposal page lists at once.
const votesPage = 50

func (u *UI) proposal(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	slug, id := r.PathValue("dao"), r.PathValue("id")
	daos, _ := u.daoList(ctx)
	dao, ok := daoBySlug(daos, slug)
	if !ok || !isDecimal(id) {
		u.renderError(w, r, http.StatusNotFound, "No such proposal", "Proposal pages are /admin/ui/proposals/DAO/ID with a decimal proposal id. Pick one from the proposal list.")
		return
	}
	v := url.Values{"limit": {strconv.Itoa(votesPage)}}
	d := proposalData{DAO: dao}
	if b, err := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64); err == nil && b > 0 {
		d.Before = b
		v.Set("before", strconv.FormatInt(b, 10))
	}
	var one struct {
		Proposal   core.Proposal
		Timeline   []core.TimelineEntry
		Statistics *core.VoteStats
		Votes      struct {
			Items      []core.Vote
			NextBefore *int64
		}
	}
	if err := u.rest(ctx, "/"+url.PathEscape(slug)+"/proposals/"+id+"?"+v.Encode(), &one); err != nil {
		if e, ok := err.(*apiError); ok && e.Status == http.StatusNotFound && !missingRoute(err) {
			u.renderError(w, r, http.StatusNotFound, "No such proposal", fmt.Sprintf("%s has no proposal %s that govgate has indexed. Pick one from the proposal list.", dao.Name, id))
			return
		}
		u.renderError(w, r, http.StatusBadGateway, "Could not load the proposal", userMessage(err, "The proposal API"))
		return
	}
	snaps, _ := u.healthSnaps(ctx)
	d.P = viewProposal(one.Proposal, dao, clockOf(snaps[slug]), u.now())
	for _, vt := range one.Votes.Items {
		d.Votes = append(d.Votes, viewVote(vt))
	}
	d.Timeline, d.Stats = viewTimeline(one.Timeline), viewStats(one.Statistics)
	d.Next = one.Votes.NextBefore
	p := one.Proposal
	d.Actions = viewActions(p.Actions)
	if p.Actions == nil {
		// An API without decoding: the raw calls, undecoded.
		for i, t := range p.Targets {
			a := core.Action{Target: t}
			if i < len(p.Values) {
				a.Value = p.Values[i]
			}
			if i < len(p.Signatures) {
				a.Signature = p.Signatures[i]
			}
			if i < len(p.Calldatas) {
				a.Calldata = p.Calldatas[i]
			}
			d.Actions = append(d.Actions, actionView{Action: a})
		}
	}
	title := p.Title
	if title == "" {
		title = "Proposal " + id
	}
	u.render(w, r, http.StatusOK, "proposal", page{Title: title, Nav: "proposals", Data: d})
}

// isDecimal reports whether s is a decimal number of at most 78 digits (a uint256).
func isDecimal(s string) bool {
	if s == "" || len(s) > 78 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
