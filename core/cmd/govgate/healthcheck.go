package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/govgate/govgate/core/internal/config"
)

// healthcheck probes the listeners of a govgate serving on this host, with
// the configuration and environment it was started with, and returns the
// exit status: 0 healthy, 1 not. It is the container image's HEALTHCHECK:
// the image has no shell and no curl, so the binary checks itself.
//
// The API listener is healthy when it answers GET /daos and no DAO's
// GET /{dao}/health is failing (warn, such as an indexer still syncing,
// passes); --live checks only that it answers. The webhook listener must
// answer GET /openapi.yaml; the admin listener GET /admin/api/health
// (with GOVGATE_ADMIN_TOKEN; without one, any answer short of a 5xx, as it
// then refuses every request).
func healthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (default "+DefaultConfigPath+" when present)")
	only := onlyFlag{}
	fs.Var(only, "only", "listeners to check: api, webhooks, admin (repeatable; default api)")
	live := fs.Bool("live", false, "check only that the listeners answer, not the DAOs' health")
	timeout := fs.Duration("timeout", 5*time.Second, "time allowed for all the checks")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	path, mustExist := *cfgPath, true
	if path == "" {
		path, mustExist = DefaultConfigPath, false
	}
	cfg, err := config.Load(path, mustExist, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "govgate healthcheck:", err)
		return 1
	}
	if len(only) == 0 {
		only["api"] = true
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := 0
	for _, l := range []struct {
		name, addr string
		check      func(context.Context, *http.Client, string) (string, error)
	}{
		{"api", cfg.API.Addr, func(ctx context.Context, c *http.Client, base string) (string, error) {
			return checkAPI(ctx, c, base, *live)
		}},
		{"webhooks", cfg.Webhooks.Addr, func(ctx context.Context, c *http.Client, base string) (string, error) {
			_, err := get(ctx, c, base+"/openapi.yaml", "", http.StatusOK)
			return "answers", err
		}},
		{"admin", cfg.Admin.Addr, func(ctx context.Context, c *http.Client, base string) (string, error) {
			return checkAdmin(ctx, c, base, cfg.Admin.Token)
		}},
	} {
		if !only[l.name] {
			continue
		}
		base := "http://" + localAddr(l.addr)
		detail, err := l.check(ctx, client, base)
		if err != nil {
			fmt.Fprintf(stdout, "%s %s: unhealthy: %v\n", l.name, base, err)
			status = 1
			continue
		}
		fmt.Fprintf(stdout, "%s %s: %s\n", l.name, base, detail)
	}
	return status
}

// localAddr turns a listen address into one to dial on this host: a
// listener on every interface (":8080", "0.0.0.0:8080", "[::]:8080") is
// reached on the loopback.
func localAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func checkAPI(ctx context.Context, c *http.Client, base string, live bool) (string, error) {
	body, err := get(ctx, c, base+"/daos", "", http.StatusOK)
	if err != nil {
		return "", err
	}
	var daos struct {
		Items []struct {
			Slug string `json:"slug"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &daos); err != nil {
		return "", fmt.Errorf("GET /daos: %w", err)
	}
	if live {
		return fmt.Sprintf("answers (%d DAOs)", len(daos.Items)), nil
	}
	var failed []string
	for _, d := range daos.Items {
		// 200 is pass or warn, 503 is fail; anything else is a broken API.
		body, err := get(ctx, c, base+"/"+url.PathEscape(d.Slug)+"/health", "", http.StatusOK, http.StatusServiceUnavailable)
		if err != nil {
			return "", err
		}
		var h struct {
			Status string `json:"status"`
			Output string `json:"output"`
		}
		if err := json.Unmarshal(body, &h); err != nil {
			return "", fmt.Errorf("GET /%s/health: %w", d.Slug, err)
		}
		if h.Status == "fail" {
			failed = append(failed, fmt.Sprintf("%s: %s", d.Slug, h.Output))
		}
	}
	if len(failed) > 0 {
		return "", fmt.Errorf("%d of %d DAOs fail: %v", len(failed), len(daos.Items), failed)
	}
	return fmt.Sprintf("%d DAOs pass or warn", len(daos.Items)), nil
}

func checkAdmin(ctx context.Context, c *http.Client, base, token string) (string, error) {
	if token == "" {
		if _, err := get(ctx, c, base+"/admin/api/health", "", http.StatusUnauthorized); err != nil {
			return "", err
		}
		return "answers (no admin token: every admin request is refused)", nil
	}
	body, err := get(ctx, c, base+"/admin/api/health", token, http.StatusOK)
	if err != nil {
		return "", err
	}
	var h struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return "", fmt.Errorf("GET /admin/api/health: %w", err)
	}
	return "answers, overall " + h.Status, nil
}

// get fetches u and returns the body when the status is one of want.
func get(ctx context.Context, c *http.Client, u, token string, want ...int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	for _, w := range want {
		if resp.StatusCode == w {
			return body, nil
		}
	}
	return nil, fmt.Errorf("GET %s: status %d", req.URL.Path, resp.StatusCode)
}
