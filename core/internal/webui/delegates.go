package webui

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
)

// ---- Delegates ----

// delegateView is a delegate with what its leaderboard row shows.
type delegateView struct {
	core.Delegate
	Rank  int    // 0 when unknown: a later page opened without its start
	Power string // compact token amount
	Share shareView
	// Participation is VotesCast over ProposalsSince as the API gives it,
	// "" when no proposal was created since the delegate first held power.
	Participation string
}

// shareView is a share of the DAO's total delegated power.
type shareView struct {
	Pct string // "43.5%"
	W   string // the bar's width, 0 to 100
}

func shareOf(f float64) shareView {
	if math.IsNaN(f) || f < 0 {
		f = 0
	}
	f = math.Min(f, 1)
	return shareView{Pct: pct(f), W: trimFloat(f*100, 3)}
}

func viewDelegate(d core.Delegate, rank int) delegateView {
	v := delegateView{Delegate: d, Rank: rank, Power: tokens(d.VotingPower), Share: shareOf(d.Share)}
	v.Address = checksummed(d.Address)
	if d.ProposalsSince > 0 {
		v.Participation = trimFloat(math.Min(d.Participation, 1)*100, 0) + "%"
	}
	return v
}

// checksummed returns a in its EIP-55 form; text that is not an address
// comes back as it is.
func checksummed(a string) string {
	if !common.IsHexAddress(a) {
		return a
	}
	return common.HexToAddress(a).Hex()
}

// addressParam reads an address from a URL in any case, EIP-55 out.
func addressParam(s string) (string, bool) {
	if len(s) != 42 || !common.IsHexAddress(s) {
		return "", false
	}
	return common.HexToAddress(s).Hex(), true
}

// sortOption is one order of the leaderboard: the REST API's name for it,
// its label and how a caption says it.
type sortOption struct{ Value, Label, Caption string }

// delegateSorts are the leaderboard's orders.
var delegateSorts = []sortOption{
	{core.SortVotingPower, "Voting power", "by voting power"},
	{core.SortDelegators, "Delegators", "by delegators"},
	{core.SortVotes, "Votes cast", "by votes cast"},
}

func validSort(s string) bool {
	for _, o := range delegateSorts {
		if o.Value == s {
			return true
		}
	}
	return false
}

type delegatesData struct {
	DAOs    []core.DAO
	DAO     string
	DAOName string
	Sort    string
	Sorts   []sortOption
	Items   []delegateView
	// Total is the DAO's total delegated power, compact; TotalRaw exact.
	Total, TotalRaw string
	Before          string // the API's cursor of this page, "" on the first
	Start           int    // rank of the page's first row; 0 when unknown
	Next            string // the API's cursor of the next page
	Note            string
	LiveSrc         string
	Updated         time.Time
}

// maxCursor bounds a before cursor taken from a URL; the API's are about
// 130 characters.
const maxCursor = 512

func (u *UI) delegates(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	q := r.URL.Query()
	d := delegatesData{DAO: q.Get("dao"), Sort: q.Get("sort"), Sorts: delegateSorts, Updated: u.now()}
	if !validSort(d.Sort) {
		d.Sort = core.SortVotingPower
	}
	daos, err := u.daoList(ctx)
	d.DAOs = daos
	if err != nil {
		d.Note = userMessage(err, "The DAO list")
	}
	switch {
	case d.DAO == "" && len(daos) > 0:
		// Delegates belong to one DAO's token: without a choice, the first.
		d.DAO, d.DAOName = daos[0].Slug, daos[0].Name
	case d.DAO != "":
		dao, ok := daoBySlug(daos, d.DAO)
		if !ok && err == nil {
			u.renderError(w, r, http.StatusNotFound, "No such DAO", fmt.Sprintf("govgate does not follow a DAO %q. Pick one on the overview.", d.DAO))
			return
		}
		d.DAOName = dao.Name
	}
	if d.DAO == "" {
		u.render(w, r, http.StatusOK, "delegates", page{Title: "Delegates", Nav: "delegates", Data: d})
		return
	}
	d.Start = 1
	if b := q.Get("before"); b != "" && len(b) <= maxCursor {
		d.Before, d.Start = b, 0
		if n, err := strconv.Atoi(q.Get("start")); err == nil && n > 1 && n < 1e9 {
			d.Start = n
		}
	}
	var list struct {
		Items            []core.Delegate
		NextBefore       *string
		TotalVotingPower string
	}
	err = u.rest(ctx, d.listPath(u.perPage), &list)
	if e, ok := err.(*apiError); ok && e.Status == http.StatusUnprocessableEntity && d.Before != "" {
		// A cursor of another order, or edited by hand: the first page
		// instead, and say so.
		d.Before, d.Start = "", 1
		d.Note = "That page of the leaderboard does not exist (the link is from another order or was edited); here is the first page."
		err = u.rest(ctx, d.listPath(u.perPage), &list)
	}
	if err != nil {
		d.Note = userMessage(err, "The delegate list")
	}
	for i, it := range list.Items {
		rank := 0
		if d.Start > 0 {
			rank = d.Start + i
		}
		d.Items = append(d.Items, viewDelegate(it, rank))
	}
	if list.NextBefore != nil {
		d.Next = *list.NextBefore
	}
	if err == nil {
		d.TotalRaw, d.Total = list.TotalVotingPower, tokens(list.TotalVotingPower)
	}
	d.LiveSrc = "/admin/ui/delegates?partial=live&" + d.query(d.Before, d.Start).Encode()
	u.render(w, r, http.StatusOK, "delegates", page{Title: d.DAOName + " delegates", Nav: "delegates", Data: d})
}

// listPath is the REST API's address of the page d shows.
func (d delegatesData) listPath(limit int) string {
	v := url.Values{"sort": {d.Sort}, "limit": {strconv.Itoa(limit)}}
	if d.Before != "" {
		v.Set("before", d.Before)
	}
	return "/" + url.PathEscape(d.DAO) + "/delegates?" + v.Encode()
}

func (d delegatesData) query(before string, start int) url.Values {
	v := url.Values{"dao": {d.DAO}}
	if d.Sort != core.SortVotingPower {
		v.Set("sort", d.Sort)
	}
	if before != "" {
		v.Set("before", before)
		if start > 0 {
			v.Set("start", strconv.Itoa(start))
		}
	}
	return v
}

// Older is the address of the next page.
func (d delegatesData) Older() string {
	start := 0
	if d.Start > 0 {
		start = d.Start + len(d.Items)
	}
	return "/admin/ui/delegates?" + d.query(d.Next, start).Encode()
}

// First is the address of the first page in d's order.
func (d delegatesData) First() string {
	return "/admin/ui/delegates?" + d.query("", 0).Encode()
}

// SortedBy is the address of the first page in another order.
func (d delegatesData) SortedBy(sort string) string {
	d.Sort = sort
	return d.First()
}

// SortCaption says how the list is ordered.
func (d delegatesData) SortCaption() string {
	for _, o := range delegateSorts {
		if o.Value == d.Sort {
			return o.Caption
		}
	}
	return ""
}

// ---- One delegate ----

type delegateVoteView struct {
	core.VoteWithProposal
	Side   string // for, against, abstain
	Amount string
}

type delegateData struct {
	DAO core.DAO
	D   delegateView
	// Total is the DAO's total delegated power from the power route,
	// compact; "" when it could not be read.
	Total, TotalRaw string
	// Own is whom the delegate gives its own tokens' votes to; nil when it
	// never delegated them.
	Own        *core.Delegation
	Delegators []core.Delegation

	DelegatorsBefore, DelegatorsNext string
	Votes                            []delegateVoteView
	VotesBefore                      int64
	VotesNext                        *int64

	// Missing is set when the address is no delegate of the DAO;
	// DelegatesTo then says whom it delegates to, if anyone.
	Missing     bool
	Address     string
	DelegatesTo string
}

// delegateRows is how many delegators and votes the delegate page lists
// at once.
const delegateRows = 50

func (u *UI) delegate(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	slug := r.PathValue("dao")
	daos, derr := u.daoList(ctx)
	dao, known := daoBySlug(daos, slug)
	addr, isAddr := addressParam(r.PathValue("address"))
	switch {
	case !known && derr == nil:
		u.renderError(w, r, http.StatusNotFound, "No such DAO", fmt.Sprintf("govgate does not follow a DAO %q. Pick one on the overview.", slug))
		return
	case !isAddr:
		u.renderError(w, r, http.StatusNotFound, "No such delegate", "Delegate pages are /admin/ui/delegates/DAO/ADDRESS with an address of 0x and 40 hex digits. Pick one from the leaderboard.")
		return
	}
	d := delegateData{DAO: dao, Address: addr}
	q := r.URL.Query()
	v := url.Values{"limit": {strconv.Itoa(u.detailRows)}}
	if b, ok := addressParam(q.Get("delegatorsBefore")); ok {
		d.DelegatorsBefore = b
		v.Set("delegatorsBefore", b)
	}
	if b, err := strconv.ParseInt(q.Get("votesBefore"), 10, 64); err == nil && b > 0 {
		d.VotesBefore = b
		v.Set("votesBefore", strconv.FormatInt(b, 10))
	}
	base := "/" + url.PathEscape(slug)
	var one struct {
		Delegate   core.Delegate
		Delegators struct {
			Items      []core.Delegation
			NextBefore *string
		}
		Votes struct {
			Items      []core.VoteWithProposal
			NextBefore *int64
		}
	}
	var account struct {
		Delegation *core.Delegation
	}
	err := u.rest(ctx, base+"/delegates/"+addr+"?"+v.Encode(), &one)
	if err != nil {
		if e, ok := err.(*apiError); ok && e.Code == core.ECodeNotFound && !missingRoute(err) {
			d.Missing = true
			if u.rest(ctx, base+"/accounts/"+addr, &account) == nil && account.Delegation != nil && account.Delegation.Delegate != zeroAddress {
				d.DelegatesTo = checksummed(account.Delegation.Delegate)
			}
			u.render(w, r, http.StatusNotFound, "delegate", page{Title: "No such delegate", Nav: "delegates", Data: d})
			return
		}
		u.renderError(w, r, http.StatusBadGateway, "Could not load the delegate", userMessage(err, "The delegate API"))
		return
	}
	d.D = viewDelegate(one.Delegate, 0)
	var power struct{ TotalVotingPower string }
	if u.rest(ctx, base+"/power?limit=1", &power) == nil {
		d.TotalRaw, d.Total = power.TotalVotingPower, tokens(power.TotalVotingPower)
	}
	if u.rest(ctx, base+"/accounts/"+addr, &account) == nil && account.Delegation != nil && account.Delegation.Delegate != zeroAddress {
		own := *account.Delegation
		own.Delegate = checksummed(own.Delegate)
		d.Own = &own
	}
	for _, dl := range one.Delegators.Items {
		dl.Delegator = checksummed(dl.Delegator)
		d.Delegators = append(d.Delegators, dl)
	}
	if one.Delegators.NextBefore != nil {
		d.DelegatorsNext = *one.Delegators.NextBefore
	}
	for _, vt := range one.Votes.Items {
		d.Votes = append(d.Votes, delegateVoteView{VoteWithProposal: vt, Side: support(vt.Support), Amount: tokens(vt.Weight)})
	}
	d.VotesNext = one.Votes.NextBefore
	u.render(w, r, http.StatusOK, "delegate", page{Title: "Delegate " + shortAddr(addr) + " · " + dao.Name, Nav: "delegates", Data: d})
}

const zeroAddress = "0x0000000000000000000000000000000000000000"

// Path is the delegate page's own address.
func (d delegateData) Path() string {
	return "/admin/ui/delegates/" + url.PathEscape(d.DAO.Slug) + "/" + d.Address
}

// page returns the delegate page with these cursors, at anchor.
func (d delegateData) page(delegators string, votes int64, anchor string) string {
	v := url.Values{}
	if delegators != "" {
		v.Set("delegatorsBefore", delegators)
	}
	if votes > 0 {
		v.Set("votesBefore", strconv.FormatInt(votes, 10))
	}
	p := d.Path()
	if len(v) > 0 {
		p += "?" + v.Encode()
	}
	return p + "#" + anchor
}

// OlderDelegators, FirstDelegators, OlderVotes and NewestVotes page one
// list and keep the other where it is.
func (d delegateData) OlderDelegators() string {
	return d.page(d.DelegatorsNext, d.VotesBefore, "delegators")
}

func (d delegateData) FirstDelegators() string { return d.page("", d.VotesBefore, "delegators") }

func (d delegateData) OlderVotes() string {
	var next int64
	if d.VotesNext != nil {
		next = *d.VotesNext
	}
	return d.page(d.DelegatorsBefore, next, "votes")
}

func (d delegateData) NewestVotes() string { return d.page(d.DelegatorsBefore, 0, "votes") }
