package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/calldata"
	"github.com/govgate/govgate/core/internal/delivery"
	"github.com/govgate/govgate/core/internal/dev/daoadmin"
	"github.com/govgate/govgate/core/internal/health"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/signing"
	"github.com/govgate/govgate/core/internal/store"
)

// loadSpec loads and validates openapi.yaml, the file that openapi.go embeds.
// External references are refused (the loader's default): the document
// stands alone.
func loadSpec(t *testing.T) (*openapi3.T, []byte) {
	t.Helper()
	raw, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	return doc, raw
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc, _ := loadSpec(t)
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi %q, want 3.0.3", doc.OpenAPI)
	}
	// The error codes are the ones core defines, every one of them.
	codes := doc.Components.Schemas["Error"].Value.Properties["error"].Value.Properties["code"].Value.Enum
	want := []string{core.ECodeInvalidJSON, core.ECodeInvalidRequest, core.ECodeInvalidURL, core.ECodeForbiddenURL,
		core.ECodeUnsupportedMediaType, core.ECodeBodyTooLarge, core.ECodeNotFound, core.ECodeUnknownDAO, core.ECodeConflict,
		core.ECodeUnauthorized, core.ECodeRateLimited, core.ECodeUnavailable, core.ECodeInternal, core.ECodeMethodNotAllowed,
		core.ECodeSignatureRequired, core.ECodeStaleTimestamp, core.ECodeInvalidSignature, core.ECodeReplayedRequest}
	var got []string
	for _, c := range codes {
		got = append(got, c.(string))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Error.code enum %v, want core's codes %v", got, want)
	}
}

// specDAOs are the DAOs of the OpenAPI test: one per health outcome, and
// one the health monitor does not know yet.
var specDAOs = []core.DAO{
	{Slug: "healthy", Name: "Healthy", ChainID: 1, Governor: "0x408ED6354d4973f66138C91495F2f2FCbd8724C3", Kind: core.KindOZGovernor, StartBlock: 13059157},
	{Slug: "degraded", Name: "Degraded", ChainID: 10, Governor: "0xc0Da02939E1441F497fd74F78cE7Decb17B66529", Kind: core.KindGovernorBravo, StartBlock: 12006099},
	{Slug: "failing", Name: "Failing", ChainID: 137, Governor: "0x323A76393544d5ecca80cd6ef2A560C6a395b7E3", Kind: core.KindOZGovernor},
	{Slug: "pending", Name: "Pending", ChainID: 1, Governor: "0x6f3E6272A167e8AcCb32072d08E0957F9c79223d", Kind: core.KindOZGovernor},
}

// hexHash is a 32-byte 0x-hex hash made of byte b.
func hexHash(b byte) string { return "0x" + strings.Repeat(fmt.Sprintf("%02x", b), 32) }

// startMonitor runs a real health monitor of the first three specDAOs over
// the store: healthy passes, degraded warns (a half-open breaker, a lagging
// indexer, a stale head), failing fails (every breaker open, a stalled
// indexer). It returns once healthy's database check has a ping.
func startMonitor(t *testing.T, s *store.Store, log *slog.Logger) *health.Monitor {
	t.Helper()
	// The monitor asks for the chains' upstreams in every rebuild of its
	// documents, one rebuild at a time: each ask says that the rebuild
	// before it has stored its documents, which only rebuilds change.
	rebuilt := make(chan struct{}, 1)
	upstreams := func(chainID uint64) []health.Upstream {
		select {
		case rebuilt <- struct{}{}:
		default:
		}
		now := time.Now()
		switch chainID {
		case 1:
			return []health.Upstream{{URL: "https://eth.example.com", State: "closed", TotalFailures: 2, LastSuccessAt: now}}
		case 10:
			return []health.Upstream{
				{URL: "https://op.example.com", State: "closed", LastSuccessAt: now},
				{URL: "https://op.example.org", State: "half-open", ConsecutiveFailures: 5, TotalFailures: 9,
					LastError: "429 Too Many Requests", LastErrorAt: now.Add(-30 * time.Second), LastSuccessAt: now.Add(-2 * time.Minute)},
			}
		}
		return []health.Upstream{{URL: "https://polygon.example.com", State: "open", ConsecutiveFailures: 12, TotalFailures: 40,
			LastError: "dial tcp: connection refused", LastErrorAt: now}}
	}
	indexer := func(dao string) (health.IndexerStatus, bool) {
		now := time.Now()
		st := health.IndexerStatus{DAO: dao, LastIndexedBlock: 100, LastIndexedBlockTime: now.Add(-12 * time.Second),
			LastIndexedAt: now, LastCheckedAt: now, Head: 112, HeadHash: hexHash(0x11), HeadTime: now.Add(-time.Second),
			ConfirmedHead: 100, CaughtUp: true, Leader: true}
		switch dao {
		case "degraded":
			st.ChainID, st.ConfirmedHead, st.LagBlocks, st.LagSeconds = 10, 130, 30, 60
			st.HeadTime = now.Add(-10 * time.Minute)
		case "failing":
			st.ChainID, st.LastCheckedAt, st.LastError = 137, now.Add(-10*time.Minute), "eth_getLogs: timeout"
			st.Leader = false
		default:
			st.ChainID = 1
		}
		return st, true
	}
	cfg := health.Config{Interval: 50 * time.Millisecond, Thresholds: health.Thresholds{DBSlowAfter: time.Minute}}
	mon, err := health.NewMonitor(core.FixedDAOs(specDAOs[:3]), health.Sources{PingDB: s.Ping, Upstreams: upstreams, Indexer: indexer}, cfg, health.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); mon.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	// Healthy passes once a rebuild follows the first ping's answer.
	deadline := time.After(10 * time.Second)
	for {
		if snap, _ := mon.Snapshot("healthy"); snap.Status == health.Pass {
			return mon
		}
		select {
		case <-rebuilt:
		case <-deadline:
			snap, _ := mon.Snapshot("healthy")
			t.Fatalf("healthy never passed: %+v", snap)
		}
	}
}

// specDecoder is the calldata decoder govgate wires into the proposal
// routes, with the curated set only.
func specDecoder(t *testing.T) httpapi.ActionDecoder {
	t.Helper()
	d, err := calldata.New(calldata.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// ozProposalID is an OpenZeppelin-style (hashed) proposal id: 77 digits.
const ozProposalID = "84315301235484624312085913698225361153240513547245330834932581298347012936528"

// seedProposals stores two proposals of healthy, three votes on the first,
// through the indexer's write path.
func seedProposals(t *testing.T, s *store.Store) {
	t.Helper()
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	quorum := "40000000000000000000000000"
	p1 := core.Proposal{DAO: "healthy", ChainID: 1, ProposalID: ozProposalID, Proposer: "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E",
		Targets: []string{"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"}, Values: []string{"0"}, Signatures: []string{""},
		Calldatas:   []string{"0xa9059cbb000000000000000000000000e2388f22cf5e328c197d6530663809cc0f2e3b7000000000000000000000000000000000000000000000d3c21bcecceda1000000"},
		Description: "# Fund the grants program\n\nSends 1M UNI.", VoteStart: 19876000, VoteEnd: 19926400, Clock: core.ClockBlockNumber,
		State: core.ProposalActive, Quorum: &quorum, QuorumReached: true,
		ForVotes: "2500000000000000000000000", AgainstVotes: "7", AbstainVotes: "0",
		CreatedBlock: 19875990, CreatedTx: hexHash(0xa1), CreatedAt: at, UpdatedBlock: 19876050, UpdatedAt: at.Add(10 * time.Minute)}
	p2 := core.Proposal{DAO: "healthy", ChainID: 1, ProposalID: "2", Proposer: "0x6f3E6272A167e8AcCb32072d08E0957F9c79223d",
		Targets: []string{"0x408ED6354d4973f66138C91495F2f2FCbd8724C3", "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"},
		Values:  []string{"1000000000000000000", "0"}, Signatures: []string{"", ""}, Calldatas: []string{"0x", "0x"},
		Description: "Upgrade", VoteStart: 19875000, VoteEnd: 19875900, Clock: core.ClockBlockNumber, State: core.ProposalQueued,
		Quorum: &quorum, QuorumReached: true,
		ForVotes: "40000000000000000000000000", AgainstVotes: "0", AbstainVotes: "1", ETA: 1764237600,
		CreatedBlock: 19874000, CreatedTx: hexHash(0xa2), CreatedAt: at.Add(time.Minute), UpdatedBlock: 19876000, UpdatedAt: at.Add(time.Hour)}
	vote := func(i byte, voter string, support uint8, weight, params string) core.Vote {
		return core.Vote{DAO: "healthy", ChainID: 1, ProposalID: ozProposalID, Voter: voter, Kind: core.VoteKindVote, Support: support, Weight: weight,
			Reason: "", Params: params, BlockNumber: 19876000 + uint64(i), BlockHash: hexHash(0xb0 + i), TxHash: hexHash(0xc0 + i),
			LogIndex: uint(i), CastAt: at.Add(time.Duration(i) * time.Minute)}
	}
	// A split vote (GovernorCountingFractional: against, for, abstain as
	// three uint128) and an override that took weight back from a's vote.
	split := "0x" + fmt.Sprintf("%032x%032x%032x", 1, 2, 3)
	override := vote(5, "0x6f3E6272A167e8AcCb32072d08E0957F9c79223d", 0, "7", "")
	forSide := uint8(1)
	override.Kind, override.Delegate, override.DelegateSupport, override.ReducedWeight = core.VoteKindOverride, "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E", &forSide, "7"
	a, bb := "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E", "0x6f3E6272A167e8AcCb32072d08E0957F9c79223d"
	token := func(i byte, kind, who, from, to, moved, prev, next string) core.TokenEvent {
		return core.TokenEvent{DAO: "healthy", ChainID: 1, Token: "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984", Kind: kind,
			BlockNumber: 19870000 + uint64(i), BlockHash: hexHash(0xd0 + i), TxHash: hexHash(0xe0 + i/2), LogIndex: uint(i), At: at.Add(-time.Hour),
			Delegator: who, FromDelegate: from, ToDelegate: to, Moved: moved, Delegate: map[bool]string{true: who}[kind == core.TypeDelegateVotesChanged],
			PreviousVotes: prev, NewVotes: next}
	}
	zero := "0x0000000000000000000000000000000000000000"
	b := core.IndexBatch{DAO: "healthy", ChainID: 1, Cursor: core.Cursor{Block: 19876100, Hash: hexHash(0xee)},
		TokenEvents: []core.TokenEvent{
			token(0, core.TypeDelegateChanged, a, zero, a, "2500000000000000000000000", "", ""),
			token(1, core.TypeDelegateVotesChanged, a, "", "", "", "0", "2500000000000000000000000"),
			token(2, core.TypeDelegateChanged, bb, zero, a, "7", "", ""),
			token(3, core.TypeDelegateVotesChanged, a, "", "", "", "2500000000000000000000000", "2500000000000000000000007"),
		},
		Proposals: []core.Proposal{p1, p2},
		Votes: []core.Vote{
			vote(1, "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E", 1, "2500000000000000000000000", ""),
			vote(2, "0x6f3E6272A167e8AcCb32072d08E0957F9c79223d", 0, "7", "0x00ff"),
			vote(3, "0x323A76393544d5ecca80cd6ef2A560C6a395b7E3", 2, "0", ""),
			vote(4, "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984", core.SupportFractional, "6", split),
			override,
		},
		Governor: &core.GovernorInfo{CountingMode: "support=bravo&quorum=for,abstain", ClockMode: core.ClockBlockNumber},
		Timeline: []core.TimelineEntry{
			{DAO: "healthy", ProposalID: ozProposalID, ChainID: 1, Event: core.TimelineCreated, Block: 19875990, Time: at, TxHash: hexHash(0xa1)},
			{DAO: "healthy", ProposalID: ozProposalID, ChainID: 1, Event: core.TimelineActive, Block: 19876000, Time: at.Add(2 * time.Minute)},
		}}
	if err := s.ApplyBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

// specTarget is a REST API and a webhook service as the document sees
// them: its servers point at these two listeners, so a route is found only
// on the listener that the document puts it on.
type specTarget struct {
	doc      *openapi3.T
	raw      []byte
	router   routers.Router
	api      *httptest.Server
	webhooks *httptest.Server
	admin    *httptest.Server // nil: no admin cases

	mu      sync.Mutex
	checked map[string]bool // "operation status media-type" seen valid
}

func newSpecTarget(t *testing.T, api, webhooks *httptest.Server, admin ...*httptest.Server) *specTarget {
	t.Helper()
	doc, raw := loadSpec(t)
	point := func(servers openapi3.Servers) {
		for _, s := range servers {
			if v := s.Variables["base_url"]; v != nil {
				v.Default = api.URL
			}
			if v := s.Variables["webhook_url"]; v != nil {
				v.Default = webhooks.URL
			}
			if v := s.Variables["admin_url"]; v != nil && len(admin) > 0 {
				v.Default = admin[0].URL
			}
		}
	}
	point(doc.Servers)
	for _, item := range doc.Paths.Map() {
		point(item.Servers)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	tg := &specTarget{doc: doc, raw: raw, router: router, api: api, webhooks: webhooks, checked: map[string]bool{}}
	if len(admin) > 0 {
		tg.admin = admin[0]
	}
	return tg
}

// documented lists every response the document describes, as
// "operation status media-type", plus the two generic responses.
func (tg *specTarget) documented() []string {
	var out []string
	add := func(op, status string, resp *openapi3.Response) {
		if len(resp.Content) == 0 {
			out = append(out, op+" "+status+" ")
		}
		for mt := range resp.Content {
			out = append(out, op+" "+status+" "+mt)
		}
	}
	for _, item := range tg.doc.Paths.Map() {
		for _, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				add(op.OperationID, status, resp.Value)
			}
		}
	}
	add("RouteNotFound", "404", tg.doc.Components.Responses["RouteNotFound"].Value)
	add("MethodNotAllowed", "405", tg.doc.Components.Responses["MethodNotAllowed"].Value)
	slices.Sort(out)
	return out
}

// wantAllChecked fails for every documented response no case produced.
func (tg *specTarget) wantAllChecked(t *testing.T) {
	t.Helper()
	tg.mu.Lock()
	defer tg.mu.Unlock()
	for _, d := range tg.documented() {
		if !tg.checked[d] {
			t.Errorf("documented response %q was never checked against a real one", d)
		}
	}
}

// reqWant is what the document should say of a case's request.
type reqWant int

const (
	reqValid   reqWant = iota // the document accepts the request
	reqInvalid                // the document refuses it, as the server does
	reqAny                    // the document cannot tell (size, rate, state, forbidden hosts)
)

type listener int

const (
	onAPI listener = iota
	onWebhooks
	onAdmin
)

// specCase is one request and the status the real handler must answer.
type specCase struct {
	name         string
	on           listener
	method, path string
	header       map[string]string
	body         string
	status       int
	req          reqWant
	check        func(t *testing.T, r response) // more checks on the answer
}

func newRequest(t *testing.T, method, url string, header map[string]string, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	return req
}

// run sends c to its listener over HTTP and validates the request (as
// c.req says) and the real answer against the document.
func (tg *specTarget) run(t *testing.T, c specCase) {
	t.Helper()
	srv := tg.api
	switch c.on {
	case onWebhooks:
		srv = tg.webhooks
	case onAdmin:
		srv = tg.admin
	}
	url := srv.URL + c.path
	r := do(t, srv.Client(), c.method, url, c.header, c.body)
	if r.status != c.status {
		t.Fatalf("%s %s: status %d, want %d: %.300s", c.method, c.path, r.status, c.status, r.body)
	}
	ctx := context.Background()
	req := newRequest(t, c.method, url, c.header, c.body)
	route, params, err := tg.router.FindRoute(req)
	var in *openapi3filter.RequestValidationInput
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		in = tg.generic(req, "RouteNotFound", http.StatusNotFound)
	case errors.Is(err, routers.ErrMethodNotAllowed):
		in = tg.generic(req, "MethodNotAllowed", http.StatusMethodNotAllowed)
		tg.wantAllow(t, url, r.header.Get("Allow"))
	case err != nil:
		t.Fatalf("find route: %v", err)
	default:
		in = &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			// The server checks the admin token; the cases say what it answers.
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		err := openapi3filter.ValidateRequest(ctx, in)
		switch {
		case c.req == reqValid && err != nil:
			t.Fatalf("the document refuses the request: %v", err)
		case c.req == reqInvalid && err == nil:
			t.Fatalf("the document accepts a request that the server refuses with %d", r.status)
		}
	}
	err = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: r.status, Header: r.header, Body: io.NopCloser(bytes.NewReader(r.body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
	if err != nil {
		t.Fatalf("the answer does not match the document: %v\n%s\n%.2000s", err, r.header, r.body)
	}
	if c.check != nil {
		c.check(t, r)
	}
	mt := ""
	if ct := r.header.Get("Content-Type"); ct != "" {
		mt, _, _ = mime.ParseMediaType(ct)
	}
	tg.mu.Lock()
	tg.checked[fmt.Sprintf("%s %d %s", in.Route.Operation.OperationID, r.status, mt)] = true
	tg.mu.Unlock()
}

// generic is the validation input of an answer that no operation lists
// but the components describe: an unknown route or a wrong method.
func (tg *specTarget) generic(req *http.Request, name string, status int) *openapi3filter.RequestValidationInput {
	op := &openapi3.Operation{OperationID: name,
		Responses: openapi3.NewResponses(openapi3.WithStatus(status, tg.doc.Components.Responses[name]))}
	return &openapi3filter.RequestValidationInput{Request: req,
		Route: &routers.Route{Spec: tg.doc, Path: req.URL.Path, Method: req.Method, Operation: op}}
}

// wantAllow checks that a 405's Allow header lists exactly the methods
// that the document gives the path.
func (tg *specTarget) wantAllow(t *testing.T, url, allow string) {
	t.Helper()
	methods := strings.Split(allow, ", ")
	route, _, err := tg.router.FindRoute(newRequest(t, methods[0], url, nil, ""))
	if err != nil {
		t.Fatalf("Allow: %s, but the document has no %s %s: %v", allow, methods[0], url, err)
	}
	var documented []string
	for m := range route.PathItem.Operations() {
		documented = append(documented, m)
	}
	slices.Sort(documented)
	slices.Sort(methods)
	if !slices.Equal(methods, documented) {
		t.Fatalf("Allow: %s, but the document has %v for %s", allow, documented, route.Path)
	}
}

// jsonField decodes r's body and returns the value at the dotted path.
func jsonField(t *testing.T, r response, path string) any {
	t.Helper()
	var v any = object(t, r.body)
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no %s in %s", path, r.body)
		}
		v = m[k]
	}
	return v
}

func wantField(path string, want any) func(t *testing.T, r response) {
	return func(t *testing.T, r response) {
		t.Helper()
		if got := jsonField(t, r, path); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s is %v, want %v: %.500s", path, got, want, r.body)
		}
	}
}

func wantItems(path string, n int) func(t *testing.T, r response) {
	return func(t *testing.T, r response) {
		t.Helper()
		if items, _ := jsonField(t, r, path).([]any); len(items) != n {
			t.Fatalf("%s has %d items, want %d: %.500s", path, len(items), n, r.body)
		}
	}
}

// wantDocument checks that GET /openapi.yaml served the embedded file.
func (tg *specTarget) wantDocument(t *testing.T, r response) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/yaml" {
		t.Fatalf("Content-Type %q, want application/yaml", ct)
	}
	if !bytes.Equal(r.body, tg.raw) {
		t.Fatalf("served %d bytes that differ from openapi.yaml (%d bytes)", len(r.body), len(tg.raw))
	}
}

// TestOpenAPIMatchesResponses drives the real REST API and webhook service,
// on a real store, through every route and every status the document
// lists, and validates each request and answer (status, headers, body)
// against the document; it fails for a documented response that no case
// produced.
func TestOpenAPIMatchesResponses(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		seedProposals(t, e.store)
		mon := startMonitor(t, e.store, log)
		// The indexer has read healthy's governor (seedProposals), not the
		// others' yet.
		api := httptest.NewServer(httpapi.NewAPI(httpapi.APIConfig{DAOs: core.FixedDAOs(specDAOs), Health: mon, Logger: log, Governor: e.store.Governor,
			Routes: []func(*gin.Engine){httpapi.ProposalRoutes(httpapi.WithActions(e.store, specDecoder(t)), core.FixedDAOs(specDAOs), log), httpapi.DelegateRoutes(e.store, core.FixedDAOs(specDAOs), log)}}))
		t.Cleanup(api.Close)
		daos := daoadmin.New(e.store, checkSpecDAO)
		admin := httptest.NewServer(httpapi.NewAdmin(httpapi.AdminConfig{Store: e.store, DAOs: daos.Catalog,
			DAOAdmin: daos, Token: adminToken, Logger: log}))
		t.Cleanup(admin.Close)
		if err := e.store.SeedDAOs(context.Background(), specDAOs[:1]); err != nil {
			t.Fatal(err)
		}
		daos.Reload(t.Context())
		tg := newSpecTarget(t, api, e.webhooks, admin)

		const hook = "https://hooks.example.com/govgate"
		const noCode = "0x000000000000000000000000000000000000dEaD"
		bearer := map[string]string{"Authorization": "Bearer " + adminToken}
		adminJSON := map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "application/json"}
		newDAO := `{"slug":"added","name":"Added","chainId":1,"governor":"0x408ED6354d4973f66138C91495F2f2FCbd8724C3","kind":"oz-governor","startBlock":5,"notifyFromBlock":0}`
		body := func(url string) string { return mustJSON(t, map[string]string{"url": url}) }
		big := `{"url": "` + hook + `", "pad": "` + strings.Repeat("x", httpapi.MaxRequestBody) + `"}`
		textType := map[string]string{"Content-Type": "text/plain"}
		proposals := "/healthy/proposals"
		one := proposals + "/" + ozProposalID

		cases := []specCase{
			{name: "daos", method: "GET", path: "/daos", status: 200, check: func(t *testing.T, r response) {
				wantItems("items", len(specDAOs))(t, r)
				items := jsonField(t, r, "items").([]any)
				if got := items[0].(map[string]any)["countingMode"]; got != "support=bravo&quorum=for,abstain" {
					t.Fatalf("healthy's countingMode %v", got)
				}
				if _, ok := items[1].(map[string]any)["countingMode"]; ok {
					t.Fatalf("degraded's governor was not read, yet it has a countingMode: %v", items[1])
				}
			}},
			{name: "document", method: "GET", path: "/openapi.yaml", status: 200, check: tg.wantDocument},
			{name: "POST document", method: "POST", path: "/openapi.yaml", status: 405},
			{name: "POST daos", method: "POST", path: "/daos", status: 405},
			{name: "unknown route", method: "GET", path: "/nope", status: 404},
			{name: "webhooks on the REST API", method: "POST", path: "/webhooks", header: jsonType, body: body(hook), status: 404},

			{name: "health pass", method: "GET", path: "/healthy/health", status: 200, check: wantField("status", "pass")},
			{name: "health warn", method: "GET", path: "/degraded/health", status: 200, check: wantField("status", "warn")},
			{name: "health fail", method: "GET", path: "/failing/health", status: 503, check: wantField("status", "fail")},
			{name: "health not computed", method: "GET", path: "/pending/health", status: 503, check: wantField("error.code", core.ECodeUnavailable)},
			{name: "health of unknown dao", method: "GET", path: "/nope/health", status: 404},
			{name: "DELETE health", method: "DELETE", path: "/healthy/health", status: 405},

			{name: "proposals", method: "GET", path: proposals, status: 200, check: wantItems("items", 2)},
			{name: "proposals first page", method: "GET", path: proposals + "?limit=1", status: 200, check: func(t *testing.T, r response) {
				if next, ok := jsonField(t, r, "nextBefore").(json.Number); !ok || next == "" {
					t.Fatalf("nextBefore %v, want a number", jsonField(t, r, "nextBefore"))
				}
			}},
			{name: "proposals past the last page", method: "GET", path: proposals + "?before=1", status: 200, check: wantItems("items", 0)},
			{name: "queued proposals", method: "GET", path: proposals + "?state=queued", status: 200, check: wantItems("items", 1)},
			{name: "proposals of unknown dao", method: "GET", path: "/nope/proposals", status: 404},
			{name: "proposals limit 0", method: "GET", path: proposals + "?limit=0", status: 422, req: reqInvalid},
			{name: "proposals limit 501", method: "GET", path: proposals + "?limit=501", status: 422, req: reqInvalid},
			{name: "proposals before word", method: "GET", path: proposals + "?before=x", status: 422, req: reqInvalid},
			{name: "active proposals", method: "GET", path: proposals + "?state=active", status: 200, check: wantItems("items", 1)},
			{name: "proposals bad state", method: "GET", path: proposals + "?state=created", status: 422, req: reqInvalid},
			{name: "every DAO's active proposals", method: "GET", path: "/proposals?state=active", status: 200, check: wantItems("items", 1)},
			{name: "every DAO's proposals", method: "GET", path: "/proposals?limit=1", status: 200, check: wantItems("items", 1)},
			{name: "every DAO's proposals bad state", method: "GET", path: "/proposals?state=open", status: 422, req: reqInvalid},
			{name: "delegates", method: "GET", path: "/healthy/delegates", status: 200, check: wantItems("items", 1)},
			{name: "delegates by delegators", method: "GET", path: "/healthy/delegates?sort=delegators&limit=1", status: 200, check: wantItems("items", 1)},
			{name: "delegates bad sort", method: "GET", path: "/healthy/delegates?sort=weight", status: 422, req: reqInvalid},
			{name: "delegates bad cursor", method: "GET", path: "/healthy/delegates?before=zzz", status: 422, req: reqAny},
			{name: "delegates bad limit", method: "GET", path: "/healthy/delegates?limit=0", status: 422, req: reqInvalid},
			{name: "delegates of unknown dao", method: "GET", path: "/nope/delegates", status: 404},
			{name: "delegate, any case", method: "GET", path: "/healthy/delegates/0x8e4ed221fa034245f14205f781e0b13c5bd6a42e", status: 200},
			{name: "delegate never seen", method: "GET", path: "/healthy/delegates/0x1111111111111111111111111111111111111111", status: 404},
			{name: "delegate not an address", method: "GET", path: "/healthy/delegates/vitalik.eth", status: 404, req: reqInvalid},
			{name: "delegate bad votesBefore", method: "GET", path: "/healthy/delegates/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E?votesBefore=x", status: 422, req: reqInvalid},
			{name: "account delegating", method: "GET", path: "/healthy/accounts/0x6f3E6272A167e8AcCb32072d08E0957F9c79223d", status: 200},
			{name: "account never seen", method: "GET", path: "/healthy/accounts/0x1111111111111111111111111111111111111111", status: 200},
			{name: "account not an address", method: "GET", path: "/healthy/accounts/0x12", status: 404, req: reqInvalid},
			{name: "account at its first checkpoint", method: "GET", path: "/healthy/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E?at=19870001", status: 200, check: func(t *testing.T, r response) {
				wantField("votingPower", "2500000000000000000000000")(t, r)
				wantField("delegatedTo", "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E")(t, r)
			}},
			{name: "account before its checkpoints", method: "GET", path: "/healthy/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E?at=19869999", status: 200, check: func(t *testing.T, r response) {
				wantField("votingPower", "0")(t, r)
				wantField("delegatedTo", "<nil>")(t, r)
			}},
			{name: "account at, delegating", method: "GET", path: "/healthy/accounts/0x6f3E6272A167e8AcCb32072d08E0957F9c79223d?at=19870003", status: 200, check: wantField("delegatedTo", "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E")},
			{name: "account bad at", method: "GET", path: "/healthy/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E?at=yesterday", status: 422, req: reqInvalid},
			{name: "account history", method: "GET", path: "/healthy/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E/history", status: 200, check: func(t *testing.T, r response) {
				wantItems("items", 2)(t, r)
				wantField("nextBefore", "<nil>")(t, r)
			}},
			{name: "account history first page", method: "GET", path: "/healthy/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E/history?limit=1", status: 200, check: func(t *testing.T, r response) {
				wantItems("items", 1)(t, r)
				wantField("nextBefore", "19870003")(t, r)
			}},
			{name: "account history next page", method: "GET", path: "/healthy/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E/history?limit=1&before=19870003", status: 200, check: wantItems("items", 1)},
			{name: "account history bad before", method: "GET", path: "/healthy/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E/history?before=0", status: 422, req: reqInvalid},
			{name: "account history not an address", method: "GET", path: "/healthy/accounts/0x12/history", status: 404, req: reqInvalid},
			{name: "account history of unknown dao", method: "GET", path: "/nope/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E/history", status: 404},
			{name: "delegate at a past block", method: "GET", path: "/healthy/delegates/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E?at=19870001", status: 200, check: func(t *testing.T, r response) {
				wantField("delegate.votingPower", "2500000000000000000000000")(t, r)
				wantField("at", "19870001")(t, r)
			}},
			{name: "delegate bad at", method: "GET", path: "/healthy/delegates/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E?at=-3", status: 422, req: reqInvalid},
			{name: "power now", method: "GET", path: "/healthy/power", status: 200},
			{name: "power at a block", method: "GET", path: "/healthy/power?at=19870001&limit=1", status: 200},
			{name: "power bad at", method: "GET", path: "/healthy/power?at=-1", status: 422, req: reqInvalid},
			{name: "power of unknown dao", method: "GET", path: "/nope/power", status: 404},
			{name: "POST proposals", method: "POST", path: proposals, status: 405},
			{name: "proposal", method: "GET", path: one, status: 200, check: func(t *testing.T, r response) {
				wantItems("votes.items", 5)(t, r)
				wantItems("timeline", 2)(t, r)
				wantField("statistics.voters", "3")(t, r)
			}},
			{name: "proposal votes first page", method: "GET", path: one + "?limit=2", status: 200, check: wantItems("votes.items", 2)},
			{name: "proposal of unknown dao", method: "GET", path: "/nope/proposals/1", status: 404},
			{name: "unknown proposal", method: "GET", path: proposals + "/999", status: 404},
			{name: "proposal id not a number", method: "GET", path: proposals + "/abc", status: 404, req: reqInvalid},
			{name: "proposal before 0", method: "GET", path: one + "?before=0", status: 422, req: reqInvalid},

			{name: "register", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: body(hook), status: 201},
			{name: "register again", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: body(hook), status: 200},
			{name: "deactivate", on: onWebhooks, method: "DELETE", path: "/webhooks", header: jsonType, body: body(hook), status: 200},
			{name: "deactivate again", on: onWebhooks, method: "DELETE", path: "/webhooks", header: jsonType, body: body(hook), status: 404},
			{name: "reactivate", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: body(hook), status: 201},
			{name: "register text", on: onWebhooks, method: "POST", path: "/webhooks", header: textType, body: body(hook), status: 415, req: reqInvalid},
			{name: "register bad JSON", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: `{"url": `, status: 400, req: reqInvalid},
			{name: "register without url", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: `{}`, status: 422, req: reqInvalid},
			{name: "register http url", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: body("http://hooks.example.com/"), status: 422, req: reqInvalid},
			{name: "register forbidden url", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: body("https://127.0.0.1/hook"), status: 422, req: reqAny},
			{name: "register too big", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: big, status: 413, req: reqAny},
			{name: "deactivate text", on: onWebhooks, method: "DELETE", path: "/webhooks", header: textType, body: body(hook), status: 415, req: reqInvalid},
			{name: "deactivate bad JSON", on: onWebhooks, method: "DELETE", path: "/webhooks", header: jsonType, body: `[]`, status: 400, req: reqInvalid},
			{name: "deactivate without url", on: onWebhooks, method: "DELETE", path: "/webhooks", header: jsonType, body: `{"uri": "` + hook + `"}`, status: 422, req: reqInvalid},
			{name: "deactivate too big", on: onWebhooks, method: "DELETE", path: "/webhooks", header: jsonType, body: big, status: 413, req: reqAny},
			{name: "GET webhooks", on: onWebhooks, method: "GET", path: "/webhooks", status: 405},
			{name: "PUT webhooks", on: onWebhooks, method: "PUT", path: "/webhooks", header: jsonType, body: body(hook), status: 405},
			{name: "document from the webhook service", on: onWebhooks, method: "GET", path: "/openapi.yaml", status: 200, check: tg.wantDocument},
			{name: "DELETE document", on: onWebhooks, method: "DELETE", path: "/openapi.yaml", status: 405},
			{name: "daos on the webhook service", on: onWebhooks, method: "GET", path: "/daos", status: 404},

			// The admin API's DAO operations (a store-backed DAOAdmin whose
			// chain check is the test's: the real one is e2e's).
			{name: "admin daos", on: onAdmin, method: "GET", path: "/admin/api/daos", header: bearer, status: 200, check: wantItems("items", 1)},
			{name: "admin daos without the token", on: onAdmin, method: "GET", path: "/admin/api/daos", status: 401, req: reqAny},
			{name: "add a dao without the token", on: onAdmin, method: "POST", path: "/admin/api/daos", header: jsonType, body: newDAO, status: 401, req: reqAny},
			{name: "add a dao as text", on: onAdmin, method: "POST", path: "/admin/api/daos", header: map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "text/plain"}, body: newDAO, status: 415, req: reqAny},
			{name: "add a dao of broken JSON", on: onAdmin, method: "POST", path: "/admin/api/daos", header: adminJSON, body: `{"slug":`, status: 400, req: reqInvalid},
			{name: "add a dao whose governor is no address", on: onAdmin, method: "POST", path: "/admin/api/daos", header: adminJSON, body: strings.Replace(newDAO, `"0x408ED6354d4973f66138C91495F2f2FCbd8724C3"`, `"0x12"`, 1), status: 422, req: reqInvalid, check: wantField("error.field", "governor")},
			{name: "add a dao whose governor has no code", on: onAdmin, method: "POST", path: "/admin/api/daos", header: adminJSON, body: strings.Replace(newDAO, `"0x408ED6354d4973f66138C91495F2f2FCbd8724C3"`, `"`+noCode+`"`, 1), status: 422, req: reqAny, check: wantField("error.field", "governor")},
			{name: "add a dao whose chain is down", on: onAdmin, method: "POST", path: "/admin/api/daos", header: adminJSON, body: strings.Replace(newDAO, `"chainId":1`, `"chainId":9`, 1), status: 503, req: reqAny},
			{name: "add a dao", on: onAdmin, method: "POST", path: "/admin/api/daos", header: adminJSON, body: newDAO, status: 201, check: wantField("source", "api")},
			{name: "admin dao", on: onAdmin, method: "GET", path: "/admin/api/daos/added", header: bearer, status: 200, check: wantField("name", "Added")},
			{name: "admin dao without the token", on: onAdmin, method: "GET", path: "/admin/api/daos/added", status: 401, req: reqAny},
			{name: "admin unknown dao", on: onAdmin, method: "GET", path: "/admin/api/daos/nope", header: bearer, status: 404},
			{name: "change a dao", on: onAdmin, method: "PUT", path: "/admin/api/daos/added", header: adminJSON, body: strings.Replace(newDAO, `"Added"`, `"Renamed"`, 1), status: 200, check: wantField("name", "Renamed")},
			{name: "change a dao without the token", on: onAdmin, method: "PUT", path: "/admin/api/daos/added", header: jsonType, body: newDAO, status: 401, req: reqAny},
			{name: "change a dao of the file", on: onAdmin, method: "PUT", path: "/admin/api/daos/healthy", header: adminJSON, body: strings.Replace(newDAO, `"added"`, `"healthy"`, 1), status: 409, req: reqAny},
			{name: "change an unknown dao", on: onAdmin, method: "PUT", path: "/admin/api/daos/nope", header: adminJSON, body: strings.Replace(newDAO, `"added"`, `"nope"`, 1), status: 404},
			{name: "change a dao's kind to none", on: onAdmin, method: "PUT", path: "/admin/api/daos/added", header: adminJSON, body: strings.Replace(newDAO, `"oz-governor"`, `"alpha"`, 1), status: 422, req: reqInvalid, check: wantField("error.field", "kind")},
			{name: "remove a dao of the file", on: onAdmin, method: "DELETE", path: "/admin/api/daos/healthy", header: bearer, status: 409},
			{name: "remove a dao without the token", on: onAdmin, method: "DELETE", path: "/admin/api/daos/added", status: 401, req: reqAny},
			{name: "remove a dao", on: onAdmin, method: "DELETE", path: "/admin/api/daos/added", header: bearer, status: 204},
			{name: "remove it again", on: onAdmin, method: "DELETE", path: "/admin/api/daos/added", header: bearer, status: 404},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { tg.run(t, c) })
		}
		// The owner operations, signed with the webhooks' secrets.
		pending, finished := ownerFixtures(t, e.store)
		for _, c := range ownerCases(t, pending, finished) {
			t.Run(c.name, func(t *testing.T) { tg.run(t, c) })
		}

		// A store that fails: every store-backed route answers 500.
		broken, _ := b.open(t, log)
		broken.Close()
		brokenAPI := httptest.NewServer(httpapi.NewAPI(httpapi.APIConfig{DAOs: core.FixedDAOs(specDAOs), Health: mon, Logger: log, Governor: broken.Governor,
			Routes: []func(*gin.Engine){httpapi.ProposalRoutes(broken, core.FixedDAOs(specDAOs), log), httpapi.DelegateRoutes(broken, core.FixedDAOs(specDAOs), log)}}))
		t.Cleanup(brokenAPI.Close)
		brokenHooks := httptest.NewServer(httpapi.NewWebhookService(httpapi.WebhookServiceConfig{
			Registry: broken, NewSecret: signing.NewSecret, RatePerMinute: 1e6, Burst: 1000, Logger: log}))
		t.Cleanup(brokenHooks.Close)
		failing := newSpecTarget(t, brokenAPI, brokenHooks)
		failingCases := []specCase{
			{name: "daos on a failing store", method: "GET", path: "/daos", status: 200, check: wantItems("items", len(specDAOs))},
			{name: "proposals on a failing store", method: "GET", path: proposals, status: 500},
			{name: "every DAO's proposals on a failing store", method: "GET", path: "/proposals", status: 500},
			{name: "delegates on a failing store", method: "GET", path: "/healthy/delegates", status: 500},
			{name: "delegate on a failing store", method: "GET", path: "/healthy/delegates/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E", status: 500},
			{name: "account on a failing store", method: "GET", path: "/healthy/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E", status: 500},
			{name: "account history on a failing store", method: "GET", path: "/healthy/accounts/0x8E4ED221fa034245F14205f781E0b13C5bd6a42E/history", status: 500},
			{name: "power on a failing store", method: "GET", path: "/healthy/power", status: 500},
			{name: "proposal on a failing store", method: "GET", path: one, status: 500},
			{name: "register on a failing store", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: body(hook), status: 500},
			{name: "deactivate on a failing store", on: onWebhooks, method: "DELETE", path: "/webhooks", header: jsonType, body: body(hook), status: 500},
		}
		for _, c := range append(failingCases, ownerFailingCases()...) {
			t.Run(c.name, func(t *testing.T) { failing.run(t, c) })
		}

		// A webhook service with a bucket of one: the document stays readable.
		limitedHooks := httptest.NewServer(httpapi.NewWebhookService(httpapi.WebhookServiceConfig{
			Registry: e.store, NewSecret: signing.NewSecret, RatePerMinute: 1, Burst: 1, Logger: log}))
		t.Cleanup(limitedHooks.Close)
		limited := newSpecTarget(t, api, limitedHooks)
		wantRetryAfter := func(t *testing.T, r response) {
			if r.header.Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
		}
		limitedCases := []specCase{
			{name: "register before the limit", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: body("https://limited.example.com/"), status: 201},
			{name: "register over the limit", on: onWebhooks, method: "POST", path: "/webhooks", header: jsonType, body: body("https://limited.example.com/"), status: 429, req: reqAny, check: wantRetryAfter},
			{name: "deactivate over the limit", on: onWebhooks, method: "DELETE", path: "/webhooks", header: jsonType, body: body("https://limited.example.com/"), status: 429, req: reqAny, check: wantRetryAfter},
			{name: "document over the limit", on: onWebhooks, method: "GET", path: "/openapi.yaml", status: 200, check: limited.wantDocument},
			{name: "document over the limit again", on: onWebhooks, method: "GET", path: "/openapi.yaml", status: 200, check: limited.wantDocument},
		}
		for _, c := range append(limitedCases, ownerLimitedCases()...) {
			t.Run(c.name, func(t *testing.T) { limited.run(t, c) })
		}

		// Every documented response was produced by one of the three.
		for _, other := range []*specTarget{failing, limited} {
			for k := range other.checked {
				tg.checked[k] = true
			}
		}
		tg.wantAllChecked(t)
	})
}

// TestOpenAPIDelivery registers a real HTTPS receiver, stores one
// notification of every type (the examples of docs/schemas) and lets the
// real dispatcher deliver them: each delivery, headers and body, must match
// the callback of POST /webhooks.
func TestOpenAPIDelivery(t *testing.T) {
	t.Parallel()
	examples, err := filepath.Glob("../../../docs/schemas/examples/*.json")
	if err != nil || len(examples) < 7 {
		t.Fatalf("found %d examples (%v), want one per type", len(examples), err)
	}
	each(t, func(t *testing.T, b backend) {
		doc, _ := loadSpec(t)
		callback := doc.Paths.Value("/webhooks").Post.Callbacks["delivery"].Value.Value("{$request.body#/url}")
		route := &routers.Route{Spec: doc, Path: "{$request.body#/url}", PathItem: callback, Method: http.MethodPost, Operation: callback.Post}

		type captured struct {
			req  *http.Request
			body []byte
		}
		got := make(chan captured, 2*len(examples))
		receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			got <- captured{r.Clone(context.Background()), body}
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(receiver.Close)

		e := newEnv(t, b, options{allowPrivate: true})
		e.register(t, receiver.URL+"/govgate")
		var batch core.IndexBatch
		batch.DAO, batch.ChainID, batch.Cursor = "uniswap", 1, core.Cursor{Block: 1, Hash: hexHash(1)}
		for _, f := range examples {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var n core.Notification
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			batch.Notifications = append(batch.Notifications, n)
		}
		if err := e.store.ApplyBatch(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		d, err := delivery.New(delivery.Config{Queue: e.store, Client: receiver.Client(), UserAgent: "govgate/test",
			Timeout: 5 * time.Second, Workers: 4, PerWebhookConcurrency: 4, Schedule: []time.Duration{time.Hour},
			Lease: time.Minute, BatchSize: 16, PollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); d.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })

		types := map[string]bool{}
		timeout := time.After(30 * time.Second)
		for len(types) < len(examples) {
			select {
			case c := <-got:
				req := c.req.Clone(context.Background())
				req.Body = io.NopCloser(bytes.NewReader(c.body))
				if err := openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
					Request: req, Route: route, Options: &openapi3filter.Options{MultiError: true}}); err != nil {
					t.Fatalf("a delivery does not match the document: %v\n%s\n%s", err, c.req.Header, c.body)
				}
				var n struct{ ID, Type string }
				json.Unmarshal(c.body, &n)
				if n.ID != c.req.Header.Get(signing.HeaderID) {
					t.Fatalf("X-Webhook-Id %q for notification %q", c.req.Header.Get(signing.HeaderID), n.ID)
				}
				types[n.Type] = true
			case <-timeout:
				t.Fatalf("delivered %v of %d examples in 30 s", types, len(examples))
			}
		}
	})
}

// TestOpenAPINotificationSchema checks that the document's notification
// schema refuses what docs/schemas/notification.schema.json refuses.
func TestOpenAPINotificationSchema(t *testing.T) {
	t.Parallel()
	doc, _ := loadSpec(t)
	schema := doc.Components.Schemas["Notification"].Value
	meta := `"chainId": 1, "governor": "0x408ED6354d4973f66138C91495F2f2FCbd8724C3", "proposalId": "1", "blockNumber": 1,
		"blockHash": "` + hexHash(1) + `", "txHash": "` + hexHash(2) + `", "logIndex": 0`
	for _, tt := range []struct {
		name, doc string
		ok        bool
	}{
		{"test", `{"id": "a", "type": "test", "dao": "x", "occurredAt": "2026-01-01T00:00:00Z", "data": {"hello": "world"}}`, true},
		{"queued", `{"id": "a", "type": "proposal.queued", "dao": "x", "occurredAt": "2026-01-01T00:00:00Z", "data": {` + meta + `, "eta": "1764237600"}}`, true},
		{"missing id", `{"type": "test", "dao": "x", "occurredAt": "2026-01-01T00:00:00Z", "data": {}}`, false},
		{"extra field", `{"id": "a", "type": "test", "dao": "x", "occurredAt": "2026-01-01T00:00:00Z", "data": {}, "x": 1}`, false},
		{"bad time", `{"id": "a", "type": "test", "dao": "x", "occurredAt": "yesterday", "data": {}}`, false},
		{"bad dao", `{"id": "a", "type": "test", "dao": "X Y", "occurredAt": "2026-01-01T00:00:00Z", "data": {}}`, false},
		{"data not an object", `{"id": "a", "type": "test", "dao": "x", "occurredAt": "2026-01-01T00:00:00Z", "data": []}`, false},
		{"vote without its fields", `{"id": "a", "type": "vote.cast", "dao": "x", "occurredAt": "2026-01-01T00:00:00Z", "data": {"hello": "world"}}`, false},
		{"vote without weight", `{"id": "a", "type": "vote.cast", "dao": "x", "occurredAt": "2026-01-01T00:00:00Z", "data": {` + meta +
			`, "voter": "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E", "support": 1, "supportLabel": "for", "reason": ""}}`, false},
		{"eta as a number", `{"id": "a", "type": "proposal.queued", "dao": "x", "occurredAt": "2026-01-01T00:00:00Z", "data": {` + meta + `, "eta": 1764237600}}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.doc), &v); err != nil {
				t.Fatal(err)
			}
			err := schema.VisitJSON(v)
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// checkSpecDAO is the spec's check of a DAO against its chain: a
// governor at 0x…dEaD holds no code, chain 9 does not answer. e2e tests
// the real check on a real chain.
func checkSpecDAO(_ context.Context, d core.DAO) error {
	switch {
	case strings.EqualFold(d.Governor, "0x000000000000000000000000000000000000dEaD"):
		return httpapi.FieldErr(&core.FieldError{Field: "governor", Message: "no contract at " + d.Governor})
	case d.ChainID == 9:
		return core.Errorf(core.ECodeUnavailable, "chain 9 did not answer to check the dao; try again")
	}
	return nil
}

// TestEveryServedKindIsDocumented compares the governor kinds govgate
// serves (and accepts) with the OpenAPI document's enum.
func TestEveryServedKindIsDocumented(t *testing.T) {
	doc, _ := loadSpec(t)
	var enum []string
	for _, v := range doc.Components.Schemas["GovernorKind"].Value.Enum {
		enum = append(enum, fmt.Sprint(v))
	}
	served := core.GovernorKindNames()
	slices.Sort(enum)
	slices.Sort(served)
	if !slices.Equal(enum, served) {
		t.Fatalf("the document's kinds %v, govgate's %v", enum, served)
	}
	// Each served DAO's kind validates against the DAO schema.
	for _, k := range core.GovernorKinds {
		d := core.DAO{Slug: "k", Name: "K", ChainID: 1, Governor: "0x408ED6354d4973f66138C91495F2f2FCbd8724C3", Kind: k}
		raw, _ := json.Marshal(d)
		var v any
		json.Unmarshal(raw, &v)
		if err := doc.Components.Schemas["DAO"].Value.VisitJSON(v); err != nil {
			t.Errorf("a %s DAO does not match the document: %v", k, err)
		}
	}
}
