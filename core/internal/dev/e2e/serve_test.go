package e2e_test

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func runExpectFailure(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("govgate did not exit")
	}
	if err == nil {
		t.Fatalf("govgate started; output:\n%s", out)
	}
	return string(out)
}

func TestStartupRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"postgres without a secret key", []string{"GOVGATE_DATABASE_URL=postgres://u@127.0.0.1:1/db", "GOVGATE_SECRET_KEY="}, []string{"serve"}, "GOVGATE_SECRET_KEY is required with PostgreSQL"},
		{"a bad secret key", []string{"GOVGATE_SECRET_KEY=short"}, []string{"serve"}, "GOVGATE_SECRET_KEY"},
		{"a bad listener address", []string{"GOVGATE_API_ADDR=nowhere"}, []string{"serve"}, "api.addr"},
		{"a bad --only", nil, []string{"serve", "--only", "everything"}, "want api, webhooks or admin"},
		{"a missing config file", nil, []string{"serve", "--config", "/nonexistent.yaml"}, "config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runExpectFailure(t, append([]string{"GOVGATE_DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "x.db")}, tc.env...), tc.args...)
			if !strings.Contains(out, tc.want) {
				t.Fatalf("output does not say %q:\n%s", tc.want, out)
			}
		})
	}
}

func TestOnlyRunsTheChosenListeners(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--only", "api")
	cmd.Dir = t.TempDir()
	var log bytes.Buffer
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, &log}, lockedWriter{&mu, &log}
	cmd.Env = append(os.Environ(), "GOVGATE_DATABASE_URL=sqlite:"+filepath.Join(cmd.Dir, "g.db"), "GOVGATE_LOG_FORMAT=text",
		"GOVGATE_API_ADDR=127.0.0.1:0", "GOVGATE_WEBHOOKS_ADDR=127.0.0.1:0", "GOVGATE_ADMIN_ADDR=127.0.0.1:0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	listeners := func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		found := map[string]string{}
		for _, m := range listeningLine.FindAllStringSubmatch(log.String(), -1) {
			found[m[1]] = m[2]
		}
		return found
	}
	waitFor(t, "the REST API", 30*time.Second, func() bool {
		api := listeners()["api"]
		if api == "" {
			return false
		}
		resp, err := http.Get("http://" + api + "/daos")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	if got := listeners(); len(got) != 1 {
		t.Errorf("listeners opened with --only api: %v", got)
	}
}
