package e2e_test

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	api, hooks, admin := freeAddr(t), freeAddr(t), freeAddr(t)
	cmd := exec.Command(binary, "serve", "--only", "api")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOVGATE_DATABASE_URL=sqlite:"+filepath.Join(cmd.Dir, "g.db"),
		"GOVGATE_API_ADDR="+api, "GOVGATE_WEBHOOKS_ADDR="+hooks, "GOVGATE_ADMIN_ADDR="+admin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	waitFor(t, "the REST API", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + api + "/daos")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	for _, addr := range []string{hooks, admin} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s is listening with --only api", addr)
		}
	}
}
