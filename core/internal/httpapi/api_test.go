package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/httpapi"
)

// healthSource serves a fixed snapshot for uniswap only, as if compound's
// were not computed yet.
type healthSource struct{}

func (healthSource) JSON(dao string) ([]byte, int, bool) {
	if dao == "uniswap" {
		return []byte(`{"status": "degraded", "database": {"ok": true}}`), http.StatusServiceUnavailable, true
	}
	return nil, 0, false
}

// TestRESTAPI checks the REST API's routes and its answers to unknown DAOs,
// routes and methods.
func TestRESTAPI(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(httpapi.NewAPI(httpapi.APIConfig{DAOs: core.FixedDAOs(daos), Health: healthSource{}, Logger: log}))
	t.Cleanup(srv.Close)
	noHealth := httptest.NewServer(httpapi.NewAPI(httpapi.APIConfig{Logger: log}))
	t.Cleanup(noHealth.Close)

	tests := []struct {
		name, method, path string
		srv                *httptest.Server
		status             int
		code               string // error code, or "" for a success
		want               string // JSON body of a success
	}{
		{"daos", http.MethodGet, "/daos", srv, 200, "", mustJSON(t, map[string]any{"items": daos})},
		{"no daos configured", http.MethodGet, "/daos", noHealth, 200, "", `{"items": []}`},
		{"health", http.MethodGet, "/uniswap/health", srv, 503, "", `{"status": "degraded", "database": {"ok": true}}`},
		{"health not computed yet", http.MethodGet, "/compound/health", srv, 503, core.ECodeUnavailable, ""},
		{"unknown dao", http.MethodGet, "/nope/health", srv, 404, core.ECodeUnknownDAO, ""},
		{"unknown dao in capitals", http.MethodGet, "/UNISWAP/health", srv, 404, core.ECodeUnknownDAO, ""},
		{"unknown dao without health", http.MethodGet, "/nope/health", noHealth, 404, core.ECodeUnknownDAO, ""},
		{"unknown route", http.MethodGet, "/nope", srv, 404, core.ECodeNotFound, ""},
		{"unknown deep route", http.MethodGet, "/uniswap/health/extra/x", srv, 404, core.ECodeNotFound, ""},
		{"root", http.MethodGet, "/", srv, 404, core.ECodeNotFound, ""},
		{"POST daos", http.MethodPost, "/daos", srv, 405, core.ECodeMethodNotAllowed, ""},
		{"DELETE health", http.MethodDelete, "/uniswap/health", srv, 405, core.ECodeMethodNotAllowed, ""},
		{"PUT health of unknown dao", http.MethodPut, "/nope/health", srv, 405, core.ECodeMethodNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := do(t, tt.srv.Client(), tt.method, tt.srv.URL+tt.path, nil, "")
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code)
				return
			}
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if got, want := decode(t, r.body), decode(t, []byte(tt.want)); !reflect.DeepEqual(got, want) {
				t.Fatalf("body %s, want %s", r.body, tt.want)
			}
		})
	}
}

// TestWebhookServiceRoutes checks the webhook service's answers to unknown
// routes and methods.
func TestWebhookServiceRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0], options{})
	tests := []struct {
		name, method, path string
		status             int
		code               string
	}{
		{"GET webhooks", http.MethodGet, "/webhooks", 405, core.ECodeMethodNotAllowed},
		{"PUT webhooks", http.MethodPut, "/webhooks", 405, core.ECodeMethodNotAllowed},
		// PATCH changes an owner's settings: unsigned, it is refused.
		{"PATCH webhooks unsigned", http.MethodPatch, "/webhooks", 401, core.ECodeSignatureRequired},
		{"unknown route", http.MethodPost, "/webhook", 404, core.ECodeNotFound},
		{"root", http.MethodGet, "/", 404, core.ECodeNotFound},
		{"admin route", http.MethodGet, "/admin/api/webhooks", 404, core.ECodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := do(t, e.webhooks.Client(), tt.method, e.webhooks.URL+tt.path, jsonType, `{"url": "https://routes.example.com/"}`)
			wantError(t, r, tt.status, tt.code)
		})
	}
	if n := len(e.allWebhooks(t)); n != 0 {
		t.Fatalf("%d webhooks stored by requests to the wrong route", n)
	}
}
