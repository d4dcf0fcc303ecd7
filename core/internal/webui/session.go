package webui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// session is one signed-in browser. Its id lives only in the cookie; the
// store keys sessions by the id's hash so a memory dump does not hand out
// live cookies.
type session struct {
	csrf     string
	lastSeen time.Time
	flash    *flash
}

// flash is a one-time message shown on the next page.
type flash struct {
	Kind string // "ok" or "error"
	Text string
}

type sessions struct {
	mu   sync.Mutex
	m    map[[32]byte]*session
	idle time.Duration
	now  func() time.Time
}

func newSessions(idle time.Duration, now func() time.Time) *sessions {
	return &sessions{m: map[[32]byte]*session{}, idle: idle, now: now}
}

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session and returns its id.
func (s *sessions) create() (string, *session) {
	id := randomToken()
	ses := &session{csrf: randomToken(), lastSeen: s.now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.m { // sweep: sign-ins are rare, sessions few
		if now.Sub(v.lastSeen) > s.idle {
			delete(s.m, k)
		}
	}
	s.m[sha256.Sum256([]byte(id))] = ses
	return id, ses
}

// get returns the live session of id and marks it used, or nil.
func (s *sessions) get(id string) *session {
	if id == "" {
		return nil
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.m[k]
	if !ok {
		return nil
	}
	now := s.now()
	if now.Sub(ses.lastSeen) > s.idle {
		delete(s.m, k)
		return nil
	}
	ses.lastSeen = now
	return ses
}

func (s *sessions) delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

func (s *sessions) setFlash(ses *session, f *flash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ses.flash = f
}

func (s *sessions) takeFlash(ses *session) *flash {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := ses.flash
	ses.flash = nil
	return f
}

// session returns r's live session, or nil.
func (u *UI) session(r *http.Request) *session {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	return u.sessions.get(c.Value)
}

func (u *UI) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: value, Path: "/admin", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: u.cfg.SecureCookies || r.TLS != nil,
	})
}

func tokensEqual(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// sameOrigin refuses a request that a browser marks as coming from another
// site. Requests without these headers (curl, old browsers) pass: the CSRF
// token is the real check.
func sameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	ou, err := url.Parse(o)
	return err == nil && ou.Host == r.Host
}

// ipLimiter limits sign-in attempts per client IP: a burst of 10, then one
// every 6 seconds.
type ipLimiter struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

const (
	signinBurst = 10
	signinEvery = 6 * time.Second
)

func newIPLimiter() *ipLimiter { return &ipLimiter{m: map[string]*rate.Limiter{}} }

func (l *ipLimiter) allow(ip string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[ip]
	if !ok {
		if len(l.m) >= 10000 { // bound memory: forget the idle ones
			for k, v := range l.m {
				if v.TokensAt(now) >= signinBurst {
					delete(l.m, k)
				}
			}
		}
		lim = rate.NewLimiter(rate.Every(signinEvery), signinBurst)
		l.m[ip] = lim
	}
	return lim.AllowN(now, 1)
}

// clientIP is the peer address: no proxy is trusted.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
