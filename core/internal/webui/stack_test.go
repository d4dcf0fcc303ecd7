package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/calldata"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/store"
)

const testToken = "web-test-admin-token"

var testDAOs = []core.DAO{
	{Slug: "uniswap", Name: "Uniswap", ChainID: 1, Governor: "0x408ED6354d4973f66138C91495F2f2FCbd8724C3", Kind: core.KindGovernorBravo},
	{Slug: "ens", Name: "ENS", ChainID: 1, Governor: "0x323A76393544d5ecca80cd6ef2A560C6a395b7E3", Kind: core.KindOZGovernor},
	{Slug: "arbitrum", Name: "Arbitrum", ChainID: 42161, Governor: "0xf07DeD9dC292157749B6Fd268E37DF6EA38395B9", Kind: core.KindOZGovernor},
}

// stack is the admin listener as govgate wires it, in-process: the real
// admin API on a real SQLite store, the page in front of it. With contract
// set, routes that other packages are still building (health, plugins,
// chains, try-it) are served by contractAPI, which follows their agreed
// JSON shapes.
type stack struct {
	st       *store.Store
	ui       *UI
	srv      *httptest.Server
	contract *contractAPI
}

func newStack(t *testing.T, contract bool, mutate ...func(*Config)) *stack {
	t.Helper()
	box, err := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t, storetest.SQLite.NewDatabase(t), box, store.Options{Logger: slog.New(slog.DiscardHandler)})
	s := &stack{st: st}
	cfg := httpapi.AdminConfig{
		Store: st, DAOs: core.FixedDAOs(testDAOs), Token: testToken, Logger: slog.New(slog.DiscardHandler),
		UI:         http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.ui.ServeHTTP(w, r) }),
		Authorized: func(r *http.Request) bool { return s.ui.Authorized(r) },
	}
	if contract {
		s.contract = newContractAPI()
		cfg.Routes = []func(*gin.RouterGroup){s.contract.routes}
	}
	admin := httpapi.NewAdmin(cfg)
	log := slog.New(slog.DiscardHandler)
	rest := httpapi.NewAPI(httpapi.APIConfig{DAOs: core.FixedDAOs(testDAOs), Logger: log, Routes: []func(*gin.Engine){httpapi.ProposalRoutes(httpapi.WithActions(st, decoder(t)), core.FixedDAOs(testDAOs), log), httpapi.DelegateRoutes(st, core.FixedDAOs(testDAOs), log)}})
	uc := Config{API: admin, REST: rest, Token: testToken}
	for _, m := range mutate {
		m(&uc)
	}
	s.ui, err = New(uc)
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(admin)
	t.Cleanup(s.srv.Close)
	return s
}

// decoder is the calldata decoder govgate wires into the REST API.
func decoder(t *testing.T) *calldata.Decoder {
	t.Helper()
	d, err := calldata.New(calldata.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// seed registers webhooks and runs deliveries through the real queue so the
// pages have something true to show: successes, retries with the
// receiver's answer, a failure, and a deactivated webhook.
func (s *stack) seed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	urls := []string{
		"https://hooks.example.org/govgate/uniswap",
		"https://ops.example.com/alerts/governance",
		"https://discord-bridge.example.net/dao-feed",
		"https://old.example.io/webhook",
	}
	var ids []int64
	for _, u := range urls {
		wh, _, err := s.st.RegisterWebhook(ctx, u, "whsec_test")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, wh.ID)
	}
	now := time.Now().UTC()
	notes := []core.Notification{
		{ID: "ntf_01", Type: core.TypeProposalCreated, DAO: "uniswap", Data: json.RawMessage(`{"proposalId":"71","title":"Deploy Uniswap v4 on Unichain","proposer":"0x1f98…F984"}`)},
		{ID: "ntf_02", Type: core.TypeVoteCast, DAO: "uniswap", Data: json.RawMessage(`{"proposalId":"71","voter":"0x2B1A…5fF4","support":1,"weight":"2500000"}`)},
		{ID: "ntf_03", Type: core.TypeProposalQueued, DAO: "ens", Data: json.RawMessage(`{"proposalId":"0x9c…e1","eta":1767225600}`)},
		{ID: "ntf_04", Type: core.TypeVoteCast, DAO: "arbitrum", Data: json.RawMessage(`{"proposalId":"5343","voter":"0xF92F…7b1c","support":0,"weight":"11800000"}`)},
		{ID: "ntf_05", Type: core.TypeProposalExecuted, DAO: "ens", Data: json.RawMessage(`{"proposalId":"0x9c…e1","transactionHash":"0x5c50…2060"}`)},
	}
	for i, n := range notes {
		n.OccurredAt = now.Add(time.Duration(i-len(notes)) * 7 * time.Minute)
		if _, err := s.st.CreateNotification(ctx, n, "test"); err != nil {
			t.Fatal(err)
		}
	}
	// Two rounds of attempts: receiver 2 fails once then recovers, receiver 3
	// keeps failing, the others succeed.
	for round := 0; round < 3; round++ {
		jobs, err := s.st.Claim(ctx, 100, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		var results []core.AttemptResult
		for i, j := range jobs {
			r := core.AttemptResult{Job: j, StartedAt: time.Now(), Duration: time.Duration(40+i*13) * time.Millisecond, Outcome: core.OutcomeSucceeded, StatusCode: 200, ResponseExcerpt: `{"ok":true}`}
			switch {
			case j.WebhookID == ids[2]:
				r.Outcome, r.StatusCode, r.ResponseExcerpt, r.Error = core.OutcomeRetry, 503, `{"error":"upstream busy, retry later"}`, "receiver answered 503"
				r.NextAttemptAt = time.Now()
				if round == 2 {
					r.Outcome = core.OutcomeFailed
				}
			case j.WebhookID == ids[1] && round == 0 && j.Notification.ID == "ntf_02":
				r.Outcome, r.StatusCode, r.Duration, r.Error, r.ResponseExcerpt = core.OutcomeRetry, 0, 2*time.Second, "timeout awaiting response headers", ""
				r.NextAttemptAt = time.Now()
			}
			results = append(results, r)
		}
		if len(results) > 0 {
			if _, err := s.st.Complete(ctx, results, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.st.DeactivateWebhookByID(ctx, ids[3], "the receiver answered 410 Gone"); err != nil {
		t.Fatal(err)
	}
}

// contractAPI serves the admin routes whose implementation lives in other
// packages, following the agreed JSON contract, from memory.
type contractAPI struct {
	mu      sync.Mutex
	plugins []map[string]any
	chain   []map[string]any
	hooks   map[string][]map[string]any
	health  []map[string]any
}

// headTime is the block time of the chain heads in the contract's health
// snapshots: fixed, so that times left on the proposal pages are too.
var headTime = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func newContractAPI() *contractAPI {
	at := time.Now().UTC().Add(-26 * time.Hour).Format(time.RFC3339)
	now := time.Now().UTC().Format(time.RFC3339)
	return &contractAPI{
		plugins: []map[string]any{
			{"name": "type-filter", "version": "1.2.0", "abi": 1, "size": 48_213, "sha256": "9f2c1be0a4d7c3e8b1f05a6e2d9c7b4a1e3f5d7c9b2a4e6f8d0c1b3a5e7f9d2c", "hooks": []string{"filter"}, "configSchema": map[string]any{"type": "object", "properties": map[string]any{"types": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}, "enabled": true, "loaded": true, "source": "upload", "uploadedAt": at},
			{"name": "slack-format", "version": "0.4.1", "abi": 1, "size": 131_072, "sha256": "1a3e5c7b9d2f4a6c8e0b1d3f5a7c9e2b4d6f8a0c1e3b5d7f9a2c4e6b8d0f1a3c", "hooks": []string{"transform"}, "configSchema": map[string]any{}, "enabled": true, "loaded": true, "source": "upload", "uploadedAt": at},
			{"name": "whale-votes", "version": "0.1.0", "abi": 1, "size": 66_560, "sha256": "c4e6b8d0f1a3c5e7b9d2f4a6c8e0b1d3f5a7c9e2b4d6f8a0c1e3b5d7f9a2c4e6", "hooks": []string{"filter", "transform"}, "enabled": false, "uploadedAt": at},
		},
		chain: []map[string]any{
			{"plugin": "type-filter", "config": map[string]any{"types": []string{"proposal.created", "proposal.executed", "vote.cast"}}, "failurePolicy": "closed"},
			{"plugin": "slack-format", "config": map[string]any{}, "failurePolicy": "open"},
		},
		hooks: map[string][]map[string]any{},
		// uniswap and ens have core/internal/health's shape (checks nested); arbitrum
		// has the flat shape first agreed on: the page reads both.
		health: []map[string]any{
			{"dao": "uniswap", "status": "pass", "chainId": 1, "checkedAt": now, "checks": map[string]any{
				"database":  map[string]any{"status": "pass", "latencyMs": 0.8},
				"chainHead": map[string]any{"status": "pass", "number": 21874310, "hash": "0x8d4e…91ab", "timestamp": headTime.Format(time.RFC3339), "ageSeconds": 4},
				"indexer":   map[string]any{"status": "pass", "state": "fresh", "lastIndexedBlock": 21874309, "confirmedHead": 21874309, "lagBlocks": 0, "lagSeconds": 0, "notifyFromBlock": 0},
				"gateway":   map[string]any{"status": "pass", "open": 0, "upstreams": []map[string]any{{"url": "https://eth.rpc.example/v1", "state": "closed", "consecutiveFailures": 0, "totalFailures": 2}}}}},
			{"dao": "ens", "status": "warn", "chainId": 1, "checkedAt": now, "output": "backfilling: 655732 of 874310 blocks (75%), 412 events/s, about 2m28s left; 1 of 2 RPC upstreams is recovering", "checks": map[string]any{
				"database":  map[string]any{"status": "pass", "latencyMs": 0.9},
				"chainHead": map[string]any{"status": "pass", "number": 21874310, "hash": "0x8d4e…91ab", "ageSeconds": 4},
				"indexer": map[string]any{"status": "warn", "state": "syncing", "lastIndexedBlock": 21655732, "confirmedHead": 21874310, "lagBlocks": 218578, "lagSeconds": 2732225,
					"notifyFromBlock": 21874311, "output": "backfilling: 655732 of 874310 blocks (75%), 412 events/s, about 2m28s left",
					"backfill": map[string]any{"fromBlock": 21000000, "toBlock": 21874310, "blocksDone": 655732, "blocksTotal": 874310, "events": 18230, "eventsPerSecond": 412.5, "blocksPerSecond": 1480.2, "etaSeconds": 147.7}},
				"gateway": map[string]any{"status": "warn", "open": 0, "upstreams": []map[string]any{{"url": "https://eth.rpc.example/v1", "state": "closed", "consecutiveFailures": 0}, {"url": "https://backup.rpc.example", "state": "half-open", "consecutiveFailures": 3, "lastError": "429 Too Many Requests"}}}}},
			{"dao": "arbitrum", "status": "fail", "checkedAt": now, "output": "indexer stalled for 49 min; every RPC upstream is failing", "database": map[string]any{"status": "pass", "latencyMs": 1.1},
				"chainHead": map[string]any{"number": 305112877, "timestamp": headTime.Format(time.RFC3339), "ageSeconds": 312},
				"indexer":   map[string]any{"status": "stalled", "lastIndexedBlock": 305101002, "lagBlocks": 11875, "lagSeconds": 2969},
				"gateway":   map[string]any{"state": "open", "upstreams": []map[string]any{{"url": "https://arb.rpc.example", "state": "open", "consecutiveFailures": 12, "lastError": "dial tcp: connection refused"}}}},
		},
	}
}

func (c *contractAPI) routes(g *gin.RouterGroup) {
	ok := func(ctx *gin.Context, v any) { ctx.JSON(http.StatusOK, v) }
	fail := func(ctx *gin.Context, status int, code, msg string) {
		ctx.JSON(status, httpapi.ErrorBody{Error: httpapi.ErrorDetail{Code: code, Message: msg}})
	}
	g.GET("/health", func(ctx *gin.Context) { c.mu.Lock(); defer c.mu.Unlock(); ok(ctx, gin.H{"items": c.health}) })
	g.GET("/plugins", func(ctx *gin.Context) { c.mu.Lock(); defer c.mu.Unlock(); ok(ctx, gin.H{"items": c.plugins}) })
	g.POST("/plugins", func(ctx *gin.Context) {
		body, _ := io.ReadAll(ctx.Request.Body)
		if ctx.GetHeader("Content-Type") != "application/wasm" {
			fail(ctx, 415, "unsupported_media_type", "Content-Type must be application/wasm")
			return
		}
		if len(body) < 8 || string(body[:4]) != "\x00asm" {
			fail(ctx, 422, "invalid_request", "the upload is not a WebAssembly module (no \\0asm header)")
			return
		}
		p := map[string]any{"name": "uploaded-plugin", "version": "0.0.1", "abi": 1, "size": len(body), "sha256": strings.Repeat("ab", 32), "hooks": []string{"filter"}, "enabled": true, "uploadedAt": time.Now().UTC()}
		c.mu.Lock()
		c.plugins = append(c.plugins, p)
		c.mu.Unlock()
		ctx.JSON(http.StatusCreated, p)
	})
	g.POST("/plugins/try", func(ctx *gin.Context) {
		var in struct {
			Chain        []map[string]any
			Notification core.Notification
		}
		if err := json.NewDecoder(ctx.Request.Body).Decode(&in); err != nil {
			fail(ctx, 400, "invalid_json", "body must be JSON")
			return
		}
		keep := in.Notification.Type != core.TypeProposalCanceled
		steps := []gin.H{{"plugin": "type-filter", "hook": "filter", "decision": map[bool]string{true: "kept", false: "dropped"}[keep], "durationMs": 0.41, "logs": []string{fmt.Sprintf("type %s is %s", in.Notification.Type, map[bool]string{true: "allowed", false: "not in the list"}[keep])}}}
		out := gin.H{"keep": keep, "durationMs": 0.41, "steps": steps, "contentType": "application/json"}
		if keep {
			steps = append(steps, gin.H{"plugin": "slack-format", "hook": "transform", "decision": "transformed", "durationMs": 0.73, "logs": []string{"formatted for Slack"}})
			out["steps"] = steps
			out["durationMs"] = 1.14
			out["body"] = fmt.Sprintf(`{"text":"*%s* — %s on %s"}`, strings.ToUpper(in.Notification.DAO), in.Notification.Type, in.Notification.OccurredAt.Format(time.RFC822))
		} else {
			out["dropReason"] = "type-filter: type not in the allowed list"
		}
		ok(ctx, out)
	})
	action := func(enabled bool) gin.HandlerFunc {
		return func(ctx *gin.Context) {
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, p := range c.plugins {
				if p["name"] == ctx.Param("name") {
					p["enabled"] = enabled
					ok(ctx, p)
					return
				}
			}
			fail(ctx, 404, "not_found", "no plugin named "+ctx.Param("name"))
		}
	}
	g.POST("/plugins/:name/enable", action(true))
	g.POST("/plugins/:name/disable", action(false))
	g.DELETE("/plugins/:name", func(ctx *gin.Context) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, p := range c.plugins {
			if p["name"] == ctx.Param("name") {
				c.plugins = append(c.plugins[:i], c.plugins[i+1:]...)
				ctx.Status(http.StatusNoContent)
				return
			}
		}
		fail(ctx, 404, "not_found", "no plugin named "+ctx.Param("name"))
	})
	get := func(ctx *gin.Context) {
		c.mu.Lock()
		defer c.mu.Unlock()
		items := c.chain
		if id := ctx.Param("id"); id != "" {
			items = c.hooks[id]
		}
		if items == nil {
			items = []map[string]any{}
		}
		ok(ctx, gin.H{"items": items})
	}
	put := func(ctx *gin.Context) {
		var in struct{ Items []map[string]any }
		if err := json.NewDecoder(ctx.Request.Body).Decode(&in); err != nil {
			fail(ctx, 400, "invalid_json", "body must be JSON")
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if id := ctx.Param("id"); id != "" {
			c.hooks[id] = in.Items
		} else {
			c.chain = in.Items
		}
		ok(ctx, gin.H{"items": in.Items})
	}
	g.GET("/chain", get)
	g.PUT("/chain", put)
	g.GET("/webhooks/:id/chain", get)
	g.PUT("/webhooks/:id/chain", put)
}

// chainNames returns the plugin names of the global chain, in order.
func (c *contractAPI) chainNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.chain {
		out = append(out, fmt.Sprint(e["plugin"]))
	}
	return out
}

// seedProposals stores proposals in each of the eight states, with votes,
// through the indexer's write path. Their timepoints are set against the
// contract's health snapshots (headTime, the confirmed heads), so that the
// times left the pages show are known in advance:
//
//   - uniswap (GovernorBravo, block clock, confirmed head 21874309, no
//     measured block time): active with 1800 blocks left, "≈ 6 h" at 12 s;
//     pending with 300 blocks to go, "≈ 1 h"; queued with an ETA 26 h 30 min
//     after the head; and one each executed, defeated, canceled, expired,
//     succeeded.
//   - ens (OpenZeppelin, block clock, confirmed head 21874310, backfilling
//     at a measured 12.5 s a block): active with 7000 blocks left,
//     "≈ 24 h 18 min"; quorum reached only because abstain counts.
//   - arbitrum (OpenZeppelin, timestamp clock): active until 2 h 30 min
//     after the head's block time, pending until 45 min after it.
func (s *stack) seedProposals(t *testing.T) {
	t.Helper()
	const e18 = "000000000000000000"
	quorum := func(q string) *string { return &q }
	created := time.Date(2026, 11, 10, 9, 0, 0, 0, time.UTC)
	hash := func(i int) string { return fmt.Sprintf("0x%064x", 0xa11ce000+i) }
	type seeded struct {
		dao     string
		chainID uint64
		props   []core.Proposal
		votes   []core.Vote
		head    uint64
	}
	n := 0
	prop := func(dao string, chainID uint64, id, title, proposer, state string, start, end uint64, clock string, q *string, reached bool, forV, against, abstain string) core.Proposal {
		n++
		return core.Proposal{DAO: dao, ChainID: chainID, ProposalID: id, Proposer: proposer,
			Targets: []string{"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"}, Values: []string{"0"}, Signatures: []string{"transfer(address,uint256)"},
			Calldatas:   []string{"0x000000000000000000000000e2388f22cf5e328c197d6530663809cc0f2e3b7000000000000000000000000000000000000000000000d3c21bcecceda1000000"},
			Title:       title,
			Description: "# " + title + "\n\nThis proposal was seeded by the admin page's tests.",
			VoteStart:   start, VoteEnd: end, Clock: clock, State: state, Quorum: q, QuorumReached: reached,
			ForVotes: forV, AgainstVotes: against, AbstainVotes: abstain,
			CreatedBlock: start - 13140 + uint64(n), CreatedTx: hash(n), CreatedAt: created.Add(time.Duration(n) * time.Hour),
			UpdatedBlock: start + uint64(n), UpdatedAt: created.Add(time.Duration(n)*time.Hour + time.Minute)}
	}
	const (
		uni   = uint64(21874309) // uniswap's confirmed head
		ens   = uint64(21874310)
		alice = "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E"
		bob   = "0x6f3E6272A167e8AcCb32072d08E0957F9c79223d"
		carol = "0x2B1Ad6184a6B0fac06bD225ed37C2AbC04415fF4"
		dave  = "0xF92F3C1b6f8E0b5d7c4a3e9b1d2c5f8a7e6d7b1c"
	)
	bn, ts := core.ClockBlockNumber, core.ClockTimestamp
	uq := quorum("40000000" + e18)
	active := prop("uniswap", 1, "75", "Deploy Uniswap v4 on Unichain", alice, core.ProposalActive, uni-38520, uni+1800, bn, uq, true, "41250000"+e18, "1200"+e18, "5"+e18)
	queued := prop("uniswap", 1, "74", "Fund the Uniswap Foundation for 2027", bob, core.ProposalQueued, uni-60000, uni-19680, bn, uq, true, "44100000"+e18, "310000"+e18, "0")
	queued.ETA = uint64(headTime.Add(26*time.Hour + 30*time.Minute).Unix())
	expired := prop("uniswap", 1, "70", "Move the treasury to a new Safe", alice, core.ProposalExpired, uni-200000, uni-159680, bn, uq, true, "40500000"+e18, "0", "0")
	expired.ETA = uint64(headTime.Add(-20 * 24 * time.Hour).Unix())
	uniProps := []core.Proposal{
		prop("uniswap", 1, "69", "Renew the Uniswap grants programme", carol, core.ProposalSucceeded, uni-230000, uni-189680, bn, uq, true, "40200000"+e18, "2000000"+e18, "0"),
		expired,
		prop("uniswap", 1, "71", "Lower the proposal threshold to 1M", bob, core.ProposalCanceled, uni-150000, uni-109680, bn, uq, false, "0", "0", "0"),
		prop("uniswap", 1, "72", "Raise the proposal threshold to 2.5M", dave, core.ProposalDefeated, uni-100000, uni-59680, bn, uq, false, "12000000"+e18, "18500000"+e18, "0"),
		prop("uniswap", 1, "73", "Activate the fee switch on v3 pools", carol, core.ProposalExecuted, uni-90000, uni-49680, bn, uq, true, "52000000"+e18, "9000000"+e18, "100"+e18),
		queued,
		active,
		prop("uniswap", 1, "76", "Create a Unichain security council", dave, core.ProposalPending, uni+300, uni+40620, bn, nil, false, "0", "0", "0"),
	}
	ensID := "84612149291849381049183918384893128381283918239121"
	ensProps := []core.Proposal{
		prop("ens", 1, "59218450019827561004915128361049587710293847561", "[EP 5.28] Renew the ENS Labs stream", alice, core.ProposalSucceeded, ens-60000, ens-15000, bn, quorum("1000000"+e18), true, "1900000"+e18, "40000"+e18, "3000"+e18),
		prop("ens", 1, ensID, "[EP 6.1] Fund the Public Goods working group", carol, core.ProposalActive, ens-38000, ens+7000, bn, quorum("1000000"+e18), true, "800000"+e18, "150000"+e18, "700000"+e18),
	}
	arbStart := uint64(headTime.Add(-70 * time.Hour).Unix())
	arbProps := []core.Proposal{
		prop("arbitrum", 42161, "97685288731263391833044854304895851471157040105038894699042975271050068874277", "[Constitutional] Upgrade the ArbOS version", bob, core.ProposalActive, arbStart, uint64(headTime.Add(150*time.Minute).Unix()), ts, quorum("150000000"+e18), false, "50000000"+e18, "10000000"+e18, "5000000"+e18),
		prop("arbitrum", 42161, "10582391828192758122948571029384756102938475610293847561029384756102938475610", "[Non-constitutional] Gaming catalyst programme, round 2", dave, core.ProposalPending, uint64(headTime.Add(45*time.Minute).Unix()), uint64(headTime.Add(14*24*time.Hour).Unix()), ts, nil, false, "0", "0", "0"),
	}
	vote := func(p core.Proposal, i int, voter string, support uint8, weight, reason string) core.Vote {
		return core.Vote{DAO: p.DAO, ChainID: p.ChainID, ProposalID: p.ProposalID, Voter: voter, Support: support, Weight: weight, Reason: reason,
			BlockNumber: p.VoteStart + uint64(10*i), BlockHash: hash(100 + i), TxHash: hash(200 + i), LogIndex: uint(i), CastAt: created.Add(time.Duration(30+i) * time.Hour)}
	}
	for _, b := range []seeded{
		{dao: "uniswap", chainID: 1, props: uniProps, head: uni, votes: []core.Vote{
			vote(active, 1, alice, 1, "25000000"+e18, "Unichain is where the next users are."),
			vote(active, 2, carol, 1, "16250000"+e18, ""),
			vote(active, 3, bob, 0, "1200"+e18, "The deployment should wait for the audit."),
			vote(active, 4, dave, 2, "5"+e18, "Abstaining: conflict of interest."),
		}},
		{dao: "ens", chainID: 1, props: ensProps, head: ens, votes: []core.Vote{vote(ensProps[1], 1, carol, 1, "800000"+e18, "")}},
		{dao: "arbitrum", chainID: 42161, props: arbProps, head: 305112800},
	} {
		batch := core.IndexBatch{DAO: b.dao, ChainID: b.chainID, Cursor: core.Cursor{Block: b.head, Hash: hash(900)}, Proposals: b.props, Votes: b.votes}
		if err := s.st.ApplyBatch(context.Background(), batch); err != nil {
			t.Fatalf("seed %s proposals: %v", b.dao, err)
		}
	}
}
