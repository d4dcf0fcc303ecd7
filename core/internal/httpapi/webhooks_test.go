package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/store"
)

// TestRegistrationLifecycle walks the state table of the contract over
// HTTP: first registration, registration while active, deactivation,
// deactivation of what is not active, and reactivation with a new secret.
func TestRegistrationLifecycle(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		ctx := context.Background()
		const url = "https://hooks.example.com/lifecycle"

		first := e.register(t, url)
		wh, ok := e.webhookByURL(t, url)
		if !ok || wh.State != core.WebhookActive {
			t.Fatalf("after the first registration: %+v (found %v)", wh, ok)
		}
		if stored, _ := e.store.WebhookSecret(ctx, wh.ID); stored != first {
			t.Fatal("the stored secret is not the one handed out")
		}

		// Already active: success only, and the secret stays.
		wantSuccessOnly(t, e.hook(t, http.MethodPost, url))
		if stored, _ := e.store.WebhookSecret(ctx, wh.ID); stored != first {
			t.Fatal("registering an active webhook again changed its secret")
		}

		wantSuccessOnly(t, e.hook(t, http.MethodDelete, url))
		if wh, _ := e.webhookByURL(t, url); wh.State != core.WebhookDeactivated || wh.DeactivatedAt == nil {
			t.Fatalf("after DELETE: %+v", wh)
		}
		wantError(t, e.hook(t, http.MethodDelete, url), http.StatusNotFound, core.ECodeNotFound)
		wantError(t, e.hook(t, http.MethodDelete, "https://never.example.com/"), http.StatusNotFound, core.ECodeNotFound)

		// Deactivated: registering again reactivates it with a new secret.
		second := e.register(t, url)
		if second == first {
			t.Fatal("reactivation handed out the old secret again")
		}
		re, _ := e.webhookByURL(t, url)
		if re.ID != wh.ID || re.State != core.WebhookActive || re.DeactivatedAt != nil {
			t.Fatalf("after reactivation: %+v, want webhook %d active", re, wh.ID)
		}
		if stored, _ := e.store.WebhookSecret(ctx, wh.ID); stored != second {
			t.Fatal("reactivation kept the old secret in the store")
		}
		wantSuccessOnly(t, e.hook(t, http.MethodPost, url))
		if n := len(e.allWebhooks(t)); n != 1 {
			t.Fatalf("%d webhooks stored, want 1", n)
		}
	})
}

// TestBadRequests sends malformed requests to both endpoints and checks the
// error answer and that nothing stored changed.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	const active = "https://kept.example.com/hook"
	valid := `{"url": "` + active + `"}`
	// pad returns a body of exactly n bytes holding url and a filler field.
	pad := func(n int) string {
		head := `{"url": "` + active + `", "pad": "`
		return head + strings.Repeat("x", n-len(head)-2) + `"}`
	}
	tests := []struct {
		name        string
		contentType string
		body        string
		status      int
		code        string
	}{
		{"text/plain", "text/plain", valid, 415, core.ECodeUnsupportedMediaType},
		{"no content type", "", valid, 415, core.ECodeUnsupportedMediaType},
		{"form", "application/x-www-form-urlencoded", "url=" + active, 415, core.ECodeUnsupportedMediaType},
		{"json suffix type", "application/json-patch+json", valid, 415, core.ECodeUnsupportedMediaType},
		{"malformed", "application/json", `{"url": "` + active, 400, core.ECodeInvalidJSON},
		{"unquoted key", "application/json", `{url: "` + active + `"}`, 400, core.ECodeInvalidJSON},
		{"single quotes", "application/json", `{'url': '` + active + `'}`, 400, core.ECodeInvalidJSON},
		{"empty body", "application/json", "", 400, core.ECodeInvalidJSON},
		{"array", "application/json", `["` + active + `"]`, 400, core.ECodeInvalidJSON},
		{"null", "application/json", `null`, 400, core.ECodeInvalidJSON},
		{"string", "application/json", `"` + active + `"`, 400, core.ECodeInvalidJSON},
		{"number", "application/json", `42`, 400, core.ECodeInvalidJSON},
		{"boolean", "application/json", `true`, 400, core.ECodeInvalidJSON},
		{"trailing garbage", "application/json", valid + ` x`, 400, core.ECodeInvalidJSON},
		{"second object", "application/json", valid + `{}`, 400, core.ECodeInvalidJSON},
		{"trailing bracket", "application/json", valid + `]`, 400, core.ECodeInvalidJSON},
		{"missing url", "application/json", `{}`, 422, core.ECodeInvalidRequest},
		{"other field", "application/json", `{"uri": "` + active + `"}`, 422, core.ECodeInvalidRequest},
		{"empty url", "application/json", `{"url": ""}`, 422, core.ECodeInvalidRequest},
		{"null url", "application/json", `{"url": null}`, 422, core.ECodeInvalidRequest},
		{"number url", "application/json", `{"url": 42}`, 422, core.ECodeInvalidRequest},
		{"array url", "application/json", `{"url": ["` + active + `"]}`, 422, core.ECodeInvalidRequest},
		{"object url", "application/json", `{"url": {"href": "` + active + `"}}`, 422, core.ECodeInvalidRequest},
		{"boolean url", "application/json", `{"url": true}`, 422, core.ECodeInvalidRequest},
		{"body over 64 KiB", "application/json", pad(httpapi.MaxRequestBody + 1), 413, core.ECodeBodyTooLarge},
		{"body of 1 MiB", "application/json", pad(1 << 20), 413, core.ECodeBodyTooLarge},
		{"fragment", "application/json", `{"url": "` + active + `#x"}`, 422, core.ECodeInvalidURL},
		{"http", "application/json", `{"url": "http://kept.example.com/hook"}`, 422, core.ECodeInvalidURL},
	}
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		e.register(t, active)
		e.register(t, "https://other.example.com/")
		e.hook(t, http.MethodPost, "https://gone.example.com/")
		wantSuccessOnly(t, e.hook(t, http.MethodDelete, "https://gone.example.com/"))
		before := e.snapshot(t)

		for _, tt := range tests {
			for _, method := range []string{http.MethodPost, http.MethodDelete} {
				t.Run(tt.name+"/"+method, func(t *testing.T) {
					wantError(t, e.hookRaw(t, method, tt.contentType, tt.body), tt.status, tt.code)
					e.wantUnchanged(t, before)
				})
			}
		}

		// What the bad bodies were close to is accepted: the checks above
		// failed for the reason named, not for something else.
		t.Run("accepted neighbours", func(t *testing.T) {
			for _, ok := range []struct{ contentType, body string }{
				{"application/json; charset=utf-8", valid},
				{"Application/JSON", valid},
				{"application/json", valid + "\n\t "},
				{"application/json", pad(httpapi.MaxRequestBody)},
				{"application/json", `{"url": "` + active + `", "extra": [1, {"a": null}]}`},
			} {
				wantSuccessOnly(t, e.hookRaw(t, http.MethodPost, ok.contentType, ok.body))
			}
			e.wantUnchanged(t, before)
		})
	})
}

// TestRateLimit checks the per-client token bucket: with a burst of 3 the
// 4th rapid request is refused with Retry-After, a spoofed X-Forwarded-For
// does not make a new client, another address does, and the bucket refills.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, b backend) {
		// The buckets refill on a clock the test moves: none refills while
		// a slow machine runs the requests.
		var clock atomic.Int64
		clock.Store(time.Now().UnixNano())
		now := func() time.Time { return time.Unix(0, clock.Load()) }
		e := newEnv(t, b, options{ratePerMinute: 60, burst: 3, now: now})
		for i := range 3 {
			e.register(t, fmt.Sprintf("https://r%d.example.com/", i))
		}
		limited := e.hook(t, http.MethodPost, "https://r3.example.com/")
		wantError(t, limited, http.StatusTooManyRequests, core.ECodeRateLimited)
		retry, err := strconv.Atoi(limited.header.Get("Retry-After"))
		if err != nil || retry < 1 {
			t.Fatalf("Retry-After %q, want an integer number of seconds ≥ 1", limited.header.Get("Retry-After"))
		}
		if _, ok := e.webhookByURL(t, "https://r3.example.com/"); ok {
			t.Fatal("a rate-limited registration was stored")
		}

		for _, tt := range []struct {
			name   string
			header map[string]string
			method string
		}{
			{"X-Forwarded-For", map[string]string{"Content-Type": "application/json", "X-Forwarded-For": "203.0.113.7"}, http.MethodPost},
			{"X-Real-IP", map[string]string{"Content-Type": "application/json", "X-Real-Ip": "203.0.113.8"}, http.MethodPost},
			{"DELETE", jsonType, http.MethodDelete},
			{"bad request", map[string]string{"Content-Type": "text/plain"}, http.MethodPost},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := do(t, e.webhooks.Client(), tt.method, e.webhooks.URL+"/webhooks", tt.header, `{"url": "https://r0.example.com/"}`)
				wantError(t, r, http.StatusTooManyRequests, core.ECodeRateLimited)
			})
		}

		t.Run("another client address", func(t *testing.T) {
			dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
			probe, err := dialer.Dial("tcp", e.webhooks.Listener.Addr().String())
			if err != nil {
				t.Skipf("cannot connect from 127.0.0.2 here: %v", err)
			}
			probe.Close()
			other := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
			defer other.CloseIdleConnections()
			r := do(t, other, http.MethodPost, e.webhooks.URL+"/webhooks", jsonType, `{"url": "https://other-client.example.com/"}`)
			wantCreated(t, r)
		})

		// A refused request takes no token, so after Retry-After one is back.
		last := e.hook(t, http.MethodPost, "https://r3.example.com/")
		wantError(t, last, http.StatusTooManyRequests, core.ECodeRateLimited)
		wait, _ := strconv.Atoi(last.header.Get("Retry-After"))
		clock.Add(int64(time.Duration(wait) * time.Second))
		e.register(t, "https://r3.example.com/")
	})
}

// TestConcurrentRegistration sends 50 registrations of one URL at once,
// in several spellings of its normal form: exactly one is the first, and
// exactly one row is stored with its secret. Then the same for a
// reactivation.
func TestConcurrentRegistration(t *testing.T) {
	t.Parallel()
	spellings := []string{
		"https://race.example.com/hook",
		"https://Race.Example.COM:443/hook",
		"https://race.example.com./hook",
		"HTTPS://RACE.example.com/hook",
	}
	const n = 50
	race := func(t *testing.T, e *env) (secret string) {
		t.Helper()
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			results = make([]response, n)
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				body, _ := json.Marshal(map[string]string{"url": spellings[i%len(spellings)]})
				r, err := send(e.webhooks.Client(), http.MethodPost, e.webhooks.URL+"/webhooks", jsonType, string(body))
				if err != nil {
					t.Error(err)
				}
				results[i] = r
			}()
		}
		close(start)
		wg.Wait()
		var created, ok int
		for _, r := range results {
			switch r.status {
			case http.StatusCreated:
				created++
				secret = wantCreated(t, r)
			case http.StatusOK:
				ok++
				wantSuccessOnly(t, r)
			default:
				t.Errorf("unexpected answer %s", r)
			}
		}
		if created != 1 || ok != n-1 {
			t.Fatalf("%d × 201 and %d × 200, want 1 and %d", created, ok, n-1)
		}
		var rows int64
		if err := e.store.DB().Table("webhooks").Count(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if rows != 1 {
			t.Fatalf("%d rows stored, want 1", rows)
		}
		wh, found := e.webhookByURL(t, spellings[0])
		if !found || wh.State != core.WebhookActive {
			t.Fatalf("stored webhook %+v (found %v)", wh, found)
		}
		if stored, _ := e.store.WebhookSecret(context.Background(), wh.ID); stored != secret {
			t.Fatal("the stored secret is not the one the 201 handed out")
		}
		return secret
	}
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		first := race(t, e)
		wantSuccessOnly(t, e.hook(t, http.MethodDelete, spellings[1]))
		if again := race(t, e); again == first {
			t.Fatal("the reactivation race handed out the old secret")
		}
	})
}

// TestSecretsNotStoredOrLogged registers, re-registers, deactivates and
// reactivates webhooks over HTTP with debug logging on, then looks for every
// secret handed out in the log and in the database: the table rows and, on
// SQLite, the database file and its write-ahead log.
func TestSecretsNotStoredOrLogged(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		var handedOut []string
		for i := range 3 {
			url := fmt.Sprintf("https://s%d.example.com/hook", i)
			handedOut = append(handedOut, e.register(t, url))
			wantSuccessOnly(t, e.hook(t, http.MethodPost, url))
		}
		wantSuccessOnly(t, e.hook(t, http.MethodDelete, "https://s0.example.com/hook"))
		handedOut = append(handedOut, e.register(t, "https://s0.example.com/hook"))
		e.hookRaw(t, http.MethodPost, "application/json", `{"url": "https://s1.example.com/hook"} trailing`)
		e.hookRaw(t, http.MethodPost, "application/json", `{"url": "https://127.0.0.1/"}`)
		wh, _ := e.webhookByURL(t, "https://s1.example.com/hook")
		e.adminDo(t, http.MethodPost, "/admin/api/notifications", `{"type": "test", "dao": "uniswap", "data": {}}`)
		e.adminDo(t, http.MethodGet, "/admin/api/webhooks", "")
		e.adminDo(t, http.MethodGet, fmt.Sprintf("/admin/api/webhooks/%d", wh.ID), "")
		e.adminDo(t, http.MethodGet, fmt.Sprintf("/admin/api/webhooks/%d/deliveries", wh.ID), "")
		e.adminDo(t, http.MethodPost, fmt.Sprintf("/admin/api/webhooks/%d/deactivate", wh.ID), "")
		e.adminDo(t, http.MethodPost, fmt.Sprintf("/admin/api/webhooks/%d/reactivate", wh.ID), "")

		// forms are the ways a secret could appear: whole, its base64 part,
		// and the raw key bytes.
		var forms [][]byte
		for _, s := range handedOut {
			b64 := strings.TrimPrefix(s, "whsec_")
			key, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				t.Fatal(err)
			}
			forms = append(forms, []byte(s), []byte(b64), key)
		}
		lookIn := func(what string, data []byte) {
			t.Helper()
			for _, f := range forms {
				if strings.Contains(string(data), string(f)) {
					t.Errorf("a secret appears in %s", what)
				}
			}
		}

		logs := e.logs.String()
		if !strings.Contains(logs, "webhook registered") || !strings.Contains(logs, "level=DEBUG") {
			t.Fatalf("the handlers' log was not captured:\n%s", logs)
		}
		for _, line := range strings.Split(logs, "\n") {
			lookIn("the log line "+line, []byte(line))
		}

		rows, err := e.store.DB().Raw("SELECT * FROM webhooks").Rows()
		if err != nil {
			t.Fatal(err)
		}
		var dump []byte
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			for i := range vals {
				vals[i] = new(any)
			}
			if err := rows.Scan(vals...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				dump = fmt.Appendf(dump, "%v|%s|", *v.(*any), *v.(*any))
			}
		}
		rows.Close()
		if len(dump) == 0 {
			t.Fatal("read nothing from the webhooks table")
		}
		lookIn("the webhooks table", dump)

		if e.store.Dialect() == store.SQLite {
			files := func() {
				for _, f := range []string{e.where, e.where + "-wal", e.where + "-shm"} {
					raw, err := os.ReadFile(f)
					if err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
					lookIn(f, raw)
				}
			}
			files()
			if err := e.store.DB().Exec("PRAGMA wal_checkpoint(FULL)").Error; err != nil {
				t.Fatal(err)
			}
			files()
		}
	})
}

// TestJSONResponses checks that successful answers are JSON objects that
// encoding/json reads back into the documented response type.
func TestJSONResponses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0], options{})
	r := e.hook(t, http.MethodPost, "https://typed.example.com/")
	var got httpapi.RegistrationResponse
	if err := json.Unmarshal(r.body, &got); err != nil || !got.Success || got.Note != httpapi.SecretNote {
		t.Fatalf("registration answer %s: %+v %v", r.body, got, err)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
}
