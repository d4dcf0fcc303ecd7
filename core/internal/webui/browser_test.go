package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/sdk/plugintest"
)

// The browser tests drive Debian's Chromium through the DevTools protocol.
// GOVGATE_SCREENSHOTS=1 go test -run TestScreenshotsFromDev ./web/ rewrites
// the pictures in docs/screenshots/ from a real `govgate dev`.

const chromiumPath = "/usr/bin/chromium"

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

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
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

// colorScheme emulates a prefers-color-scheme ("light" or "dark") without
// animations, so that a screenshot catches none half-way.
func (tb *tab) colorScheme(scheme string) {
	tb.t.Helper()
	if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{
		{Name: "prefers-color-scheme", Value: scheme}, {Name: "prefers-reduced-motion", Value: "reduce"}}}); err != nil {
		tb.t.Fatal(err)
	}
}

// screenshots reports whether the test is to take its screenshots
// (GOVGATE_SCREENSHOTS=1); if so, the tab becomes the pictures' 1280x900
// desktop in the light scheme.
func (tb *tab) screenshots() bool {
	tb.t.Helper()
	if os.Getenv("GOVGATE_SCREENSHOTS") != "1" {
		return false
	}
	tb.do("viewport", chromedp.EmulateViewport(1280, 900))
	tb.colorScheme("light")
	return true
}

// evaluate returns what js evaluates to in the page, failing the test on
// an error.
func evaluate[T any](tb *tab, js string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		tb.t.Fatalf("%s: %v", js, err)
	}
	return v
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
		time.Sleep(100 * time.Millisecond) // polls Chromium, a separate process: a navigation there sends no signal here
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

// shot saves the page as docs/screenshots/NAME.png: all of it, or, with
// until, down to the bottom of the first element that matches that CSS
// selector, so that a long list does not make a picture of a few metres.
func (tb *tab) shot(name string, until ...string) {
	tb.t.Helper()
	// The pause lets Chromium repaint after the blur and scroll: its
	// compositor signals nothing the DevTools protocol can wait on.
	tb.do("settle", chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`), chromedp.Sleep(300*time.Millisecond))
	var png []byte
	var err error
	if len(until) == 0 {
		png, err = chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	} else {
		var bottom float64
		bottom, err = chromedp.Run(tb.ctx, chromedp.Evaluate[float64](`(() => {
			const el = document.querySelector(`+strconv.Quote(until[0])+`);
			const page = document.documentElement.scrollHeight;
			return el ? Math.min(page, Math.ceil(el.getBoundingClientRect().bottom + window.scrollY + 8)) : page;
		})()`))
		if err == nil {
			var r cdppage.CaptureScreenshotResult
			r, err = chromedp.Call(tb.ctx, cdppage.CaptureScreenshot, cdppage.CaptureScreenshotParams{
				Format: cdppage.CaptureScreenshotFormatPng, FromSurface: ptrTo(true), CaptureBeyondViewport: ptrTo(true),
				Clip: &cdppage.Viewport{X: 0, Y: 0, Width: 1280, Height: bottom, Scale: 1},
			})
			if err == nil {
				png = r.Data
			}
		}
	}
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join("..", "..", "..", "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("wrote docs/screenshots/%s.png", name)
}

func ptrTo[T any](v T) *T { return &v }

func (tb *tab) signIn(base, token string) {
	tb.t.Helper()
	tb.do("sign in", chromedp.Navigate(base+"/admin/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Main"]`)))
}

// TestBrowserPages walks every page of the admin page in Chromium, on the
// in-process stack with seeded data and the contract routes. It takes no
// screenshots: those come from a real `govgate dev` (TestScreenshotsFromDev).
func TestBrowserPages(t *testing.T) {
	tb := newTab(t)
	s := newStack(t, true)
	s.seed(t)
	base := s.srv.URL

	tb.do("open", chromedp.Navigate(base+"/admin/"), chromedp.WaitVisible(chromedp.ID("token")))
	tb.signIn(base, testToken)
	tb.wantText("#health-cards", "Uniswap", "Healthy", "ENS", "Degraded", "Arbitrum", "Failing", "Open")
	tb.wantText("#delivery-stats", "Queue depth", "Succeeded", "Failed")

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
	tb.do("upload garbage", chromedp.SetUploadFiles(chromedp.ID("module"), []string{writeFile(t, "bad.wasm", []byte("not wasm"))}),
		chromedp.Submit(chromedp.ID("upload-form")), chromedp.WaitVisible(chromedp.CSS(".flash-error")))
	tb.wantText(".flash-error", "not a WebAssembly module")

	tb.do("notifications", chromedp.Navigate(base+"/admin/ui/notifications"), chromedp.WaitVisible(chromedp.ID("feed")))
	tb.wantText("#feed", "proposal.executed", "ntf_05")
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
		time.Sleep(300 * time.Millisecond) // polls the govgate binary's page: a separate process with no signal to wait on
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
	// The committed WAT plugin: present in every clone, built or not.
	mod, _ := filepath.Abs(filepath.Join("..", "..", "..", "plugins", "wat-type-filter", "plugin.wasm"))
	tb.do("upload", chromedp.Navigate(base+"/admin/ui/plugins"), chromedp.WaitVisible(chromedp.ID("upload-form")),
		chromedp.SetUploadFiles(chromedp.ID("module"), []string{mod}), chromedp.Submit(chromedp.ID("upload-form")),
		chromedp.WaitVisible(chromedp.CSS(".flash")))
	tb.wantText(".flash", "Installed")
	name, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.querySelector("#plugins-table tbody tr:last-child").dataset.plugin`))
	if err != nil || name == "" {
		t.Fatalf("uploaded plugin not listed: %v", err)
	}
	tb.scripted()
	// A config its schema refuses is shown as such; a valid one runs. The
	// notification is the recent one, of type "test".
	tb.do("try a bad config", chromedp.SetValue(chromedp.ID("try-chain"), name), chromedp.SetValue(chromedp.ID("try-config"), `{"types": "test"}`),
		chromedp.Click(chromedp.ID("try-run")), chromedp.WaitVisible(chromedp.CSS("#try-result .flash-error")))
	tb.wantText("#try-result", "config at /types")
	tb.do("try it", chromedp.SetValue(chromedp.ID("try-config"), `{"types": ["proposal.created"]}`), chromedp.Click(chromedp.ID("try-run")), chromedp.WaitVisible(chromedp.ID("try-output")))
	if got := tb.text("#try-output"); !strings.Contains(got, "Dropped") {
		t.Fatalf("try-it output: %s", got)
	}
}

// TestScreenshotsFromDev takes the pictures of docs/screenshots/ from a real
// `govgate dev`: the in-process chain with its two DAOs and scripted
// governance activity, the demo receiver that verifies every signature, and
// the repository's own plugins. It runs only with GOVGATE_SCREENSHOTS=1:
//
//	GOVGATE_SCREENSHOTS=1 go test -run TestScreenshotsFromDev ./web/
func TestScreenshotsFromDev(t *testing.T) {
	if os.Getenv("GOVGATE_SCREENSHOTS") != "1" {
		t.Skip("set GOVGATE_SCREENSHOTS=1 to rewrite docs/screenshots/*.png from a real `govgate dev` (takes about two minutes)")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing: install Debian's chromium package (apt-get install -y chromium) to take the screenshots", chromiumPath)
	}
	g := startGovgateDev(t)
	base := "http://" + g.admin
	api := func(method, path string, v any) []byte {
		t.Helper()
		resp, body := apiDo(t, method, base+path, binaryToken, v)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, body)
		}
		return body
	}
	var plugins struct {
		Items []struct {
			Name   string
			Loaded bool
		}
	}
	json.Unmarshal(api("GET", "/admin/api/plugins", nil), &plugins)
	if len(plugins.Items) != len(devPlugins)+1 {
		t.Fatalf("govgate dev lists %d plugins, want %d: %+v", len(plugins.Items), len(devPlugins)+1, plugins.Items)
	}
	for _, p := range plugins.Items {
		if !p.Loaded {
			t.Fatalf("plugin %s is not loaded", p.Name)
		}
	}
	// A global chain that keeps the dev DAOs, and the Slack format on the
	// demo receiver's own deliveries: it verifies the signature over the
	// transformed bytes.
	api("PUT", "/admin/api/chain", map[string]any{"items": []any{map[string]any{"plugin": "dao-filter", "config": map[string]any{"daos": []string{"dev-oz", "dev-bravo", "dev-oz-time"}}}}})
	api("PUT", "/admin/api/webhooks/1/chain", map[string]any{"items": []any{map[string]any{"plugin": "slack", "config": map[string]any{}}}})

	// The pictures need the scripted activity's first scenes: lifecycles
	// executed on both DAOs (proposals, votes, queues, executions) and a
	// cancellation.
	notified := func(typ, dao string) bool {
		var n struct{ Items []json.RawMessage }
		json.Unmarshal(api("GET", "/admin/api/notifications?limit=1&type="+typ+"&dao="+dao, nil), &n)
		return len(n.Items) > 0
	}
	waitFor(t, "the scripted lifecycles and a cancellation", 90*time.Second, func() bool {
		return notified(core.TypeProposalExecuted, "dev-oz") && notified(core.TypeProposalExecuted, "dev-bravo") && notified(core.TypeProposalCanceled, "dev-oz")
	})
	waitFor(t, "every DAO to be healthy and deliveries to succeed", 60*time.Second, func() bool {
		var h struct{ Items []struct{ Status string } }
		json.Unmarshal(api("GET", "/admin/api/health", nil), &h)
		var st struct {
			DeliveriesByState map[string]int
			QueueDepth        int
		}
		json.Unmarshal(api("GET", "/admin/api/stats", nil), &st)
		healthy := len(h.Items) >= 2
		for _, d := range h.Items {
			healthy = healthy && d.Status == "pass"
		}
		return healthy && st.DeliveriesByState["succeeded"] >= 20 && st.QueueDepth == 0
	})
	if strings.Contains(g.logs.String(), "dev receiver refused a delivery") {
		t.Fatalf("the demo receiver refused a delivery:\n%s", g.logs.String())
	}

	// A 1280x900 desktop, without animations caught half-way.
	tb := newTab(t)
	tb.do("viewport", chromedp.EmulateViewport(1280, 900))
	tb.colorScheme("light")
	tb.do("open", chromedp.Navigate(base+"/admin/"), chromedp.WaitVisible(chromedp.ID("token")))
	tb.shot("signin")
	tb.signIn(base, binaryToken)
	tb.wantText("#health-cards", "dev-oz", "dev-bravo", "Healthy")
	tb.wantText("#delivery-stats", "Succeeded")
	tb.shot("overview")
	tb.colorScheme("dark")
	tb.shot("overview-dark")
	tb.colorScheme("light")

	// A second webhook, registered as a user would, beside the demo receiver.
	resp, body := apiDo(t, "POST", "http://"+g.webhooks+"/webhooks", "", map[string]string{"url": "https://hooks.example.com/govgate"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	tb.do("webhooks", chromedp.Navigate(base+"/admin/ui/webhooks"), chromedp.WaitVisible(chromedp.ID("webhooks-table")))
	tb.wantText("#webhooks-table", "hooks.example.com", "/govgate", "100%")
	tb.shot("webhooks")

	// An owner's webhook: subscribed, ordered, throttled, its secret rotated
	// by the operator; its receiver is unreachable, so the line is blocked.
	resp, body = apiDo(t, "POST", "http://"+g.webhooks+"/webhooks", "", map[string]any{"url": "https://owner.example.com/govgate",
		"types": []string{"proposal.*", "vote.cast"}, "daos": []string{"dev-oz"}, "ordered": true, "maxPerSecond": 5, "burst": 10})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register the owner's webhook: %d %s", resp.StatusCode, body)
	}
	resp, body = apiDo(t, "POST", "http://"+g.webhooks+"/webhooks/rotate", binaryToken, map[string]any{"url": "https://owner.example.com/govgate", "overlapSeconds": 86400})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("rotate: %d %s", resp.StatusCode, body)
	}
	var owned struct{ Items []struct{ ID int64 } }
	json.Unmarshal(api("GET", "/admin/api/webhooks?search=owner.example.com", nil), &owned)
	if len(owned.Items) != 1 {
		t.Fatalf("owner's webhook not listed: %+v", owned)
	}
	ownerPage := fmt.Sprintf("/admin/api/webhooks/%d", owned.Items[0].ID)
	waitFor(t, "the owner's ordered line to be blocked", 90*time.Second, func() bool {
		var v struct{ Ordering struct{ Blocked bool } }
		json.Unmarshal(api("GET", ownerPage, nil), &v)
		return v.Ordering.Blocked
	})
	tb.do("owner's webhook", chromedp.Navigate(base+fmt.Sprintf("/admin/ui/webhooks/%d", owned.Items[0].ID)), chromedp.WaitVisible(chromedp.ID("owner-settings")))
	tb.wantText("#owner-settings", "proposal.*", "dev-oz", "blocked", "5 per second", "two secrets sign", "admin")
	tb.shot("webhook-owner", "#owner-settings")

	tb.do("detail", chromedp.Navigate(base+"/admin/ui/webhooks/1"), chromedp.WaitVisible(chromedp.ID("deliveries")))
	tb.wantText("#deliveries", "Succeeded")
	tb.do("attempt log", chromedp.Click(chromedp.CSS("#deliveries details.attempts summary")), chromedp.WaitVisible(chromedp.CSS("#deliveries details.attempts table")))
	tb.wantText("#deliveries details.attempts table", "204", "slack")
	tb.shot("webhook-detail", "#deliveries > li:nth-child(7)")

	tb.do("plugins", chromedp.Navigate(base+"/admin/ui/plugins"), chromedp.WaitVisible(chromedp.ID("plugins-table")))
	tb.wantText("#plugins-table", "dao-filter", "slack", "wat-type-filter")
	tb.scripted()
	tb.do("try it", chromedp.SetValue(chromedp.ID("try-chain"), "slack"),
		chromedp.Click(chromedp.ID("try-run")), chromedp.WaitVisible(chromedp.ID("try-output")))
	tb.wantText("#try-output", "Kept", "slack")
	tb.shot("plugins")

	// The proposal list, once the binary hands the REST API to the page.
	tb.do("proposals", chromedp.Navigate(base+"/admin/ui/proposals"), chromedp.WaitVisible(chromedp.CSS("#live")))
	if listed, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`document.getElementById("proposals") !== null`)); listed {
		tb.shot("proposals-dev", "#proposals > li:nth-child(6)")
	} else {
		t.Logf("this govgate build does not hand the REST API to the admin page (webui.Config.REST): no proposals-dev.png; proposals.png comes from TestBrowserProposals")
	}

	tb.do("notifications", chromedp.Navigate(base+"/admin/ui/notifications"), chromedp.WaitVisible(chromedp.ID("feed")))
	tb.wantText("#feed", "dev-oz", "dev-bravo", "vote.cast")
	tb.do("event data", chromedp.Click(chromedp.CSS("#feed > li:first-child details summary")), chromedp.WaitVisible(chromedp.CSS("#feed > li:first-child details pre")))
	tb.shot("notifications", "#feed > li:nth-child(10)")
}

// devPlugins are the repository's Go plugins that TestScreenshotsFromDev
// builds for govgate dev; the hand-written wat-type-filter comes as its
// committed plugin.wasm.
var devPlugins = []string{"dao-filter", "event-filter", "slack", "discord"}

type govgateDev struct {
	admin, webhooks string
	logs            *lockedBuffer
}

// startGovgateDev runs `govgate dev` on SQLite with the repository's
// plugins in its plugins directory.
func startGovgateDev(t *testing.T) govgateDev {
	t.Helper()
	dir := t.TempDir()
	pluginsDir := filepath.Join(dir, "plugins")
	if err := os.Mkdir(pluginsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range devPlugins {
		wasm := plugintest.Build(t, filepath.Join("..", "..", "..", "plugins", name))
		if err := os.WriteFile(filepath.Join(pluginsDir, name+".wasm"), wasm, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wat, err := os.ReadFile(filepath.Join("..", "..", "..", "plugins", "wat-type-filter", "plugin.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pluginsDir, "wat-type-filter.wasm"), wat, 0o600); err != nil {
		t.Fatal(err)
	}
	g := govgateDev{admin: freeAddr(t), webhooks: freeAddr(t)}
	g.logs = runGovgate(t, []string{"dev"}, []string{
		"GOVGATE_DATABASE_URL=sqlite:" + filepath.Join(dir, "govgate.db"),
		"GOVGATE_ADMIN_TOKEN=" + binaryToken,
		"GOVGATE_API_ADDR=" + freeAddr(t), "GOVGATE_WEBHOOKS_ADDR=" + g.webhooks, "GOVGATE_ADMIN_ADDR=" + g.admin,
		"GOVGATE_DEV_RECEIVER_ADDR=127.0.0.1:0",
		"GOVGATE_PLUGINS_DIR=" + pluginsDir,
		"TMPDIR=" + t.TempDir(),
	}, g.admin, 3*time.Minute)
	return g
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(500 * time.Millisecond) // polls a separate govgate process over HTTP: it has no signal to wait on
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

// buildGovgate builds the govgate binary into the test's own directory:
// each test that runs govgate has its binary (the go build cache keeps the
// second build short), so no test removes another's.
func buildGovgate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "govgate")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/govgate").CombinedOutput(); err != nil {
		t.Fatalf("build govgate: %v\n%s", err, out)
	}
	return bin
}

// runGovgate starts the govgate binary with args and env added to the
// test's environment, waits until its admin listener at admin serves the
// page, and stops it when the test ends. Its log is printed when the test
// fails and kept in the returned buffer.
func runGovgate(t *testing.T, args, env []string, admin string, startup time.Duration) *lockedBuffer {
	t.Helper()
	cmd := exec.Command(buildGovgate(t), args...)
	cmd.Env = append(os.Environ(), env...)
	logs := &lockedBuffer{buf: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = logs, logs
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
			t.Logf("govgate log:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(startup)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + admin + "/admin/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /admin/ on govgate: %d (is webui.New wired into the admin listener?)", resp.StatusCode)
			}
			return logs
		}
		select {
		case <-exited:
			t.Fatalf("govgate exited at start:\n%s", logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("govgate did not start in %s:\n%s", startup, logs.String())
	return logs
}

// startGovgate starts `govgate serve` on SQLite with a real HTTPS receiver
// whose CA it trusts.
func startGovgate(t *testing.T) govgateProc {
	t.Helper()
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
	runGovgate(t, []string{"serve", "--config", cfg}, []string{
		"GOVGATE_DATABASE_URL=sqlite:" + filepath.Join(dir, "govgate.db"),
		"GOVGATE_ADMIN_TOKEN=" + binaryToken,
		"GOVGATE_DELIVERY_ALLOW_PRIVATE=true",
		"GOVGATE_DELIVERY_CA_FILE=" + ca,
		"GOVGATE_API_ADDR=" + freeAddr(t), "GOVGATE_WEBHOOKS_ADDR=" + p.webhooks, "GOVGATE_ADMIN_ADDR=" + p.admin,
	}, p.admin, 60*time.Second)
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
