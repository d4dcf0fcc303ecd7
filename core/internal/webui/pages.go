package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/govgate/govgate/core"
)

// ---- Overview ----

type overviewData struct {
	Cards      []daoCard
	HealthNote string
	Voting     []proposalView // every DAO's active proposals, newest first
	VotingNote string
	Stats      *statsView
	StatsNote  string
	DAONote    string
	Updated    time.Time
}

// daoCard is one DAO's health snapshot, read defensively: the snapshot's
// shape may grow, and a field that is missing shows as "—".
type daoCard struct {
	Slug, Name    string
	ChainID       uint64
	Status        string // pass, warn, fail or unknown
	CheckedAt     string
	HeadNumber    string
	HeadHash      string
	HeadAge       string
	IndexerStatus string
	LastIndexed   string
	LagBlocks     string
	LagSeconds    string
	DBStatus      string
	DBLatency     string
	Breaker       string
	Upstreams     []upstreamView
	Output        string // why the status is not pass
	Backfill      *backfillView
	NotifyFrom    string // first block pushed to webhooks; "" for all
}

// backfillView is a DAO's catch-up from far behind, while it lasts.
type backfillView struct {
	From, To, Done, Total string
	Pct                   int
	W                     string // bar width, 0 to 100
	EventsPerSecond       string
	BlocksPerSecond       string
	Left                  string // "" until there is a rate
}

// votingNowLimit bounds the overview's "Voting now" panel.
const votingNowLimit = 10

type upstreamView struct {
	URL, State, LastError string
	ConsecutiveFailures   string
}

type statsView struct {
	QueueDepth    int64
	OldestPending float64
	States        []stateCount
	Total         int64
}

type stateCount struct {
	State string
	N     int64
}

func (u *UI) overview(w http.ResponseWriter, r *http.Request) {
	s := u.session(r)
	if s == nil {
		if r.URL.Query().Get("partial") != "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		d := signinData{Next: localPath(r.URL.Query().Get("next"), "/admin/")}
		switch {
		case r.URL.Query().Has("signedout"):
			d.Info = "You are signed out."
		case r.URL.Query().Has("expired"):
			d.Info = "Your session has ended. Sign in again to continue."
		}
		u.renderSignin(w, r, http.StatusOK, d)
		return
	}
	ctx := r.Context()
	d := overviewData{Updated: u.now()}

	daos, err := u.daoList(ctx)
	if err != nil {
		d.DAONote = userMessage(err, "The DAO list")
	}
	snaps, err := u.healthSnaps(ctx)
	if err != nil {
		d.HealthNote = userMessage(err, "The health API")
	}
	var active struct{ Items []core.Proposal }
	if err := u.rest(ctx, "/proposals?state=active&limit="+strconv.Itoa(votingNowLimit), &active); err != nil {
		d.VotingNote = userMessage(err, "The proposal list")
	}
	d.Voting = u.viewProposals(active.Items, daos, snaps)
	seen := map[string]bool{}
	for _, dao := range daos {
		seen[dao.Slug] = true
		d.Cards = append(d.Cards, card(dao, snaps[dao.Slug]))
	}
	for slug, m := range snaps { // health for a DAO the list lacks: show it anyway
		if !seen[slug] {
			d.Cards = append(d.Cards, card(core.DAO{Slug: slug, Name: slug}, m))
		}
	}

	var st struct {
		QueueDepth           int64            `json:"queueDepth"`
		OldestPendingSeconds float64          `json:"oldestPendingSeconds"`
		DeliveriesByState    map[string]int64 `json:"deliveriesByState"`
	}
	if err := u.get(ctx, "/admin/api/stats", &st); err != nil {
		d.StatsNote = userMessage(err, "Delivery statistics")
	} else {
		sv := &statsView{QueueDepth: st.QueueDepth, OldestPending: st.OldestPendingSeconds}
		order := []string{"succeeded", "pending", "in_flight", "failed", "dropped", "canceled"}
		for _, k := range order {
			sv.States = append(sv.States, stateCount{k, st.DeliveriesByState[k]})
			sv.Total += st.DeliveriesByState[k]
		}
		var extra []string
		for k := range st.DeliveriesByState {
			if !contains(order, k) {
				extra = append(extra, k)
			}
		}
		sort.Strings(extra)
		for _, k := range extra {
			sv.States = append(sv.States, stateCount{k, st.DeliveriesByState[k]})
			sv.Total += st.DeliveriesByState[k]
		}
		d.Stats = sv
	}
	u.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Data: d})
}

func card(dao core.DAO, m map[string]any) daoCard {
	c := daoCard{Slug: dao.Slug, Name: dao.Name, ChainID: dao.ChainID, Status: "unknown"}
	if c.Name == "" {
		c.Name = dao.Slug
	}
	if m == nil {
		return c
	}
	switch st := str(m, "status"); st {
	case "pass", "warn", "fail":
		c.Status = st
	}
	if t, err := time.Parse(time.RFC3339Nano, str(m, "checkedAt")); err == nil {
		c.CheckedAt = t.UTC().Format("15:04:05 UTC")
	}
	head, idx, db, gw := checkOf(m, "chainHead"), checkOf(m, "indexer"), checkOf(m, "database"), checkOf(m, "gateway")
	c.Output = str(m, "output")
	c.HeadNumber = str(head, "number")
	if c.HeadNumber == "0" {
		c.HeadNumber = ""
	}
	c.HeadHash = str(head, "hash")
	if v, ok := num(head, "ageSeconds"); ok && c.HeadNumber != "" {
		c.HeadAge = seconds(v)
	}
	c.IndexerStatus = str(idx, "state")
	if c.IndexerStatus == "" {
		c.IndexerStatus = str(idx, "status")
	}
	c.LastIndexed = str(idx, "lastIndexedBlock")
	c.LagBlocks = str(idx, "lagBlocks")
	if v, ok := num(idx, "lagSeconds"); ok {
		c.LagSeconds = seconds(v)
	}
	if n := str(idx, "notifyFromBlock"); n != "" && n != "0" {
		c.NotifyFrom = n
	}
	c.Backfill = backfillOf(idx)
	c.DBStatus = str(db, "status")
	if v, ok := num(db, "latencyMs"); ok {
		c.DBLatency = strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	}
	if ups, ok := lookup(gw, "upstreams").([]any); ok {
		for _, x := range ups {
			um, _ := x.(map[string]any)
			if um == nil {
				continue
			}
			c.Upstreams = append(c.Upstreams, upstreamView{URL: str(um, "url"), State: str(um, "state"), LastError: str(um, "lastError"), ConsecutiveFailures: str(um, "consecutiveFailures")})
		}
	}
	c.Breaker = str(gw, "state")
	if c.Breaker == "" {
		c.Breaker = breakerOf(c.Upstreams)
	}
	return c
}

// checkOf returns one check of a health snapshot: under "checks"
// (core/internal/health) or at the top level (the shape first agreed on).
func checkOf(m map[string]any, name string) map[string]any {
	if v, ok := lookup(m, "checks", name).(map[string]any); ok {
		return v
	}
	v, _ := lookup(m, name).(map[string]any)
	return v
}

func backfillOf(idx map[string]any) *backfillView {
	b, _ := lookup(idx, "backfill").(map[string]any)
	if b == nil {
		return nil
	}
	done, _ := num(b, "blocksDone")
	total, ok := num(b, "blocksTotal")
	if !ok || total <= 0 {
		return nil
	}
	r := math.Min(math.Max(done/total, 0), 1)
	v := &backfillView{From: str(b, "fromBlock"), To: str(b, "toBlock"), Done: thousands(done), Total: thousands(total),
		Pct: int(math.Round(r * 100)), W: trimFloat(r*100, 2)}
	if v.Pct == 100 && done < total { // as the health output rounds, but never done early
		v.Pct = 99
	}
	if e, ok := num(b, "eventsPerSecond"); ok {
		v.EventsPerSecond = trimFloat(e, 1)
	}
	if e, ok := num(b, "blocksPerSecond"); ok {
		v.BlocksPerSecond = thousands(math.Round(e))
	}
	if eta, ok := num(b, "etaSeconds"); ok && eta >= 0 {
		v.Left = seconds(eta)
	}
	return v
}

// thousands writes a whole number with thin separators: 1 234 567.
func thousands(f float64) string {
	s := strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString(",")
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// rawJSON is one item of a list read as is.
type rawJSON = json.RawMessage

// decodeNumbers decodes a JSON object keeping numbers as json.Number, so
// that block numbers stay exact; nil when raw is not an object.
func decodeNumbers(raw []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// breakerOf sums up the upstreams' circuit breakers: open when every
// upstream is open, half-open when any is not fully closed.
func breakerOf(ups []upstreamView) string {
	if len(ups) == 0 {
		return ""
	}
	open, closed := 0, 0
	for _, u := range ups {
		switch u.State {
		case "open":
			open++
		case "closed":
			closed++
		}
	}
	switch {
	case open == len(ups):
		return "open"
	case closed == len(ups):
		return "closed"
	}
	return "half-open"
}

func lookup(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// str renders the value at path as text: "" when absent or not a scalar.
func str(m map[string]any, path ...string) string {
	switch v := lookup(m, path...).(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

func num(m map[string]any, path ...string) (float64, bool) {
	switch v := lookup(m, path...).(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ---- Webhooks ----

// successRate summarizes a webhook's recent finished deliveries: dropped and
// canceled ones say nothing about the receiver and do not count.
type successRate struct {
	Succeeded, Finished int
	Percent             int
}

func (u *UI) rateOf(ctx context.Context, id int64) (*successRate, error) {
	var list struct{ Items []core.DeliveryDetail }
	if err := u.get(ctx, fmt.Sprintf("/admin/api/webhooks/%d/deliveries?limit=100", id), &list); err != nil {
		return nil, err
	}
	return rateOfDeliveries(list.Items), nil
}

func rateOfDeliveries(items []core.DeliveryDetail) *successRate {
	var r successRate
	for _, d := range items {
		switch d.State {
		case core.DeliverySucceeded:
			r.Succeeded++
			r.Finished++
		case core.DeliveryFailed:
			r.Finished++
		}
	}
	if r.Finished == 0 {
		return nil
	}
	r.Percent = r.Succeeded * 100 / r.Finished
	return &r
}

type webhookRow struct {
	core.Webhook
	Rate *successRate
}

type webhooksData struct {
	Items         []webhookRow
	Search, State string
	Before        int64
	Next          *int64
	Note          string
	Back          string
}

func (u *UI) webhooks(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	d := webhooksData{Search: strings.TrimSpace(q.Get("search")), State: q.Get("state"), Back: r.URL.RequestURI()}
	if d.State != "active" && d.State != "deactivated" {
		d.State = ""
	}
	v := url.Values{"limit": {"50"}}
	if d.Search != "" {
		v.Set("search", d.Search)
	}
	if d.State != "" {
		v.Set("state", d.State)
	}
	if b, err := strconv.ParseInt(q.Get("before"), 10, 64); err == nil && b > 0 {
		d.Before = b
		v.Set("before", strconv.FormatInt(b, 10))
	}
	var list struct {
		Items      []core.Webhook
		NextBefore *int64
	}
	if err := u.get(r.Context(), "/admin/api/webhooks?"+v.Encode(), &list); err != nil {
		d.Note = userMessage(err, "The webhook list")
	}
	d.Next = list.NextBefore
	for _, wh := range list.Items {
		rate, _ := u.rateOf(r.Context(), wh.ID)
		d.Items = append(d.Items, webhookRow{Webhook: wh, Rate: rate})
	}
	u.render(w, r, http.StatusOK, "webhooks", page{Title: "Webhooks", Nav: "webhooks", Data: d})
}

type webhookData struct {
	// Webhook carries the owner's settings, the ordering line and the
	// rotation history (GET /admin/api/webhooks/{id}).
	Webhook    core.WebhookView
	Rate       *successRate
	Deliveries []core.DeliveryDetail
	State      string
	Next       *int64
	Note       string
	Chain      chainView
	Back       string
}

// chainView is a plugin chain with what its editor needs.
type chainView struct {
	Endpoint string
	Entries  []chainEntry
	Plugins  []pluginView
	Note     string
}

type chainEntry struct {
	Plugin        string          `json:"plugin"`
	Config        json.RawMessage `json:"config,omitempty"`
	FailurePolicy string          `json:"failurePolicy,omitempty"`
}

func (u *UI) webhook(w http.ResponseWriter, r *http.Request, s *session) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		u.renderError(w, r, http.StatusNotFound, "No such webhook", "Webhook ids are positive numbers. Pick one from the webhook list.")
		return
	}
	ctx := r.Context()
	d := webhookData{Back: r.URL.RequestURI()}
	if err := u.get(ctx, fmt.Sprintf("/admin/api/webhooks/%d", id), &d.Webhook); err != nil {
		if e, ok := err.(*apiError); ok && e.Status == http.StatusNotFound {
			u.renderError(w, r, http.StatusNotFound, "No such webhook", fmt.Sprintf("There is no webhook %d. It may have been removed; pick one from the webhook list.", id))
			return
		}
		u.renderError(w, r, http.StatusBadGateway, "Could not load the webhook", userMessage(err, "Webhooks"))
		return
	}
	d.State = r.URL.Query().Get("state")
	if !contains([]string{"pending", "in_flight", "succeeded", "failed", "canceled", "dropped"}, d.State) {
		d.State = ""
	}
	v := url.Values{"limit": {"25"}}
	if d.State != "" {
		v.Set("state", d.State)
	}
	if b, err := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64); err == nil && b > 0 {
		v.Set("before", strconv.FormatInt(b, 10))
	}
	var list struct {
		Items      []core.DeliveryDetail
		NextBefore *int64
	}
	if err := u.get(ctx, fmt.Sprintf("/admin/api/webhooks/%d/deliveries?%s", id, v.Encode()), &list); err != nil {
		d.Note = userMessage(err, "The delivery log")
	}
	d.Deliveries, d.Next = list.Items, list.NextBefore
	d.Rate, _ = u.rateOf(ctx, id)
	d.Chain = u.chain(ctx, fmt.Sprintf("/admin/api/webhooks/%d/chain", id), "This webhook's plugin chain")
	u.render(w, r, http.StatusOK, "webhook", page{Title: fmt.Sprintf("Webhook %d", id), Nav: "webhooks", Data: d})
}

func (u *UI) chain(ctx context.Context, endpoint, what string) chainView {
	c := chainView{Endpoint: endpoint}
	var list struct{ Items []chainEntry }
	if err := u.get(ctx, endpoint, &list); err != nil {
		c.Note = userMessage(err, what)
		c.Endpoint = ""
	}
	c.Entries = list.Items
	c.Plugins, _ = u.pluginList(ctx)
	return c
}

func (u *UI) webhookAction(w http.ResponseWriter, r *http.Request, s *session) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	action := r.PathValue("action")
	if err != nil || id < 1 || (action != "deactivate" && action != "reactivate") {
		u.renderError(w, r, http.StatusNotFound, "No such action", "Use the buttons on the webhook pages.")
		return
	}
	err = u.postJSON(r.Context(), fmt.Sprintf("/admin/api/webhooks/%d/%s", id, action), nil, nil)
	ok := fmt.Sprintf("Webhook %d is deactivated: no more deliveries go to it until you reactivate it.", id)
	if action == "reactivate" {
		ok = fmt.Sprintf("Webhook %d is active again: new notifications will be delivered to it.", id)
	}
	u.done(w, r, s, fmt.Sprintf("/admin/ui/webhooks/%d", id), err, "Webhooks", ok)
}

func (u *UI) replay(w http.ResponseWriter, r *http.Request, s *session) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		u.renderError(w, r, http.StatusNotFound, "No such delivery", "Use the Replay buttons in a webhook's delivery log.")
		return
	}
	err = u.postJSON(r.Context(), fmt.Sprintf("/admin/api/deliveries/%d/replay", id), nil, nil)
	u.done(w, r, s, "/admin/ui/webhooks", err, "Replay", fmt.Sprintf("Delivery %d is queued again; its next attempt starts shortly.", id))
}

// ---- Plugins ----

type pluginView struct {
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	ABI          any             `json:"abi"`
	Size         int64           `json:"size"`
	SHA256       string          `json:"sha256"`
	Hooks        []string        `json:"hooks"`
	ConfigSchema json.RawMessage `json:"configSchema,omitempty"`
	Enabled      bool            `json:"enabled"`
	UploadedAt   *time.Time      `json:"uploadedAt,omitempty"`
	Source       string          `json:"source,omitempty"` // "upload" or "dir"
	Loaded       *bool           `json:"loaded,omitempty"` // nil: not reported
}

// NotLoaded reports a stored plugin that this process could not load.
func (p pluginView) NotLoaded() bool { return p.Loaded != nil && !*p.Loaded }

// HasSchema reports whether the plugin declares a non-empty config schema.
func (p pluginView) HasSchema() bool {
	t := strings.TrimSpace(string(p.ConfigSchema))
	return t != "" && t != "{}" && t != "null"
}

func (u *UI) pluginList(ctx context.Context) ([]pluginView, error) {
	var list struct{ Items []pluginView }
	err := u.get(ctx, "/admin/api/plugins", &list)
	return list.Items, err
}

type pluginsData struct {
	Plugins []pluginView
	Note    string
	Chain   chainView
	Samples []sample
	MaxMiB  int
}

type sample struct {
	Label        string          `json:"label"`
	Notification json.RawMessage `json:"notification"`
}

func (u *UI) plugins(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	d := pluginsData{MaxMiB: maxUpload >> 20}
	var err error
	if d.Plugins, err = u.pluginList(ctx); err != nil {
		d.Note = userMessage(err, "Plugin management")
	}
	d.Chain = u.chain(ctx, "/admin/api/chain", "The global plugin chain")
	d.Samples = u.samples(ctx)
	u.render(w, r, http.StatusOK, "plugins", page{Title: "Plugins", Nav: "plugins", Data: d})
}

// samples are notifications for the try-it panel: the latest stored ones
// first, then made-up ones of each indexer type.
func (u *UI) samples(ctx context.Context) []sample {
	var out []sample
	var list struct{ Items []core.Notification }
	if u.get(ctx, "/admin/api/notifications?limit=5", &list) == nil {
		for _, n := range list.Items {
			b, _ := json.MarshalIndent(n, "", "  ")
			out = append(out, sample{Label: "Recent: " + n.Type + " (" + n.DAO + ", " + n.ID + ")", Notification: b})
		}
	}
	dao := "uniswap"
	var daos struct{ Items []core.DAO }
	if u.get(ctx, "/admin/api/daos", &daos) == nil && len(daos.Items) > 0 {
		dao = daos.Items[0].Slug
	}
	at := u.now().UTC().Truncate(time.Second)
	made := []struct {
		typ  string
		data string
	}{
		{core.TypeProposalCreated, `{"proposalId":"42","proposer":"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984","title":"Fund the grants programme for Q3","startBlock":19000000,"endBlock":19040320}`},
		{core.TypeProposalActive, `{"chainId":1,"governor":"0x408ED6354d4973f66138C91495F2f2FCbd8724C3","proposalId":"42","blockNumber":19000000,"blockHash":"0x5e1c2d0f6a8b9c7d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d","state":"active","title":"Fund the grants programme for Q3","proposer":"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984","clock":"blocknumber","voteStart":"19000000","voteEnd":"19040320","forVotes":"0","againstVotes":"0","abstainVotes":"0","quorum":"40000000000000000000000000","quorumReached":false}`},
		{core.TypeVoteCast, `{"proposalId":"42","voter":"0x2B1Ad6184a6B0fac06bD225ed37C2AbC04415fF4","support":1,"weight":"2500000000000000000000000","reason":"Grants bring builders."}`},
		{core.TypeProposalEndingSoon, `{"chainId":1,"governor":"0x408ED6354d4973f66138C91495F2f2FCbd8724C3","proposalId":"42","blockNumber":19033120,"blockHash":"0x7a3b9c1d2e4f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9","state":"active","title":"Fund the grants programme for Q3","proposer":"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984","clock":"blocknumber","voteStart":"19000000","voteEnd":"19040320","forVotes":"41250000000000000000000000","againstVotes":"1200000000000000000000","abstainVotes":"0","quorum":"40000000000000000000000000","quorumReached":true,"leadSeconds":86400,"secondsLeft":86400,"endsAt":"` + at.Add(24*time.Hour).Format(time.RFC3339) + `","estimated":true,"secondsPerBlock":12.0}`},
		{core.TypeProposalSucceeded, `{"chainId":1,"governor":"0x408ED6354d4973f66138C91495F2f2FCbd8724C3","proposalId":"42","blockNumber":19040321,"blockHash":"0x8b4c0d2e3f5071829304b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a","state":"succeeded","title":"Fund the grants programme for Q3","proposer":"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984","clock":"blocknumber","voteStart":"19000000","voteEnd":"19040320","forVotes":"41250000000000000000000000","againstVotes":"1200000000000000000000","abstainVotes":"5000000000000000000","quorum":"40000000000000000000000000","quorumReached":true}`},
		{core.TypeProposalDefeated, `{"chainId":1,"governor":"0x408ED6354d4973f66138C91495F2f2FCbd8724C3","proposalId":"43","blockNumber":19040321,"blockHash":"0x8b4c0d2e3f5071829304b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a","state":"defeated","title":"Raise the proposal threshold to 2.5M","proposer":"0x6f3E6272A167e8AcCb32072d08E0957F9c79223d","clock":"blocknumber","voteStart":"19000000","voteEnd":"19040320","forVotes":"12000000000000000000000000","againstVotes":"18500000000000000000000000","abstainVotes":"0","quorum":"40000000000000000000000000","quorumReached":false}`},
		{core.TypeProposalExecuted, `{"proposalId":"42","transactionHash":"0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060"}`},
		{core.TypeProposalExpired, `{"chainId":1,"governor":"0x408ED6354d4973f66138C91495F2f2FCbd8724C3","proposalId":"41","blockNumber":19155200,"blockHash":"0x9c5d1e3f40617283940a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90b","state":"expired","title":"Move the treasury to a new Safe","proposer":"0x8E4ED221fa034245F14205f781E0b13C5bd6a42E","clock":"blocknumber","voteStart":"18900000","voteEnd":"18940320","forVotes":"41250000000000000000000000","againstVotes":"0","abstainVotes":"0","quorum":"40000000000000000000000000","quorumReached":true,"eta":"1764842400","gracePeriod":"1209600"}`},
		{core.TypeTest, `{"message":"Test notification from the govgate admin page"}`},
	}
	for i, m := range made {
		n := core.Notification{ID: fmt.Sprintf("ntf_sample_%d", i+1), Type: m.typ, DAO: dao, OccurredAt: at, Data: json.RawMessage(m.data)}
		b, _ := json.MarshalIndent(n, "", "  ")
		out = append(out, sample{Label: "Sample: " + m.typ, Notification: b})
	}
	return out
}

func (u *UI) upload(w http.ResponseWriter, r *http.Request, s *session) {
	f, hdr, err := r.FormFile("module")
	if err != nil {
		u.sessions.setFlash(s, &flash{Kind: "error", Text: "Choose a .wasm file to upload first."})
		http.Redirect(w, r, "/admin/ui/plugins", http.StatusSeeOther)
		return
	}
	defer f.Close()
	body, err := readAllLimited(f, maxUpload)
	if err != nil {
		u.sessions.setFlash(s, &flash{Kind: "error", Text: fmt.Sprintf("%s could not be read: %v.", hdr.Filename, err)})
		http.Redirect(w, r, "/admin/ui/plugins", http.StatusSeeOther)
		return
	}
	var p pluginView
	_, err = u.call(r.Context(), http.MethodPost, "/admin/api/plugins", bytes.NewReader(body), "application/wasm", &p)
	u.done(w, r, s, "/admin/ui/plugins", err, "Plugin upload", fmt.Sprintf("Installed %s %s from %s. Add it to a chain to use it.", p.Name, p.Version, hdr.Filename))
}

func (u *UI) pluginAction(w http.ResponseWriter, r *http.Request, s *session) {
	name, action := r.PathValue("name"), r.PathValue("action")
	path := "/admin/api/plugins/" + url.PathEscape(name)
	var err error
	var ok string
	switch action {
	case "enable", "disable":
		err = u.postJSON(r.Context(), path+"/"+action, nil, nil)
		ok = fmt.Sprintf("Plugin %s is %sd.", name, action)
	case "delete":
		_, err = u.call(r.Context(), http.MethodDelete, path, nil, "", nil)
		ok = fmt.Sprintf("Plugin %s is deleted.", name)
	default:
		u.renderError(w, r, http.StatusNotFound, "No such action", "Use the buttons on the plugins page.")
		return
	}
	u.done(w, r, s, "/admin/ui/plugins", err, "Plugin management", ok)
}

// ---- Notifications ----

type notificationsData struct {
	Items     []core.Notification
	DAOs      []core.DAO
	DAO, Type string
	Limit     int
	Note      string
	Types     []string
	LiveSrc   string
}

var knownTypes = core.NotificationTypes()

func (u *UI) notifications(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	d := notificationsData{DAO: q.Get("dao"), Type: strings.TrimSpace(q.Get("type")), Limit: 50, Types: knownTypes}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && (n == 100 || n == 200) {
		d.Limit = n
	}
	var daos struct{ Items []core.DAO }
	if err := u.get(r.Context(), "/admin/api/daos", &daos); err != nil {
		// The page still lists notifications, without the DAO filter's choices.
		u.log.Warn("admin page: list DAOs", "err", err)
	}
	d.DAOs = daos.Items
	v := url.Values{"limit": {strconv.Itoa(d.Limit)}}
	if d.DAO != "" {
		v.Set("dao", d.DAO)
	}
	if d.Type != "" {
		v.Set("type", d.Type)
	}
	d.LiveSrc = "/admin/ui/notifications?partial=live&" + v.Encode()
	var list struct{ Items []core.Notification }
	if err := u.get(r.Context(), "/admin/api/notifications?"+v.Encode(), &list); err != nil {
		d.Note = userMessage(err, "The notification feed")
	}
	d.Items = list.Items
	u.render(w, r, http.StatusOK, "notifications", page{Title: "Notifications", Nav: "notifications", Data: d})
}

func (u *UI) sendNotification(w http.ResponseWriter, r *http.Request, s *session) {
	data := strings.TrimSpace(r.PostFormValue("data"))
	if data == "" {
		data = "{}"
	}
	if !json.Valid([]byte(data)) {
		u.sessions.setFlash(s, &flash{Kind: "error", Text: "The data is not valid JSON. Write a JSON object such as {\"message\": \"hello\"}."})
		http.Redirect(w, r, "/admin/ui/notifications", http.StatusSeeOther)
		return
	}
	in := map[string]any{"type": strings.TrimSpace(r.PostFormValue("type")), "dao": r.PostFormValue("dao"), "data": json.RawMessage(data)}
	if id := strings.TrimSpace(r.PostFormValue("id")); id != "" {
		in["id"] = id
	}
	var out struct {
		ID      string
		Created bool
	}
	err := u.postJSON(r.Context(), "/admin/api/notifications", in, &out)
	ok := fmt.Sprintf("Notification %s is stored; every active webhook will receive it.", out.ID)
	if err == nil && !out.Created {
		ok = fmt.Sprintf("Notification %s already existed, so nothing new was sent.", out.ID)
	}
	u.done(w, r, s, "/admin/ui/notifications", err, "Sending notifications", ok)
}
