// Package webui serves govgate's admin page: server-rendered HTML under
// /admin/ with the templates and static files embedded by package web and a little progressive JavaScript.
// Operators sign in with the admin token and get a session cookie; every
// page reads and changes state through the admin JSON API, called
// in-process with the token, so the API stays the one place where the rules
// live. The browser's own fetch calls to /admin/api/ are let through by
// UI.Authorized, which demands the session's CSRF token on state changes.
package webui

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/govgate/govgate/web"
)

var (
	templateFS = web.Templates
	staticFS   = web.Static
)

// Config configures New.
type Config struct {
	// API is the admin JSON API (httpapi.NewAdmin's handler). The page calls
	// it in-process with an "Authorization: Bearer Token" header.
	API http.Handler
	// REST is the public REST API (httpapi.NewAPI's handler), read in-process
	// for the proposal and delegate pages and the overview's "Voting now"
	// panel. Nil: those say that this build does not offer them to the admin
	// page.
	REST http.Handler
	// Token is the admin token operators sign in with; empty disables sign-in.
	Token  string
	Logger *slog.Logger
	// SecureCookies marks the session cookie Secure even on plain HTTP: set
	// it when TLS ends at a proxy in front of govgate. Requests that arrive
	// over TLS always get a Secure cookie.
	SecureCookies bool
}

// Validate reports the first bad field of c.
func (c Config) Validate() error {
	if c.API == nil {
		return errors.New("web: Config.API is required")
	}
	return nil
}

// UI is the admin page. It is an http.Handler for /admin, /admin/,
// /admin/ui/... and /admin/static/...
type UI struct {
	cfg      Config
	log      *slog.Logger
	mux      *http.ServeMux
	pages    map[string]*template.Template
	sessions *sessions
	signins  *ipLimiter
	now      func() time.Time
	// perPage is how many proposals or delegates a page lists, and
	// detailRows how many delegators and votes the delegate page lists at
	// once; tests make them small to page.
	perPage, detailRows int
}

// Session and sign-in limits.
const (
	// SessionIdle is how long a session lives without a request.
	SessionIdle = 8 * time.Hour
	// CookieName names the session cookie.
	CookieName = "govgate_admin"
	// CSRFHeader carries the session's CSRF token on fetch calls.
	CSRFHeader = "X-CSRF-Token"
	csrfField  = "csrf"
	// maxUpload bounds a plugin module uploaded through the page's form.
	maxUpload = 32 << 20
)

// pageNames are the templates under templates/, each rendered inside layout.html.
var pageNames = []string{"signin", "overview", "proposals", "proposal", "delegates", "delegate", "daos", "webhooks", "webhook", "plugins", "notifications", "error"}

// New returns the admin page.
func New(cfg Config) (*UI, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	u := &UI{cfg: cfg, log: cfg.Logger, pages: map[string]*template.Template{}, now: time.Now, perPage: proposalsPage, detailRows: delegateRows}
	u.sessions = newSessions(SessionIdle, func() time.Time { return u.now() })
	u.signins = newIPLimiter()
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs(func() time.Time { return u.now() })).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: parse template %s: %w", name, err)
		}
		u.pages[name] = t
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("web: static files: %w", err)
	}
	files := http.StripPrefix("/admin/static/", http.FileServerFS(static))

	m := http.NewServeMux()
	m.HandleFunc("GET /admin", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/admin/", http.StatusFound)
	})
	m.HandleFunc("GET /admin/{$}", u.overview)
	m.HandleFunc("POST /admin/ui/signin", u.signIn)
	m.HandleFunc("GET /admin/ui/signin", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/admin/", http.StatusFound)
	})
	m.HandleFunc("POST /admin/ui/signout", u.signOut)
	m.HandleFunc("GET /admin/ui/proposals", u.signedIn(u.proposals))
	m.HandleFunc("GET /admin/ui/proposals/{dao}/{id}", u.signedIn(u.proposal))
	m.HandleFunc("GET /admin/ui/delegates", u.signedIn(u.delegates))
	m.HandleFunc("GET /admin/ui/delegates/{dao}/{address}", u.signedIn(u.delegate))
	m.HandleFunc("GET /admin/ui/webhooks", u.signedIn(u.webhooks))
	m.HandleFunc("GET /admin/ui/webhooks/{id}", u.signedIn(u.webhook))
	m.HandleFunc("POST /admin/ui/webhooks/{id}/{action}", u.changing(u.webhookAction))
	m.HandleFunc("POST /admin/ui/deliveries/{id}/replay", u.changing(u.replay))
	m.HandleFunc("GET /admin/ui/plugins", u.signedIn(u.plugins))
	m.HandleFunc("POST /admin/ui/plugins", u.changing(u.upload))
	m.HandleFunc("POST /admin/ui/plugins/{name}/{action}", u.changing(u.pluginAction))
	m.HandleFunc("GET /admin/ui/daos", u.signedIn(u.daos))
	m.HandleFunc("POST /admin/ui/daos", u.changing(u.saveDAO))
	m.HandleFunc("POST /admin/ui/daos/{slug}", u.changing(u.saveDAO))
	m.HandleFunc("POST /admin/ui/daos/{slug}/delete", u.changing(u.deleteDAO))
	m.HandleFunc("GET /admin/ui/notifications", u.signedIn(u.notifications))
	m.HandleFunc("POST /admin/ui/notifications", u.changing(u.sendNotification))
	m.Handle("GET /admin/static/", cacheFor(time.Hour, files))
	m.HandleFunc("/admin/", func(w http.ResponseWriter, r *http.Request) {
		u.renderError(w, r, http.StatusNotFound, "Page not found", "There is no page at "+r.URL.Path+". Use the navigation above to find your way.")
	})
	u.mux = m
	return u, nil
}

// ServeHTTP serves the admin page.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/admin/static/") {
		h.Set("Cache-Control", "no-store")
	}
	u.mux.ServeHTTP(w, r)
}

// Authorized reports whether r carries a live session cookie, and for a
// state change (any method but GET, HEAD and OPTIONS) also the session's
// CSRF token in the X-CSRF-Token header and no foreign Origin. Pass it as
// httpapi.AdminConfig.Authorized so the page's fetch calls reach the API.
func (u *UI) Authorized(r *http.Request) bool {
	s := u.session(r)
	if s == nil {
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return sameOrigin(r) && tokensEqual(r.Header.Get(CSRFHeader), s.csrf)
}

func cacheFor(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(d.Seconds())))
		h.ServeHTTP(w, r)
	})
}
