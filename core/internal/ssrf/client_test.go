package ssrf_test

import (
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/ssrf"
)

// newTLSServer starts an HTTPS server on 127.0.0.1 that offers HTTP/2, and
// counts the requests it serves.
func newTLSServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes the client aborts on purpose
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &hits
}

// caFile writes the server's certificate to a PEM file for ClientOptions.CAFile.
func caFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ca.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func newClient(t *testing.T, opts ssrf.ClientOptions) *http.Client {
	t.Helper()
	c, err := ssrf.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func ok(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }

func TestClientRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv, hits := newTLSServer(t, ok)
	c := newClient(t, ssrf.ClientOptions{CAFile: caFile(t, srv)})

	resp, err := c.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s succeeded with status %d, want a refused dial", srv.URL, resp.StatusCode)
	}
	if !errors.Is(err, ssrf.ErrForbiddenAddress) {
		t.Fatalf("GET %s: %v, want an error wrapping ErrForbiddenAddress", srv.URL, err)
	}
	t.Log(err)
	if hits.Load() != 0 {
		t.Error("the server was reached")
	}
}

// TestClientRefusesNameOfLoopback dials "localhost", a name ForbiddenHost
// would have caught at registration, to show that the dialer checks the
// resolved address on its own.
func TestClientRefusesNameOfLoopback(t *testing.T) {
	t.Parallel()
	srv, hits := newTLSServer(t, ok)
	if addrs, err := net.DefaultResolver.LookupHost(t.Context(), "localhost"); err != nil || len(addrs) == 0 {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := newClient(t, ssrf.ClientOptions{CAFile: caFile(t, srv)})

	resp, err := c.Get("https://localhost:" + port + "/")
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET https://localhost succeeded, want a refused dial")
	}
	if !errors.Is(err, ssrf.ErrForbiddenAddress) {
		t.Fatalf("GET https://localhost: %v, want an error wrapping ErrForbiddenAddress", err)
	}
	if hits.Load() != 0 {
		t.Error("the server was reached")
	}
}

func TestClientAllowPrivateWithCAFile(t *testing.T) {
	t.Parallel()
	srv, hits := newTLSServer(t, ok)
	c := newClient(t, ssrf.ClientOptions{AllowPrivate: true, CAFile: caFile(t, srv)})

	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" || hits.Load() != 1 {
		t.Fatalf("status %d, body %q, hits %d; want 200 ok 1", resp.StatusCode, body, hits.Load())
	}
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2", resp.Proto)
	}
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("TLS state %v, want TLS 1.2 or later", resp.TLS)
	}
}

// Without the CA file the test server's certificate is not trusted: the
// file is what made the previous test succeed.
func TestClientAllowPrivateWithoutCAFile(t *testing.T) {
	t.Parallel()
	srv, _ := newTLSServer(t, ok)
	c := newClient(t, ssrf.ClientOptions{AllowPrivate: true})
	resp, err := c.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET succeeded without trusting the test CA")
	}
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Errorf("GET: %v, want a certificate verification error", err)
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	target, targetHits := newTLSServer(t, ok)
	srv, _ := newTLSServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	})
	c := newClient(t, ssrf.ClientOptions{AllowPrivate: true, CAFile: caFile(t, srv)})

	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d, want the 302 itself", resp.StatusCode)
	}
	if got := resp.Header.Get("Location"); got != target.URL+"/elsewhere" {
		t.Errorf("Location = %q", got)
	}
	if targetHits.Load() != 0 {
		t.Error("the redirect was followed")
	}
}

func TestClientTransport(t *testing.T) {
	t.Parallel()
	c := newClient(t, ssrf.ClientOptions{})
	tr, isTransport := c.Transport.(*http.Transport)
	if !isTransport {
		t.Fatalf("Transport is %T", c.Transport)
	}
	if tr.Proxy != nil {
		t.Error("Proxy is set; environment proxies would bypass the dial check")
	}
	if tr.TLSClientConfig == nil || tr.TLSClientConfig.MinVersion != tls.VersionTLS12 {
		t.Error("TLS 1.2 is not the minimum")
	}
	if tr.TLSClientConfig.RootCAs != nil {
		t.Error("RootCAs set without a CAFile; want the system pool")
	}
	if !tr.ForceAttemptHTTP2 {
		t.Error("HTTP/2 not attempted")
	}
	if c.Timeout != ssrf.DefaultTimeout || tr.MaxIdleConnsPerHost != ssrf.DefaultMaxIdleConnsPerHost {
		t.Errorf("Timeout %v, MaxIdleConnsPerHost %d; want the defaults", c.Timeout, tr.MaxIdleConnsPerHost)
	}
	c = newClient(t, ssrf.ClientOptions{Timeout: 3 * time.Second, MaxIdleConnsPerHost: 9})
	if tr := c.Transport.(*http.Transport); c.Timeout != 3*time.Second || tr.MaxIdleConnsPerHost != 9 {
		t.Errorf("Timeout %v, MaxIdleConnsPerHost %d; want 3s and 9", c.Timeout, tr.MaxIdleConnsPerHost)
	}
}

func TestNewClientErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts ssrf.ClientOptions
		is   error
	}{
		{"negative timeout", ssrf.ClientOptions{Timeout: -time.Second}, nil},
		{"negative idle conns", ssrf.ClientOptions{MaxIdleConnsPerHost: -1}, nil},
		{"missing CA file", ssrf.ClientOptions{CAFile: filepath.Join(dir, "missing.pem")}, fs.ErrNotExist},
		{"CA file without certificates", ssrf.ClientOptions{CAFile: notPEM}, nil},
	}
	for _, tt := range tests {
		c, err := ssrf.NewClient(tt.opts)
		if err == nil {
			t.Errorf("%s: NewClient = %v, nil; want an error", tt.name, c)
			continue
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%s: %v, want it to wrap %v", tt.name, err, tt.is)
		}
	}
}
