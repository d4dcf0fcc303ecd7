package webui

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// noRedirect is a client that shows redirects instead of following them.
func noRedirect(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func send(t *testing.T, c *http.Client, method, url string, form url.Values, hdr ...string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// signIn signs a new browser in and returns it with its CSRF token.
func signIn(t *testing.T, s *stack) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	resp, _ := send(t, c, "POST", s.srv.URL+"/admin/ui/signin", url.Values{"token": {testToken}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	_, page := send(t, c, "GET", s.srv.URL+"/admin/", nil)
	m := csrfMeta.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the overview:\n%s", page)
	}
	return c, m[1]
}

func TestSignInForm(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	resp, body := send(t, noRedirect(nil), "GET", s.srv.URL+"/admin/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `action="/admin/ui/signin"`) || !strings.Contains(body, `<label for="token">Admin token</label>`) {
		t.Fatalf("GET /admin/ without a session: %d, want the sign-in form:\n%s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers: %v", resp.Header)
	}
	// Any other page sends the browser to sign in, and back afterwards.
	resp, _ = send(t, noRedirect(nil), "GET", s.srv.URL+"/admin/ui/webhooks?state=active", nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/admin/?next="+url.QueryEscape("/admin/ui/webhooks?state=active") {
		t.Fatalf("GET a page without a session: %d Location %q", resp.StatusCode, loc)
	}
	resp, _ = send(t, noRedirect(nil), "POST", s.srv.URL+"/admin/ui/signin", url.Values{"token": {testToken}, "next": {"/admin/ui/webhooks?state=active"}})
	if loc := resp.Header.Get("Location"); loc != "/admin/ui/webhooks?state=active" {
		t.Fatalf("after sign-in Location = %q", loc)
	}
	// The root of the listener leads to the page.
	resp, _ = send(t, noRedirect(nil), "GET", s.srv.URL+"/", nil)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/admin/" {
		t.Fatalf("GET /: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestSignInWrongToken(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	for _, tok := range []string{"wrong", "", testToken + "x"} {
		resp, body := send(t, noRedirect(nil), "POST", s.srv.URL+"/admin/ui/signin", url.Values{"token": {tok}})
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "That admin token is not right") {
			t.Fatalf("token %q: %d\n%s", tok, resp.StatusCode, body)
		}
		if len(resp.Cookies()) != 0 {
			t.Fatalf("token %q set cookies %v", tok, resp.Cookies())
		}
	}
}

func TestSignInDisabledWithoutToken(t *testing.T) {
	t.Parallel()
	s := newStack(t, false, func(c *Config) { c.Token = "" })
	resp, body := send(t, noRedirect(nil), "POST", s.srv.URL+"/admin/ui/signin", url.Values{"token": {""}})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "GOVGATE_ADMIN_TOKEN") {
		t.Fatalf("%d\n%s", resp.StatusCode, body)
	}
}

func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	var last int
	var body string
	for i := 0; i < signinBurst+1; i++ {
		var resp *http.Response
		resp, body = send(t, noRedirect(nil), "POST", s.srv.URL+"/admin/ui/signin", url.Values{"token": {"guess"}})
		last = resp.StatusCode
	}
	if last != http.StatusTooManyRequests || !strings.Contains(body, "Too many sign-in attempts") {
		t.Fatalf("attempt %d: %d\n%s", signinBurst+1, last, body)
	}
	// Even the right token waits now.
	resp, _ := send(t, noRedirect(nil), "POST", s.srv.URL+"/admin/ui/signin", url.Values{"token": {testToken}})
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("right token while limited: %d", resp.StatusCode)
	}
}

func TestSessionCookieFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		tls        bool
		secure     bool
		wantSecure bool
	}{
		{name: "plain HTTP", wantSecure: false},
		{name: "TLS", tls: true, wantSecure: true},
		{name: "behind a TLS proxy", secure: true, wantSecure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, false, func(c *Config) { c.SecureCookies = tt.secure })
			base, client := s.srv.URL, noRedirect(nil)
			if tt.tls {
				ts := httptest.NewTLSServer(s.srv.Config.Handler)
				t.Cleanup(ts.Close)
				base, client = ts.URL, noRedirect(nil)
				client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
			}
			resp, _ := send(t, client, "POST", base+"/admin/ui/signin", url.Values{"token": {testToken}})
			cs := resp.Cookies()
			if len(cs) != 1 {
				t.Fatalf("cookies: %v", cs)
			}
			c := cs[0]
			if c.Name != CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/admin" || c.Secure != tt.wantSecure {
				t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/admin, Secure=%v", c, tt.wantSecure)
			}
			if raw, err := url.QueryUnescape(c.Value); err != nil || len(raw) < 43 { // 32 bytes, base64url
				t.Fatalf("session id %q is too short", c.Value)
			}
		})
	}
}

func TestSignOut(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	c, csrf := signIn(t, s)
	old := c.Jar.Cookies(mustURL(s.srv.URL + "/admin/"))
	resp, _ := send(t, c, "POST", s.srv.URL+"/admin/ui/signout", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/?signedout=1" {
		t.Fatalf("sign out: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if cs := resp.Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Fatalf("sign out must expire the cookie: %v", cs)
	}
	_, body := send(t, c, "GET", s.srv.URL+"/admin/?signedout=1", nil)
	if !strings.Contains(body, "You are signed out.") {
		t.Fatalf("after sign out:\n%s", body)
	}
	// The old cookie is dead on the server too, not just in this browser.
	replay := noRedirect(nil)
	req, _ := http.NewRequest("GET", s.srv.URL+"/admin/api/stats", nil)
	for _, ck := range old {
		req.AddCookie(ck)
	}
	if resp, err := replay.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("API with a signed-out cookie: %v %v", resp.StatusCode, err)
	}
}

func TestCookieAuthorizesAPI(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	s.seed(t)
	c, csrf := signIn(t, s)
	api := s.srv.URL + "/admin/api/webhooks/1/deactivate"
	tests := []struct {
		name string
		hdr  []string
		want int
	}{
		{name: "GET needs no token", want: http.StatusOK},
		{name: "POST without the CSRF token", want: http.StatusUnauthorized},
		{name: "POST with a wrong CSRF token", hdr: []string{CSRFHeader, "nope"}, want: http.StatusUnauthorized},
		{name: "POST from another site", hdr: []string{CSRFHeader, csrf, "Origin", "https://evil.example"}, want: http.StatusUnauthorized},
		{name: "POST marked cross-site", hdr: []string{CSRFHeader, csrf, "Sec-Fetch-Site", "cross-site"}, want: http.StatusUnauthorized},
		{name: "POST with the CSRF token", hdr: []string{CSRFHeader, csrf, "Origin", s.srv.URL}, want: http.StatusOK},
	}
	for _, tt := range tests {
		method, target := "POST", api
		if strings.HasPrefix(tt.name, "GET") {
			method, target = "GET", s.srv.URL+"/admin/api/webhooks"
		}
		resp, body := send(t, c, method, target, nil, tt.hdr...)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d\n%s", tt.name, resp.StatusCode, tt.want, body)
		}
	}
	// The page's own forms need the token too.
	resp, body := send(t, c, "POST", s.srv.URL+"/admin/ui/webhooks/2/deactivate", url.Values{})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "This form has expired") {
		t.Fatalf("form without csrf: %d\n%s", resp.StatusCode, body)
	}
	resp, _ = send(t, c, "POST", s.srv.URL+"/admin/ui/webhooks/2/deactivate", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("form with csrf: %d", resp.StatusCode)
	}
	_, body = send(t, c, "GET", s.srv.URL+"/admin/ui/webhooks/2", nil)
	if !strings.Contains(body, "Webhook 2 is deactivated") {
		t.Fatalf("no confirmation after deactivating:\n%s", body)
	}
	// Without a session, a form post goes to sign-in.
	resp, _ = send(t, noRedirect(nil), "POST", s.srv.URL+"/admin/ui/webhooks/2/reactivate", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/?expired=1" {
		t.Fatalf("form without a session: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	s := newStack(t, false)
	start := time.Now()
	now := start
	s.ui.now = func() time.Time { return now }
	c, _ := signIn(t, s)
	page := func() string {
		_, body := send(t, c, "GET", s.srv.URL+"/admin/", nil)
		return body
	}
	now = start.Add(SessionIdle - time.Minute)
	if strings.Contains(page(), `action="/admin/ui/signin"`) {
		t.Fatal("session ended before its idle time")
	}
	now = now.Add(SessionIdle - time.Minute) // idle time counts from the last request
	if strings.Contains(page(), `action="/admin/ui/signin"`) {
		t.Fatal("a request did not extend the session")
	}
	now = now.Add(SessionIdle + time.Second)
	if !strings.Contains(page(), `action="/admin/ui/signin"`) {
		t.Fatal("session outlived its idle time")
	}
	resp, _ := send(t, c, "GET", s.srv.URL+"/admin/api/stats", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("API with an expired session: %d", resp.StatusCode)
	}
}

func TestPages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		contract bool
		path     string
		want     []string
	}{
		{"overview", true, "/admin/", []string{`id="health-cards"`, "Uniswap", "Degraded", "Failing", "#21874310", "Queue depth", "Succeeded"}},
		{"overview without health", false, "/admin/", []string{"The health API is not available in this govgate build yet", "Uniswap", "No data"}},
		{"overview fragment", true, "/admin/?partial=live", []string{`id="health-cards"`}},
		{"webhooks", false, "/admin/ui/webhooks", []string{"hooks.example.org/govgate/uniswap", "Deactivated", "the receiver answered 410 Gone", "100%", "0%"}},
		{"webhook search", false, "/admin/ui/webhooks?search=discord", []string{"discord-bridge", "Failures in a row"}},
		{"webhook search empty", false, "/admin/ui/webhooks?search=nothing-like-this", []string{"No webhook matches"}},
		{"webhook detail", true, "/admin/ui/webhooks/3", []string{"Attempt log", "upstream busy, retry later", "503", "Replay", "The chain is empty"}},
		{"webhook detail without chains", false, "/admin/ui/webhooks/3", []string{"not available in this govgate build yet"}},
		{"missing webhook", false, "/admin/ui/webhooks/999", []string{"There is no webhook 999"}},
		{"plugins", true, "/admin/ui/plugins", []string{"type-filter", "slack-format", "Global chain", "Run the chain", "Sample: proposal.created",
			"Sample: proposal.active", "Sample: proposal.ending_soon", "Sample: proposal.succeeded", "Sample: proposal.defeated", "Sample: proposal.expired", "secondsLeft"}},
		{"plugins without API", false, "/admin/ui/plugins", []string{"Plugin management is not available in this govgate build yet"}},
		{"notifications", false, "/admin/ui/notifications", []string{"ntf_05", "proposal.executed", "Send a test notification",
			`<option value="proposal.active">`, `<option value="proposal.ending_soon">`, `<option value="proposal.succeeded">`, `<option value="proposal.defeated">`, `<option value="proposal.expired">`}},
		{"notifications filtered", false, "/admin/ui/notifications?dao=ens&type=proposal.queued", []string{"ntf_03"}},
		{"unknown page", false, "/admin/ui/nope", []string{"Page not found"}},
	}
	stacks := map[bool]*stack{true: newStack(t, true), false: newStack(t, false)}
	clients := map[bool]*http.Client{}
	for k, s := range stacks {
		s.seed(t)
		clients[k], _ = signIn(t, s)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, body := send(t, clients[tt.contract], "GET", stacks[tt.contract].srv.URL+tt.path, nil)
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: no %q in\n%s", tt.path, w, body)
				}
			}
			if strings.Contains(tt.name, "filtered") && strings.Contains(body, "ntf_05") {
				t.Errorf("filter by DAO and type kept ntf_05")
			}
		})
	}
	// A fragment without a session is a 401 the page's script understands.
	resp, _ := send(t, noRedirect(nil), "GET", stacks[false].srv.URL+"/admin/ui/notifications?partial=live", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("fragment without a session: %d", resp.StatusCode)
	}
	// Static files are served with a cache lifetime.
	resp, body := send(t, noRedirect(nil), "GET", stacks[false].srv.URL+"/admin/static/app.css", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "prefers-color-scheme: dark") || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age") {
		t.Fatalf("app.css: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestFormActions(t *testing.T) {
	t.Parallel()
	s := newStack(t, true)
	s.seed(t)
	c, csrf := signIn(t, s)
	post := func(path string, form url.Values) string {
		t.Helper()
		form.Set("csrf", csrf)
		resp, _ := send(t, c, "POST", s.srv.URL+path, form)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
		_, body := send(t, c, "GET", s.srv.URL+resp.Header.Get("Location"), nil)
		return body
	}
	tests := []struct {
		name, path string
		form       url.Values
		want       string
	}{
		{"replay a failed delivery", "/admin/ui/deliveries/3/replay", url.Values{"back": {"/admin/ui/webhooks/1"}}, "is queued again"},
		{"replay a deactivated webhook's delivery", "/admin/ui/deliveries/4/replay", url.Values{}, "reactivate it before replaying"},
		{"send a notification", "/admin/ui/notifications", url.Values{"dao": {"ens"}, "type": {"test"}, "data": {`{"hello":"world"}`}, "id": {"ntf_form"}}, "Notification ntf_form is stored"},
		{"send it again", "/admin/ui/notifications", url.Values{"dao": {"ens"}, "type": {"test"}, "data": {`{"hello":"world"}`}, "id": {"ntf_form"}}, "already existed"},
		{"send bad JSON", "/admin/ui/notifications", url.Values{"dao": {"ens"}, "type": {"test"}, "data": {`{nope`}}, "not valid JSON"},
		{"send to an unknown DAO", "/admin/ui/notifications", url.Values{"dao": {"nope"}, "type": {"test"}, "data": {`{}`}}, "is not configured"},
		{"disable a plugin", "/admin/ui/plugins/slack-format/disable", url.Values{}, "Plugin slack-format is disabled."},
		{"reactivate a webhook", "/admin/ui/webhooks/4/reactivate", url.Values{}, "Webhook 4 is active again"},
		{"open redirect refused", "/admin/ui/webhooks/4/deactivate", url.Values{"back": {"//evil.example/x"}}, "Webhook #4"},
	}
	for _, tt := range tests {
		if body := post(tt.path, tt.form); !strings.Contains(body, tt.want) {
			t.Errorf("%s: no %q in\n%s", tt.name, tt.want, body)
		}
	}
}

func TestLocalPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"/admin/ui/webhooks?state=active", "/admin/ui/webhooks?state=active"},
		{"", "/admin/"},
		{"//evil.example/admin/", "/admin/"},
		{"https://evil.example/admin/", "/admin/"},
		{"/admin/\\evil", "/admin/"},
		{"/other", "/admin/"},
	}
	for _, tt := range tests {
		if got := localPath(tt.in, "/admin/"); got != tt.want {
			t.Errorf("localPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
