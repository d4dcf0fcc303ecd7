package container_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"gopkg.in/yaml.v3"

	"github.com/govgate/govgate/core/internal/config"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/dev/testcert"
	"github.com/govgate/govgate/sdk/receiver"
)

const (
	repoRoot = "../../../../.."
	// maxImageSize is the ceiling the image must stay under (40 MB, as
	// podman and docker count: 10^6 bytes).
	maxImageSize = 40_000_000
	imageUID     = "65532:65532"
)

func TestMain(m *testing.M) {
	code := m.Run()
	storetest.Stop()
	os.Exit(code)
}

// engine runs containers: podman or docker.
type engine struct {
	bin string
	// global flags, before the subcommand: podman here runs containers only
	// with runc (crun is refused).
	global []string
}

func (e engine) cmd(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, e.bin, append(append([]string(nil), e.global...), args...)...)
}

func (e engine) output(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := e.cmd(ctx, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// unavailable skips the test, or fails it under CI=true: CI installs podman
// (.ci/run), so there the image must be built and run.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: the container tests must run; .ci/run installs podman and runc)", msg)
	}
	t.Skipf("%s; skipping (install podman and runc, or run docker; CI=true makes this a failure)", msg)
}

// findEngine prefers podman, as `go tool task image` does.
func findEngine(t *testing.T) engine {
	t.Helper()
	if bin, err := exec.LookPath("podman"); err == nil {
		e := engine{bin: bin}
		if _, err := exec.LookPath("runc"); err == nil {
			e.global = []string{"--runtime", "runc"}
		}
		return e
	}
	if bin, err := exec.LookPath("docker"); err == nil {
		e := engine{bin: bin}
		if out, err := e.output(t, "info"); err != nil {
			unavailable(t, "docker is installed but cannot reach its daemon: %v: %s", err, lastLine(out))
		}
		return e
	}
	unavailable(t, "no container engine: neither podman nor docker is on PATH")
	return engine{}
}

// TestImage builds the production image with `go tool task image` and runs
// it the way an operator would, against SQLite in a volume and against
// PostgreSQL: it must become healthy, take a webhook registration and
// deliver, signed, a notification of governance on a dev chain.
//
// The image has no dev chain, by design: this test runs one itself
// (devchain.Start on 127.0.0.1) and points the container at it with a
// mounted configuration file, as an operator points it at a real RPC node.
// That tests the very image that ships, rather than a second dev image
// built for the test. Containers use the host's network so that they reach
// the chain, the receiver and PostgreSQL on the loopback.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a container image")
	}
	e := findEngine(t)
	image := fmt.Sprintf("govgate-e2e-%d", os.Getpid())
	ref := image + ":latest"

	start := time.Now()
	build := exec.Command("go", "tool", "task", "image", "IMAGE="+image, "CONTEXT="+t.TempDir())
	build.Dir = repoRoot
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool task image: %v\n%s", err, out)
	}
	t.Logf("go tool task image: %s", time.Since(start).Round(time.Millisecond))
	labelVersion := mustOutput(t, e, "image", "inspect", "--format", `{{index .Config.Labels "org.opencontainers.image.version"}}`, ref)
	t.Cleanup(func() { e.output(t, "rmi", "-f", ref, image+":"+labelVersion) })

	// A host that builds may still be unable to run containers.
	if out, err := e.output(t, runArgs("--rm", ref, "version")...); err != nil {
		unavailable(t, "%s cannot run a container here: %v: %s", filepath.Base(e.bin), err, lastLine(out))
	}

	t.Run("metadata", func(t *testing.T) {
		size := mustOutput(t, e, "image", "inspect", "--format", "{{.Size}}", ref)
		var n int64
		fmt.Sscan(size, &n)
		t.Logf("image size: %d bytes (%.1f MB)", n, float64(n)/1e6)
		if n <= 0 || n >= maxImageSize {
			t.Errorf("image size %d bytes: want under %d", n, maxImageSize)
		}
		if user := mustOutput(t, e, "image", "inspect", "--format", "{{.Config.User}}", ref); user != imageUID {
			t.Errorf("user %q: want %s", user, imageUID)
		}
		binVersion, err := e.output(t, runArgs("--rm", ref, "version")...)
		if err != nil {
			t.Fatal(err)
		}
		if labelVersion == "" || labelVersion == "unknown" || lastLine(binVersion) != "govgate "+labelVersion {
			t.Errorf("label org.opencontainers.image.version %q, binary says %q: want the same git describe", labelVersion, lastLine(binVersion))
		}
		// The image's binary is the production build: no dev chain.
		devOut, err := e.output(t, runArgs("--rm", ref, "dev")...)
		if err == nil || !strings.Contains(devOut, "nodevchain") {
			t.Errorf("govgate dev in the image: err %v, output %q: want the nodevchain refusal", err, lastLine(devOut))
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	chainStart := time.Now()
	dc, err := devchain.Start(ctx, devchain.Options{BlockTime: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	t.Logf("dev chain at %s, %d DAOs, started in %s", dc.RPCURL(), len(dc.DAOs()), time.Since(chainStart).Round(time.Millisecond))
	go func() {
		for ctx.Err() == nil {
			if err := dc.RunActivity(ctx, 2*time.Second); err == nil || ctx.Err() != nil {
				return
			}
			time.Sleep(time.Second)
		}
	}()

	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		vol := fmt.Sprintf("govgate-e2e-%d-data", os.Getpid())
		if out, err := e.output(t, "volume", "create", vol); err != nil {
			t.Fatalf("volume create: %v: %s", err, out)
		}
		t.Cleanup(func() { e.output(t, "volume", "rm", "-f", vol) })
		// No GOVGATE_SECRET_KEY: with SQLite, govgate keeps a key file
		// beside the database, in the volume.
		runAndDeliver(t, e, ref, dc, []string{"-v", vol + ":/data"}, nil)
		// The database and its key file are in the volume, the user's.
		if dir, err := e.output(t, "volume", "inspect", "--format", "{{.Mountpoint}}", vol); err == nil {
			for _, f := range []string{"govgate.db", "govgate.key"} {
				fi, err := os.Stat(filepath.Join(lastLine(dir), f))
				if err != nil {
					t.Errorf("volume %s: %v", vol, err)
					continue
				}
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && fmt.Sprintf("%d:%d", st.Uid, st.Gid) != imageUID {
					t.Errorf("volume %s: %s belongs to %d:%d, want %s", vol, f, st.Uid, st.Gid, imageUID)
				}
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dbURL := storetest.Postgres.NewDatabase(t)
		runAndDeliver(t, e, ref, dc, nil, []string{
			config.EnvDatabaseURL + "=" + dbURL,
			config.EnvSecretKey + "=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		})
	})
}

// runArgs are the arguments of `run` that this machine's podman needs
// (runc accepts no higher rlimits here), and the host's network.
func runArgs(args ...string) []string {
	return append([]string{"run", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000", "--network=host"}, args...)
}

const adminToken = "container-test-admin-token"

// runAndDeliver starts the image with the dev chain's configuration
// mounted, waits until it is healthy, registers an HTTPS receiver and waits
// for a delivery it verifies.
func runAndDeliver(t *testing.T, e engine, ref string, dc *devchain.Chain, mounts, env []string) {
	start := time.Now()
	cert, caPEM, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t, cert)

	// The configuration directory is mounted at /configs, where serve finds
	// govgate.yaml; the container's user must read it.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"log_level": "info",
		"chains":    []any{dc.ChainConfig()},
		"daos":      dc.DAOs(),
		"indexer":   map[string]any{"poll_interval": "500ms"},
		"delivery": map[string]any{
			"timeout": "2s", "schedule": []string{"200ms", "500ms", "1s", "1s", "1s", "1s", "1s"},
			"max_retry_after": "2s", "lease": "5s", "poll_interval": "200ms",
		},
	}
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "govgate.yaml")
	for name, data := range map[string][]byte{"govgate.yaml": raw, "ca.pem": caPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := config.Load(cfgPath, true, func(string) string { return "" }); err != nil {
		t.Fatalf("the test's configuration: %v", err)
	}

	api, webhooks, admin := freeAddr(t), freeAddr(t), freeAddr(t)
	name := fmt.Sprintf("govgate-e2e-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	args := runArgs("-d", "--name", name, "-v", dir+":/configs:ro")
	args = append(args, mounts...)
	for _, kv := range append([]string{
		config.EnvAPIAddr + "=" + api, config.EnvWebhooksAddr + "=" + webhooks, config.EnvAdminAddr + "=" + admin,
		config.EnvAdminToken + "=" + adminToken,
		config.EnvDeliveryCAFile + "=/configs/ca.pem",
		config.EnvDeliveryAllowPriv + "=true",
	}, env...) {
		args = append(args, "-e", kv)
	}
	args = append(args, ref, "serve")
	if out, err := e.output(t, args...); err != nil {
		t.Fatalf("run: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := e.output(t, "logs", name)
			t.Logf("container logs:\n%s", logs)
		}
		e.output(t, "rm", "-f", "-v", name)
	})

	if user := mustOutput(t, e, "inspect", "--format", "{{.Config.User}}", name); user != imageUID {
		t.Errorf("container user %q: want %s", user, imageUID)
	}

	// Healthy: the image's own healthcheck, run in the container, passes
	// for all three listeners (the API's part needs every DAO not failing).
	var hc string
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := e.output(t, "exec", name, "/usr/local/bin/govgate", "healthcheck", "--only", "api", "--only", "webhooks", "--only", "admin")
		if err == nil {
			hc = out
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not healthy after 90 s: %v: %s", err, out)
		}
		if running := mustOutput(t, e, "inspect", "--format", "{{.State.Running}}", name); running != "true" {
			t.Fatalf("the container exited: %s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("healthy after %s: %s", time.Since(start).Round(time.Millisecond), strings.ReplaceAll(hc, "\n", "; "))
	resp, err := http.Get("http://" + api + "/" + dc.DAOs()[0].Slug + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /%s/health from the host: %d", dc.DAOs()[0].Slug, resp.StatusCode)
	}

	// Register the receiver; its secret verifies every delivery.
	body, _ := json.Marshal(map[string]string{"url": rcv.url})
	resp, err = http.Post("http://"+webhooks+"/webhooks", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		Secret string `json:"secret"`
	}
	json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(reg.Secret, "whsec_") {
		t.Fatalf("register: %d, secret %t", resp.StatusCode, reg.Secret != "")
	}
	rcv.secret.Store(&reg.Secret)
	registered := time.Now()

	daos := map[string]bool{}
	for _, d := range dc.DAOs() {
		daos[d.Slug] = true
	}
	timeout := time.After(120 * time.Second)
	for {
		select {
		case n := <-rcv.verified:
			if !daos[n.DAO] {
				t.Logf("verified delivery %s of %s from DAO %q: not a dev chain DAO", n.ID, n.Type, n.DAO)
				continue
			}
			t.Logf("verified signed delivery %s (%s, %s) %s after registration; %s in all",
				n.ID, n.Type, n.DAO, time.Since(registered).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			stopGracefully(t, e, name)
			return
		case <-timeout:
			t.Fatalf("no verified delivery from the dev chain within 120 s of registration (%d refused)", rcv.refused.Load())
		}
	}
}

// stopGracefully stops the container with SIGTERM: govgate, as PID 1, must
// shut down on its own, not be killed.
func stopGracefully(t *testing.T, e engine, name string) {
	if out, err := e.output(t, "stop", "-t", "20", name); err != nil {
		t.Errorf("stop: %v: %s", err, out)
		return
	}
	code := mustOutput(t, e, "inspect", "--format", "{{.State.ExitCode}}", name)
	logs, _ := e.output(t, "logs", name)
	if code != "0" || !strings.Contains(logs, "msg=stopped") {
		t.Errorf("after SIGTERM: exit code %s, logs end %q: want 0 and a clean stop", code, lastLine(logs))
	}
}

type notification struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	DAO  string `json:"dao"`
}

// testReceiver is an HTTPS webhook receiver with its own CA that verifies
// deliveries with sdk/receiver.
type testReceiver struct {
	url      string
	secret   atomic.Pointer[string]
	verified chan notification
	refused  atomic.Int64
}

func newReceiver(t *testing.T, cert tls.Certificate) *testReceiver {
	r := &testReceiver{verified: make(chan notification, 1024)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		secret := r.secret.Load()
		if err != nil || secret == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		if err := receiver.Verify(*secret, req.Header, body, time.Now()); err != nil {
			r.refused.Add(1)
			http.Error(w, err.Error(), receiver.StatusCode(err))
			return
		}
		var n notification
		json.Unmarshal(body, &n)
		select {
		case r.verified <- n:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/govgate"
	return r
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func mustOutput(t *testing.T, e engine, args ...string) string {
	t.Helper()
	out, err := e.output(t, args...)
	if err != nil {
		t.Fatalf("%s %s: %v: %s", filepath.Base(e.bin), strings.Join(args, " "), err, out)
	}
	return lastLine(out)
}

// lastLine drops what podman logs before the answer (such as a warning
// that systemd is absent to schedule healthchecks).
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
