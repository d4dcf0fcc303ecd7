package web

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's Chromium through the DevTools protocol.
// Run with -update-screenshots (or GOVGATE_SCREENSHOTS=1) to rewrite the
// pictures in docs/screenshots/.
var updateScreenshots = flag.Bool("update-screenshots", false, "write docs/screenshots/*.png from the browser tests")

const chromiumPath = "/usr/bin/chromium"

func screenshotsWanted() bool {
	return *updateScreenshots || os.Getenv("GOVGATE_SCREENSHOTS") == "1"
}

// tab is one headless Chromium tab for one test.
type tab struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	js  []string // uncaught exceptions in the page
}

func newTab(t *testing.T) *tab {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: CI must install Debian's chromium package (apt-get install -y chromium) for the admin page tests", chromiumPath)
		}
		t.Skipf("%s is missing: install Debian's chromium package (apt-get install -y chromium) to run the admin page's browser tests", chromiumPath)
	}
	profile := t.TempDir()
	var logs bytes.Buffer
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(&lockedBuffer{buf: &logs}),
	)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	tb := &tab{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancelTime()
		chromedp.Cancel(ctx)
		cancelTab()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v\n%s", err, logs.String())
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() {
				tb.mu.Lock()
				tb.js = append(tb.js, m.String())
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, e := range tb.js {
			t.Errorf("JavaScript exception in the page: %s", e)
		}
	})
	return tb
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// do runs steps and fails the test with what the page showed.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v\npage %s:\n%s", what, err, tb.location(), tb.bodyText())
	}
}

func (tb *tab) text(css string) string {
	tb.t.Helper()
	tb.do("wait for "+css, chromedp.WaitVisible(chromedp.CSS(css)))
	s, err := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		tb.t.Fatalf("text of %s: %v", css, err)
	}
	return s
}

func (tb *tab) location() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 2*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Location())
	return s
}

// scripted waits until the page's script has run: actions that need it
// must not race the deferred app.js.
func (tb *tab) scripted() {
	tb.t.Helper()
	tb.do("wait for app.js", chromedp.Poll[chromedp.Void](`window.govgate !== undefined`, chromedp.WithPollingTimeout(10*time.Second)))
}

// waitLocation waits for a navigation to a URL that contains part.
func (tb *tab) waitLocation(part string) {
	tb.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(tb.location(), part) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.t.Fatalf("the page did not go to a URL with %q; it is at %s", part, tb.location())
}

func (tb *tab) bodyText() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 2*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

func (tb *tab) wantText(css string, want ...string) {
	tb.t.Helper()
	got := tb.text(css)
	for _, w := range want {
		if !strings.Contains(got, w) {
			tb.t.Fatalf("%s on %s: no %q in\n%s", css, tb.location(), w, got)
		}
	}
}

// shot saves the whole page as docs/screenshots/NAME.png when asked to.
func (tb *tab) shot(name string) {
	tb.t.Helper()
	if !screenshotsWanted() {
		return
	}
	tb.do("settle", chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`), chromedp.Sleep(300*time.Millisecond))
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("..", "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("wrote docs/screenshots/%s.png", name)
}

func (tb *tab) signIn(base, token string) {
	tb.t.Helper()
	tb.do("sign in", chromedp.Navigate(base+"/admin/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Main"]`)))
}

// TestBrowserPages walks every page of the admin page in Chromium, on the
// in-process stack with seeded data and the contract routes, and takes the
// screenshots of docs/screenshots/.
func TestBrowserPages(t *testing.T) {
	tb := newTab(t)
	s := newStack(t, true)
	s.seed(t)
	base := s.srv.URL

	tb.do("open", chromedp.Navigate(base+"/admin/"), chromedp.WaitVisible(chromedp.ID("token")))
	tb.shot("signin")
	tb.signIn(base, testToken)
	tb.wantText("#health-cards", "Uniswap", "Healthy", "ENS", "Degraded", "Arbitrum", "Failing", "Open")
	tb.wantText("#delivery-stats", "Queue depth", "Succeeded", "Failed")
	tb.shot("overview")
	if screenshotsWanted() {
		_, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		if err != nil {
			t.Fatal(err)
		}
		tb.shot("overview-dark")
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
			t.Fatal(err)
		}
	}

	// The overview refreshes itself: a new failing state shows up without a reload.
	s.contract.mu.Lock()
	s.contract.health[0]["status"] = "fail"
	s.contract.mu.Unlock()
	tb.do("live refresh", chromedp.Poll[chromedp.Void](`document.querySelector('[data-dao="uniswap"] .badge').innerText.includes("Failing")`, chromedp.WithPollingTimeout(15*time.Second)))
	s.contract.mu.Lock()
	s.contract.health[0]["status"] = "pass"
	s.contract.mu.Unlock()

	tb.do("webhooks", chromedp.Navigate(base+"/admin/ui/webhooks"), chromedp.WaitVisible(chromedp.ID("webhooks-table")))
	tb.wantText("#webhooks-table", "hooks.example.org", "Deactivated", "100%")
	tb.shot("webhooks")

	tb.do("search", chromedp.SendKeys(chromedp.ID("search"), "discord"), chromedp.Submit(chromedp.ID("search")))
	tb.waitLocation("search=discord")
	tb.do("search results", chromedp.WaitVisible(chromedp.CSS(`tr[data-webhook-id="3"]`)))
	if got := tb.text("#webhooks-table tbody"); strings.Contains(got, "hooks.example.org") {
		t.Fatalf("search kept other webhooks:\n%s", got)
	}
	tb.do("detail", chromedp.Click(chromedp.CSS(`tr[data-webhook-id="3"] a`)), chromedp.WaitVisible(chromedp.ID("deliveries")))
	tb.wantText("#deliveries", "Failed", "503", "upstream busy")
	// The webhook's own chain: add a plugin, configure it, save it with PUT.
	tb.scripted()
	tb.do("edit the webhook's chain",
		chromedp.SetValue(chromedp.CSS(".chain-add-select"), "type-filter"),
		chromedp.Click(chromedp.CSS(".chain-add")),
		chromedp.WaitVisible(chromedp.CSS(".chain-entry .chain-config")),
		chromedp.SetValue(chromedp.CSS(".chain-entry .chain-config"), `{"types": ["proposal.created"]}`),
		chromedp.Click(chromedp.CSS(".chain-save")),
		chromedp.Poll[chromedp.Void](`document.querySelector('.chain-status').innerText.startsWith("Saved")`, chromedp.WithPollingTimeout(10*time.Second)))
	tb.shot("webhook-detail")
	s.contract.mu.Lock()
	saved := fmt.Sprint(s.contract.hooks["3"])
	s.contract.mu.Unlock()
	if !strings.Contains(saved, "type-filter") || !strings.Contains(saved, "proposal.created") {
		t.Fatalf("webhook chain after save: %s", saved)
	}
	tb.do("replay", chromedp.Click(chromedp.CSS(`#deliveries .delivery button[aria-label^="Replay"]`)), chromedp.WaitVisible(chromedp.CSS(".flash")))
	tb.wantText(".flash", "queued again")

	tb.do("plugins", chromedp.Navigate(base+"/admin/ui/plugins"), chromedp.WaitVisible(chromedp.ID("plugins-table")))
	tb.wantText("#plugins-table", "type-filter", "slack-format", "whale-votes", "Disabled")
	// Reorder the global chain: move slack-format above type-filter and save.
	tb.scripted()
	tb.do("reorder the global chain",
		chromedp.Click(chromedp.CSS(`.chain-entry[data-plugin="slack-format"] .chain-up`)),
		chromedp.Click(chromedp.CSS(".chain-save")),
		chromedp.Poll[chromedp.Void](`document.querySelector('.chain-status').innerText.startsWith("Saved")`, chromedp.WithPollingTimeout(10*time.Second)))
	if got := strings.Join(s.contract.chainNames(), ","); got != "slack-format,type-filter" {
		t.Fatalf("global chain after reorder: %s", got)
	}
	tb.do("undo reorder",
		chromedp.Click(chromedp.CSS(`.chain-entry[data-plugin="type-filter"] .chain-up`)),
		chromedp.Click(chromedp.CSS(".chain-save")),
		chromedp.Poll[chromedp.Void](`document.querySelector('.chain-status').innerText.startsWith("Saved")`, chromedp.WithPollingTimeout(10*time.Second)))
	tb.scripted()
	tb.do("try it", chromedp.SetValue(chromedp.ID("try-sample"), "1"),
		chromedp.Click(chromedp.ID("try-run")), chromedp.WaitVisible(chromedp.ID("try-output")))
	tb.wantText("#try-output", "Kept", "type-filter", "slack-format", "formatted for Slack")
	tb.shot("plugins")
	tb.do("upload garbage", chromedp.SetUploadFiles(chromedp.ID("module"), []string{writeFile(t, "bad.wasm", []byte("not wasm"))}),
		chromedp.Submit(chromedp.ID("upload-form")), chromedp.WaitVisible(chromedp.CSS(".flash-error")))
	tb.wantText(".flash-error", "not a WebAssembly module")

	tb.do("notifications", chromedp.Navigate(base+"/admin/ui/notifications"), chromedp.WaitVisible(chromedp.ID("feed")))
	tb.wantText("#feed", "proposal.executed", "ntf_05")
	tb.shot("notifications")
	tb.do("send a test notification", chromedp.SetValue(chromedp.ID("s-id"), "ntf_browser"), chromedp.Submit(chromedp.ID("send-form")),
		chromedp.WaitVisible(chromedp.CSS(".flash-ok")))
	tb.wantText("#feed", "ntf_browser")
	tb.scripted()
	tb.do("filter", chromedp.SetValue(chromedp.ID("f-dao"), "ens"))
	tb.waitLocation("dao=ens")
	tb.do("filtered feed", chromedp.WaitVisible(chromedp.ID("feed")))
	if got := tb.text("#feed"); strings.Contains(got, "uniswap") {
		t.Fatalf("DAO filter kept uniswap:\n%s", got)
	}
	// The feed is live: a notification stored now shows up without a reload.
	resp, body := apiDo(t, "POST", base+"/admin/api/notifications", testToken, map[string]any{"id": "ntf_live", "type": "proposal.created", "dao": "ens", "data": map[string]any{"proposalId": "9"}})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notify: %d %s", resp.StatusCode, body)
	}
	tb.do("live feed", chromedp.Poll[chromedp.Void](`document.getElementById("feed").innerText.includes("ntf_live")`, chromedp.WithPollingTimeout(15*time.Second)))

	tb.do("sign out", chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.ID("token")))
	tb.wantText(".signin-card", "You are signed out.")
}

// TestBrowserAgainstGovgate runs the real govgate binary with a real HTTPS
// receiver and goes through the admin page as an operator would.
func TestBrowserAgainstGovgate(t *testing.T) {
	tb := newTab(t)
	g := startGovgate(t)
	base := "http://" + g.admin

	// A wrong token is refused with a message that says what to do.
	tb.do("wrong token", chromedp.Navigate(base+"/admin/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "not-the-token"), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("signin-error")))
	tb.wantText("#signin-error", "not right", "GOVGATE_ADMIN_TOKEN")
	tb.signIn(base, binaryToken)
	tb.wantText("#health-cards", "Uniswap", "ENS")

	// A webhook registered through the API shows in the list, gets a real
	// delivery, and can be deactivated from the page.
	hook := g.receiver + "/browser-hook"
	resp, body := apiDo(t, "POST", "http://"+g.webhooks+"/webhooks", "", map[string]string{"url": hook})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	resp, body = apiDo(t, "POST", base+"/admin/api/notifications", binaryToken, map[string]any{"id": "ntf_e2e_browser", "type": "test", "dao": "uniswap", "data": map[string]string{"hello": "browser"}})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notify: %d %s", resp.StatusCode, body)
	}
	tb.do("find the webhook", chromedp.Navigate(base+"/admin/ui/webhooks"),
		chromedp.SendKeys(chromedp.ID("search"), "browser-hook"), chromedp.Submit(chromedp.ID("search")))
	tb.waitLocation("search=browser-hook")
	tb.do("search results", chromedp.WaitVisible(chromedp.CSS("#webhooks-table tr[data-webhook-id]")))
	tb.wantText("#webhooks-table", hook, "Active")
	tb.do("open it", chromedp.Click(chromedp.CSS("#webhooks-table tr[data-webhook-id] a")), chromedp.WaitVisible(chromedp.CSS(".deliveries, .empty")))
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(tb.bodyText(), "Succeeded") && time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond)
		tb.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("main")))
	}
	tb.wantText("#deliveries", "Succeeded", "test")
	tb.do("attempt log", chromedp.Click(chromedp.CSS("#deliveries details.attempts summary")), chromedp.WaitVisible(chromedp.CSS("#deliveries details.attempts table")))
	tb.wantText("#deliveries details.attempts table", "200")

	tb.do("back to the list", chromedp.Navigate(base+"/admin/ui/webhooks?search=browser-hook"), chromedp.WaitVisible(chromedp.ID("webhooks-table")))
	tb.do("deactivate", chromedp.Click(chromedp.CSS(`#webhooks-table button[aria-label^="Deactivate"]`)), chromedp.WaitVisible(chromedp.CSS(".flash-ok")))
	tb.wantText(".flash-ok", "is deactivated")
	tb.wantText("#webhooks-table", "Deactivated")
	resp, body = apiDo(t, "GET", base+"/admin/api/webhooks?search=browser-hook", binaryToken, nil)
	if !strings.Contains(string(body), `"state":"deactivated"`) {
		t.Fatalf("after deactivating from the page the API says: %d %s", resp.StatusCode, body)
	}

	// Plugins: upload one of the repository's modules and try it.
	resp, _ = apiDo(t, "GET", base+"/admin/api/plugins", binaryToken, nil)
	if resp.StatusCode == http.StatusNotFound {
		t.Log("skipping the plugin upload: this govgate build has no /admin/api/plugins yet")
		return
	}
	mods, _ := filepath.Glob(filepath.Join("..", "plugins", "*", "*.wasm"))
	if len(mods) == 0 {
		t.Log("skipping the plugin upload: no plugins/*/*.wasm in the repository")
		return
	}
	mod, _ := filepath.Abs(mods[0])
	tb.do("upload", chromedp.Navigate(base+"/admin/ui/plugins"), chromedp.WaitVisible(chromedp.ID("upload-form")),
		chromedp.SetUploadFiles(chromedp.ID("module"), []string{mod}), chromedp.Submit(chromedp.ID("upload-form")),
		chromedp.WaitVisible(chromedp.CSS(".flash")))
	tb.wantText(".flash", "Installed")
	name, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.querySelector("#plugins-table tbody tr:last-child").dataset.plugin`))
	if err != nil || name == "" {
		t.Fatalf("uploaded plugin not listed: %v", err)
	}
	tb.scripted()
	tb.do("try it", chromedp.SetValue(chromedp.ID("try-chain"), name), chromedp.Click(chromedp.ID("try-run")), chromedp.WaitVisible(chromedp.ID("try-output")))
	if got := tb.text("#try-output"); !strings.Contains(got, "Kept") && !strings.Contains(got, "Dropped") {
		t.Fatalf("try-it output: %s", got)
	}
}

func writeFile(t *testing.T, name string, b []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func apiDo(t *testing.T, method, url, token string, v any) (*http.Response, []byte) {
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

const binaryToken = "browser-e2e-admin-token"

type govgateProc struct {
	admin, webhooks, receiver string
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// startGovgate builds govgate (once), starts `govgate serve` on SQLite with
// a real HTTPS receiver whose CA it trusts, and stops it when the test ends.
func startGovgate(t *testing.T) govgateProc {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "govgate-web-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "govgate")
		out, err := exec.Command("go", "build", "-o", binPath, "../core/cmd/govgate").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build govgate: %v\n%s", err, out)
		}
	})
	if binPath != "" {
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(binPath)) })
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}

	rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"received":true}`)
	}))
	t.Cleanup(rcv.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600)
	cfg := filepath.Join(dir, "govgate.yaml")
	os.WriteFile(cfg, []byte(`
log_level: info
delivery:
  timeout: 2s
  schedule: [200ms, 400ms]
  poll_interval: 100ms
daos:
  - {slug: uniswap, name: Uniswap, chain_id: 1, governor: "0x408ED6354d4973f66138C91495F2f2FCbd8724C3", kind: governor-bravo}
  - {slug: ens, name: ENS, chain_id: 1, governor: "0x323A76393544d5ecca80cd6ef2A560C6a395b7E3", kind: oz-governor}
`), 0o600)
	p := govgateProc{admin: freeAddr(t), webhooks: freeAddr(t), receiver: rcv.URL}
	api := freeAddr(t)
	cmd := exec.Command(binPath, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(),
		"GOVGATE_DATABASE_URL=sqlite:"+filepath.Join(dir, "govgate.db"),
		"GOVGATE_ADMIN_TOKEN="+binaryToken,
		"GOVGATE_DELIVERY_ALLOW_PRIVATE=true",
		"GOVGATE_DELIVERY_CA_FILE="+ca,
		"GOVGATE_API_ADDR="+api, "GOVGATE_WEBHOOKS_ADDR="+p.webhooks, "GOVGATE_ADMIN_ADDR="+p.admin,
	)
	var logs lockedBuffer
	logs.buf = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			logs.mu.Lock()
			t.Logf("govgate log:\n%s", logs.buf.String())
			logs.mu.Unlock()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + p.admin + "/admin/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /admin/ on govgate: %d (is web.New wired into the admin listener?)", resp.StatusCode)
			}
			return p
		}
		select {
		case <-exited:
			t.Fatalf("govgate exited at start:\n%s", logs.buf.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("govgate did not start")
	return p
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
