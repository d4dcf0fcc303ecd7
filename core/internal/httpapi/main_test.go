package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/signing"
	"github.com/govgate/govgate/core/internal/store"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// adminToken is the admin API token of every test environment.
const adminToken = "t0k"

// daos are the DAOs every test environment is configured with.
var daos = []core.DAO{
	{Slug: "uniswap", Name: "Uniswap", ChainID: 1, Governor: "0x408ED6354d4973f66138C91495F2f2FCbd8724C3", Kind: core.KindOZGovernor, StartBlock: 13059157},
	{Slug: "compound", Name: "Compound", ChainID: 1, Governor: "0xc0Da02939E1441F497fd74F78cE7Decb17B66529", Kind: core.KindGovernorBravo, StartBlock: 12006099},
}

// backend opens a fresh store; where is the SQLite file or the PostgreSQL URL.
type backend struct {
	name string
	open func(t *testing.T, log *slog.Logger) (s *store.Store, where string)
}

// backends lists the databases every store-backed test runs on:
// storetest's (an embedded SQLite file and a real PostgreSQL server), a
// database per test.
var backends = func() []backend {
	var out []backend
	for _, b := range storetest.Backends() {
		out = append(out, backend{b.Name, func(t *testing.T, log *slog.Logger) (*store.Store, string) {
			url := b.NewDatabase(t)
			where := url
			if p := storetest.Path(url); p != "" {
				where = p
			}
			return openStore(t, url, log), where
		}})
	}
	return out
}()

func openStore(t *testing.T, url string, log *slog.Logger) *store.Store {
	t.Helper()
	return storetest.Open(t, url, storetest.NewBox(t), store.Options{Logger: log})
}

// each runs fn once per backend, in parallel.
func each(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// syncBuffer is a bytes.Buffer that handlers may write while a test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is a running webhook service and admin API over one real store, each
// behind its own TCP listener, as in production.
type env struct {
	store    *store.Store
	where    string
	logs     *syncBuffer
	webhooks *httptest.Server
	admin    *httptest.Server
}

// options change an environment's configuration from the defaults: private
// URLs refused, a rate limit no test reaches, admin token adminToken, the
// wall clock.
type options struct {
	allowPrivate  bool
	ratePerMinute float64
	burst         int
	token         *string
	now           func() time.Time
}

func newEnv(t *testing.T, b backend, o options) *env {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, where := b.open(t, log)
	if o.ratePerMinute == 0 {
		o.ratePerMinute, o.burst = 1e6, 1000
	}
	token := adminToken
	if o.token != nil {
		token = *o.token
	}
	e := &env{store: s, where: where, logs: logs}
	e.webhooks = httptest.NewServer(httpapi.NewWebhookService(httpapi.WebhookServiceConfig{
		Registry: s, NewSecret: signing.NewSecret, AllowPrivate: o.allowPrivate,
		RatePerMinute: o.ratePerMinute, Burst: o.burst, Logger: log, AdminToken: token, DAOs: daos, Now: o.now,
	}))
	t.Cleanup(e.webhooks.Close)
	e.admin = httptest.NewServer(httpapi.NewAdmin(httpapi.AdminConfig{Store: s, DAOs: core.FixedDAOs(daos), Token: token, Logger: log}))
	t.Cleanup(e.admin.Close)
	return e
}

// response is an HTTP answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// do sends one request over client; header values of "" are left out.
func do(t *testing.T, client *http.Client, method, url string, header map[string]string, body string) response {
	t.Helper()
	r, err := send(client, method, url, header, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send is do for goroutines other than the test's.
func send(client *http.Client, method, url string, header map[string]string, body string) (response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return response{}, err
	}
	for k, v := range header {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := client.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: reading the body: %w", method, url, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: raw}, nil
}

var jsonType = map[string]string{"Content-Type": "application/json"}

// hook sends POST or DELETE /webhooks with {"url": url}.
func (e *env) hook(t *testing.T, method, url string) response {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"url": url})
	return do(t, e.webhooks.Client(), method, e.webhooks.URL+"/webhooks", jsonType, string(body))
}

// hookRaw sends method /webhooks with a raw body and content type.
func (e *env) hookRaw(t *testing.T, method, contentType, body string) response {
	t.Helper()
	return do(t, e.webhooks.Client(), method, e.webhooks.URL+"/webhooks", map[string]string{"Content-Type": contentType}, body)
}

// adminDo calls the admin API with the right token; body, when not empty,
// is sent as JSON.
func (e *env) adminDo(t *testing.T, method, path, body string) response {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + adminToken}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	return do(t, e.admin.Client(), method, e.admin.URL+path, h, body)
}

// register registers url and returns its new secret, failing unless the
// answer is a first registration.
func (e *env) register(t *testing.T, url string) string {
	t.Helper()
	return wantCreated(t, e.hook(t, http.MethodPost, url))
}

// webhookByURL returns the stored webhook with this normal-form url.
func (e *env) webhookByURL(t *testing.T, url string) (core.Webhook, bool) {
	t.Helper()
	for _, wh := range e.allWebhooks(t) {
		if wh.URL == url {
			return wh, true
		}
	}
	return core.Webhook{}, false
}

func (e *env) allWebhooks(t *testing.T) []core.Webhook {
	t.Helper()
	list, _, err := e.store.ListWebhooks(context.Background(), core.WebhookFilter{}, core.Page{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// storedState is every webhook with its secret: what a bad request must
// leave untouched.
type storedState struct {
	Webhook core.Webhook
	Secret  string
}

func (e *env) snapshot(t *testing.T) []storedState {
	t.Helper()
	var out []storedState
	for _, wh := range e.allWebhooks(t) {
		sec, err := e.store.WebhookSecret(context.Background(), wh.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, storedState{wh, sec})
	}
	return out
}

func (e *env) wantUnchanged(t *testing.T, before []storedState) {
	t.Helper()
	if after := e.snapshot(t); !reflect.DeepEqual(before, after) {
		t.Fatalf("stored webhooks changed:\nbefore %+v\nafter  %+v", before, after)
	}
}

// decode decodes a JSON body by meaning, numbers as json.Number.
func decode(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, raw)
	}
	if dec.More() {
		t.Fatalf("body has data after the JSON value: %s", raw)
	}
	return v
}

func object(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	m, ok := decode(t, raw).(map[string]any)
	if !ok {
		t.Fatalf("body is not a JSON object: %s", raw)
	}
	return m
}

func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// wantJSON checks that r has status and a JSON body equal in meaning to want.
func wantJSON(t *testing.T, r response, status int, want string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if got, w := decode(t, r.body), decode(t, []byte(want)); !reflect.DeepEqual(got, w) {
		t.Fatalf("body %s, want %s", r.body, want)
	}
}

// wantError checks that r is an error answer of this status and code in
// exactly the shape {"success": false, "error": {"code", "message"}}.
func wantError(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	m := object(t, r.body)
	if !slices.Equal(keys(m), []string{"error", "success"}) || m["success"] != false {
		t.Fatalf("error body %s, want exactly success:false and error", r.body)
	}
	detail, ok := m["error"].(map[string]any)
	if !ok || !slices.Equal(keys(detail), []string{"code", "message"}) {
		t.Fatalf("error object in %s, want exactly code and message", r.body)
	}
	if c, _ := detail["code"].(string); c != code {
		t.Fatalf("error code %v, want %q: %s", detail["code"], code, r.body)
	}
	if msg, _ := detail["message"].(string); strings.TrimSpace(msg) == "" {
		t.Fatalf("error message %v is not a non-empty string: %s", detail["message"], r.body)
	}
}

// wantCreated checks a first registration's answer and returns its secret.
func wantCreated(t *testing.T, r response) string {
	t.Helper()
	if r.status != http.StatusCreated {
		t.Fatalf("status %d, want 201: %s", r.status, r.body)
	}
	m := object(t, r.body)
	if !slices.Equal(keys(m), []string{"note", "secret", "success"}) || m["success"] != true {
		t.Fatalf("first registration answered %s, want success, secret and note", r.body)
	}
	secret, _ := m["secret"].(string)
	if !signing.ValidSecret(secret) {
		t.Fatalf("secret %q is not whsec_ and the base64 of 32 bytes", m["secret"])
	}
	if note, _ := m["note"].(string); strings.TrimSpace(note) == "" {
		t.Fatalf("note %v is not a non-empty string", m["note"])
	}
	return secret
}

// wantSuccessOnly checks a 200 {"success": true} with no other key.
func wantSuccessOnly(t *testing.T, r response) {
	t.Helper()
	wantJSON(t, r, http.StatusOK, `{"success": true}`)
}
