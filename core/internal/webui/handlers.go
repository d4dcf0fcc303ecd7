package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/govgate/govgate/core"
)

// page is what every template gets.
type page struct {
	Title    string
	Nav      string // the navigation entry to mark current
	SignedIn bool
	CSRF     string
	Flash    *flash
	Data     any
}

func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if s := u.session(r); s != nil {
		p.SignedIn, p.CSRF = true, s.csrf
		if p.Flash == nil && r.URL.Query().Get("partial") == "" {
			p.Flash = u.sessions.takeFlash(s)
		}
	}
	t := u.pages[name]
	tmpl := "layout"
	if part := r.URL.Query().Get("partial"); part != "" {
		if t.Lookup("live") == nil {
			http.Error(w, "no such partial", http.StatusNotFound)
			return
		}
		tmpl = "live"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, p); err != nil {
		u.log.Error("admin page: render", "page", name, "err", err)
		http.Error(w, "The page could not be rendered; the govgate log has the details.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

type errorData struct{ Heading, Text string }

func (u *UI) renderError(w http.ResponseWriter, r *http.Request, status int, heading, text string) {
	u.render(w, r, status, "error", page{Title: heading, Data: errorData{heading, text}})
}

// signedIn wraps a page that needs a session: without one, the browser is
// sent to the sign-in form and back here afterwards.
func (u *UI) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := u.session(r)
		if s == nil {
			if r.URL.Query().Get("partial") != "" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/admin/?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, s)
	}
}

// changing wraps a form post: it needs a session and the session's CSRF
// token (form field csrf or the X-CSRF-Token header).
func (u *UI) changing(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxUpload+1<<20)
		s := u.session(r)
		if s == nil {
			http.Redirect(w, r, "/admin/?expired=1", http.StatusSeeOther)
			return
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				u.renderError(w, r, http.StatusRequestEntityTooLarge, "Upload too large", fmt.Sprintf("The admin page accepts files up to %d MiB.", maxUpload>>20))
				return
			}
			u.renderError(w, r, http.StatusBadRequest, "Bad form", "The form could not be read. Reload the page and try again.")
			return
		}
		token := r.PostFormValue(csrfField)
		if token == "" {
			token = r.Header.Get(CSRFHeader)
		}
		if !sameOrigin(r) || !tokensEqual(token, s.csrf) {
			u.log.Warn("admin page: refused a form without a valid CSRF token", "path", r.URL.Path, "ip", clientIP(r))
			u.renderError(w, r, http.StatusForbidden, "This form has expired", "The page was opened before your current session started. Reload the page and try again.")
			return
		}
		h(w, r, s)
	}
}

// done ends a form post: a one-time message and a redirect (post, redirect, get).
func (u *UI) done(w http.ResponseWriter, r *http.Request, s *session, back string, err error, what, okText string) {
	if err != nil {
		u.sessions.setFlash(s, &flash{Kind: "error", Text: userMessage(err, what)})
	} else {
		u.sessions.setFlash(s, &flash{Kind: "ok", Text: okText})
	}
	http.Redirect(w, r, localPath(r.PostFormValue("back"), back), http.StatusSeeOther)
}

// localPath returns p when it is a path of the admin page, else def: a
// redirect target from a form or query must not leave the site.
func localPath(p, def string) string {
	if !strings.HasPrefix(p, "/admin/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n") {
		return def
	}
	if u, err := url.Parse(p); err != nil || u.Host != "" || u.Scheme != "" {
		return def
	}
	return p
}

type signinData struct {
	Next     string
	Error    string
	Info     string
	Disabled bool
}

func (u *UI) renderSignin(w http.ResponseWriter, r *http.Request, status int, d signinData) {
	d.Disabled = u.cfg.Token == ""
	u.render(w, r, status, "signin", page{Title: "Sign in", Data: d})
}

func (u *UI) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	next := localPath(r.PostFormValue("next"), "/admin/")
	d := signinData{Next: next}
	switch {
	case !sameOrigin(r):
		d.Error = "The sign-in form was sent from another site. Open the admin page directly and sign in there."
		u.renderSignin(w, r, http.StatusForbidden, d)
	case u.cfg.Token == "":
		u.renderSignin(w, r, http.StatusServiceUnavailable, d)
	case !u.signins.allow(clientIP(r), u.now()):
		d.Error = "Too many sign-in attempts from your address. Wait a minute, then try again."
		u.log.Warn("admin page: sign-in rate limited", "ip", clientIP(r))
		u.renderSignin(w, r, http.StatusTooManyRequests, d)
	case !core.TokenMatches(strings.TrimSpace(r.PostFormValue("token")), u.cfg.Token):
		d.Error = "That admin token is not right. Paste the value of GOVGATE_ADMIN_TOKEN from the server's environment."
		u.log.Warn("admin page: sign-in with a wrong token", "ip", clientIP(r))
		u.renderSignin(w, r, http.StatusUnauthorized, d)
	default:
		if old, err := r.Cookie(CookieName); err == nil {
			u.sessions.delete(old.Value) // a new session id on every sign-in
		}
		id, _ := u.sessions.create()
		u.setCookie(w, r, id, 0)
		u.log.Info("admin page: signed in", "ip", clientIP(r))
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

func (u *UI) signOut(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(CookieName)
	if err == nil {
		s := u.sessions.get(c.Value)
		if s != nil && (!sameOrigin(r) || !tokensEqual(r.PostFormValue(csrfField), s.csrf)) {
			u.renderError(w, r, http.StatusForbidden, "This form has expired", "Reload the page and sign out again.")
			return
		}
		u.sessions.delete(c.Value)
	}
	u.setCookie(w, r, "", -1)
	http.Redirect(w, r, "/admin/?signedout=1", http.StatusSeeOther)
}

// prettyJSON indents raw JSON for display; invalid JSON comes back as is.
func prettyJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

func readAllLimited(r io.Reader, n int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, n+1))
	if err == nil && int64(len(b)) > n {
		return nil, fmt.Errorf("larger than %d bytes", n)
	}
	return b, err
}
