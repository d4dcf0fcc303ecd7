package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/govgate/govgate/core/internal/dev/pgtest"
	"github.com/govgate/govgate/core/internal/dev/testcert"
	"github.com/govgate/govgate/sdk/receiver"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "govgate-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "govgate")
	build := exec.Command("go", "build", "-o", binary, "../../../cmd/govgate")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build govgate:", err)
		os.Exit(1)
	}
	code := m.Run()
	storetest.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

const adminToken = "e2e-admin-token"

// proc is one running govgate process.
type proc struct {
	t                       *testing.T
	cmd                     *exec.Cmd
	api, webhooks, admin    string
	log                     *bytes.Buffer
	logMu                   *sync.Mutex
	dbURL, cfgPath, dataDir string
	env                     []string
	exited                  chan struct{}
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// deliveryConfig is a YAML configuration with a fast retry schedule.
const deliveryConfig = `
log_level: info
registration: {rate_per_minute: 100000, burst: 100000}
delivery:
  timeout: 2s
  workers: 32
  per_webhook_concurrency: 8
  schedule: [200ms, 400ms, 800ms, 1s, 1s, 1s, 1s]
  jitter: 0.1
  max_retry_after: 2s
  lease: 5s
  disable_after: 0s
  batch_size: 64
  poll_interval: 100ms
daos:
  - {slug: uniswap, name: Uniswap, chain_id: 1, governor: "0x408ED6354d4973f66138C91495F2f2FCbd8724C3", kind: governor-bravo}
  - {slug: ens, name: ENS, chain_id: 1, governor: "0x323A76393544d5ecca80cd6ef2A560C6a395b7E3", kind: oz-governor}
`

// startGovgate starts govgate serve on dbURL with the receiver's CA trusted.
func startGovgate(t *testing.T, dbURL, caFile, cfgYAML string, extraEnv ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "govgate.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, dbURL: dbURL, cfgPath: cfgPath, dataDir: dir, log: &bytes.Buffer{}, logMu: &sync.Mutex{}}
	p.env = append(os.Environ(),
		"GOVGATE_DATABASE_URL="+dbURL,
		"GOVGATE_ADMIN_TOKEN="+adminToken,
		"GOVGATE_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"GOVGATE_DELIVERY_ALLOW_PRIVATE=true",
		"GOVGATE_DELIVERY_CA_FILE="+caFile,
	)
	p.env = append(p.env, extraEnv...)
	p.start()
	return p
}

// listeningLine is serve's log line for a listener it opened.
var listeningLine = regexp.MustCompile(`msg=listening listener=(\w+) addr=http://(\S+)`)

// start runs the process on ports the kernel picks, and learns them from
// its log. (Picking free ports first and passing them lost a race: another
// test binary could take one in between, and a check that the port
// answered then saw that binary's listener, not govgate's.)
func (p *proc) start() {
	t := p.t
	t.Helper()
	p.logMu.Lock()
	from := p.log.Len() // a restarted process logs after its first life
	p.logMu.Unlock()
	p.cmd = exec.Command(binary, "serve", "--config", p.cfgPath)
	p.cmd.Env = append(p.env, "GOVGATE_API_ADDR=127.0.0.1:0", "GOVGATE_WEBHOOKS_ADDR=127.0.0.1:0", "GOVGATE_ADMIN_ADDR=127.0.0.1:0", "GOVGATE_LOG_FORMAT=text")
	w := lockedWriter{p.logMu, p.log}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.stop() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		// serve opens its listeners one after another: wait for all three.
		p.logMu.Lock()
		found := map[string]string{}
		for _, m := range listeningLine.FindAllStringSubmatch(p.log.String()[from:], -1) {
			found[m[1]] = m[2]
		}
		p.logMu.Unlock()
		if len(found) == 3 {
			p.api, p.webhooks, p.admin = found["api"], found["webhooks"], found["admin"]
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("govgate exited at start:\n%s", p.logs())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("govgate did not start:\n%s", p.logs())
}

func (p *proc) logs() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.log.String()
}

// stop ends the process gracefully (SIGTERM).
func (p *proc) stop() {
	if p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// kill ends the process with SIGKILL: no shutdown code runs.
func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

func (p *proc) register(t *testing.T, url string) string {
	t.Helper()
	resp, body := do(t, "POST", "http://"+p.webhooks+"/webhooks", "", map[string]string{"url": url})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register %s: %d %s", url, resp.StatusCode, body)
	}
	var out struct{ Secret string }
	json.Unmarshal(body, &out)
	return out.Secret
}

func (p *proc) deactivate(t *testing.T, url string) {
	t.Helper()
	resp, body := do(t, "DELETE", "http://"+p.webhooks+"/webhooks", "", map[string]string{"url": url})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("deactivate: %d %s", resp.StatusCode, body)
	}
}

func (p *proc) notify(t *testing.T, id, dao string, data any) {
	t.Helper()
	resp, body := do(t, "POST", "http://"+p.admin+"/admin/api/notifications", adminToken, map[string]any{"id": id, "type": "test", "dao": dao, "data": data})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notify: %d %s", resp.StatusCode, body)
	}
}

func do(t *testing.T, method, url, token string, v any) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if v != nil {
		b, _ := json.Marshal(v)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if v != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// hookReceiver is a real HTTPS receiver that verifies every delivery with
// sdk/receiver, keyed by the webhook path's secret, and records what it got.
type hookReceiver struct {
	addr   string
	caFile string
	cert   tls.Certificate

	mu       sync.Mutex
	secrets  map[string]string // path → secret
	got      map[string]int    // path + " " + notification id → count
	bodies   map[string][]byte
	headers  map[string]http.Header
	rejected int
	status   func(path string) int // answer after verification; nil: 200
	order    map[string][]string   // path → notification ids answered 2xx, in arrival order
	srv      *http.Server
}

func newReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	cert, caPEM, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, caPEM, 0o600)
	r := &hookReceiver{
		addr: freeAddr(t), caFile: caFile,
		cert:    cert,
		secrets: map[string]string{}, got: map[string]int{}, bodies: map[string][]byte{}, headers: map[string]http.Header{},
	}
	r.up(t)
	t.Cleanup(r.down)
	return r
}

func (r *hookReceiver) url(path string) string { return "https://" + r.addr + path }

func (r *hookReceiver) setSecret(path, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[path] = secret
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", 400)
		return
	}
	r.mu.Lock()
	secret := r.secrets[req.URL.Path]
	r.mu.Unlock()
	if err := receiver.Verify(secret, req.Header, body, time.Now()); err != nil {
		r.mu.Lock()
		r.rejected++
		r.mu.Unlock()
		http.Error(w, err.Error(), receiver.StatusCode(err))
		return
	}
	key := req.URL.Path + " " + req.Header.Get("X-Webhook-Id")
	status := 200
	if r.status != nil {
		status = r.status(req.URL.Path)
	}
	r.mu.Lock()
	if status/100 == 2 {
		r.got[key]++
		if r.order == nil {
			r.order = map[string][]string{}
		}
		r.order[req.URL.Path] = append(r.order[req.URL.Path], req.Header.Get("X-Webhook-Id"))
	}
	r.bodies[key] = body
	r.headers[key] = req.Header.Clone()
	r.mu.Unlock()
	w.WriteHeader(status)
}

func (r *hookReceiver) up(t *testing.T) {
	var l net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port may linger briefly after down
		if l, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.srv = &http.Server{Handler: r, TLSConfig: &tls.Config{Certificates: []tls.Certificate{r.cert}}}
	go r.srv.ServeTLS(l, "", "")
}

func (r *hookReceiver) down() {
	if r.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.srv.Shutdown(ctx)
		r.srv.Close()
	}
}

func (r *hookReceiver) count(path, id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[path+" "+id]
}

func (r *hookReceiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *hookReceiver) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.got)
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond) // polls a separate process (over HTTP or its log): it has no signal to wait on
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}

// pgURL is a new database on the shared PostgreSQL server with the server
// itself, for a test that stops and restarts the database under govgate;
// any other test takes its database from storetest.
func pgURL(t *testing.T) (string, *pgtest.Server) {
	srv := pgtest.Shared(t)
	return srv.NewDatabase(t), srv
}
