package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/govgate/govgate/core/internal/config"
)

func TestLocalAddr(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"every IPv4 interface", "0.0.0.0:8080", "127.0.0.1:8080"},
		{"no host", ":8080", "127.0.0.1:8080"},
		{"every IPv6 interface", "[::]:8080", "127.0.0.1:8080"},
		{"loopback", "127.0.0.1:8080", "127.0.0.1:8080"},
		{"one interface", "10.0.0.7:8080", "10.0.0.7:8080"},
		{"name", "localhost:8080", "localhost:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := localAddr(tc.in); got != tc.want {
				t.Errorf("localAddr(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// fakeListener answers like govgate's listeners: two DAOs on the API, the
// second one's health given by health; the OpenAPI document; the admin
// API's health behind the token.
func fakeListener(t *testing.T, healthStatus int, healthBody, token string) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /daos", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"items": [{"slug": "a"}, {"slug": "b"}]}`))
	})
	mux.HandleFunc("GET /a/health", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status": "pass"}`))
	})
	mux.HandleFunc("GET /b/health", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(healthStatus)
		w.Write([]byte(healthBody))
	})
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("openapi: 3.1.0\n"))
	})
	mux.HandleFunc("GET /admin/api/health", func(w http.ResponseWriter, r *http.Request) {
		if token == "" || r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"status": "warn", "items": []}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestHealthcheck(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()

	for _, tc := range []struct {
		name         string
		healthStatus int
		healthBody   string
		serverToken  string // the token the admin listener accepts
		clientToken  string // GOVGATE_ADMIN_TOKEN of the healthcheck
		addr         string // instead of the fake listener
		args         []string
		want         int
		output       string
	}{
		{name: "every DAO passes or warns", healthStatus: 200, healthBody: `{"status": "warn"}`, want: 0, output: "2 DAOs pass or warn"},
		{name: "a DAO fails", healthStatus: 503, healthBody: `{"status": "fail", "output": "gateway: no upstream"}`, want: 1, output: "b: gateway: no upstream"},
		{name: "a DAO fails, --live", healthStatus: 503, healthBody: `{"status": "fail"}`, args: []string{"--live"}, want: 0, output: "answers (2 DAOs)"},
		{name: "a broken health endpoint", healthStatus: 500, want: 1, output: "status 500"},
		{name: "nothing listens", addr: down, want: 1, output: "unhealthy"},
		{name: "webhooks", args: []string{"--only", "webhooks"}, want: 0, output: "webhooks http://"},
		{name: "webhooks, nothing listens", addr: down, args: []string{"--only", "webhooks"}, want: 1, output: "unhealthy"},
		{name: "admin without a token", args: []string{"--only", "admin"}, want: 0, output: "no admin token"},
		{name: "admin with its token", serverToken: "s3cret", clientToken: "s3cret", args: []string{"--only", "admin"}, want: 0, output: "overall warn"},
		{name: "admin refuses the token", serverToken: "s3cret", clientToken: "other", args: []string{"--only", "admin"}, want: 1, output: "status 401"},
		{name: "unknown listener", args: []string{"--only", "indexer"}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr
			if addr == "" {
				addr = fakeListener(t, tc.healthStatus, tc.healthBody, tc.serverToken)
			}
			t.Setenv(config.EnvAPIAddr, addr)
			t.Setenv(config.EnvWebhooksAddr, addr)
			t.Setenv(config.EnvAdminAddr, addr)
			t.Setenv(config.EnvAdminToken, tc.clientToken)
			var stdout, stderr bytes.Buffer
			got := run(context.Background(), append([]string{"healthcheck"}, tc.args...), &stdout, &stderr)
			if got != tc.want {
				t.Fatalf("exit status %d, want %d; stdout %q, stderr %q", got, tc.want, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.output) {
				t.Errorf("stdout %q: want %q in it", stdout.String(), tc.output)
			}
		})
	}
}
