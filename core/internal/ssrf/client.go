package ssrf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// ErrForbiddenAddress is wrapped by the error of a request that the client
// from NewClient refused to dial because the address is Forbidden.
var ErrForbiddenAddress = errors.New("forbidden destination address")

// Defaults for the zero values of ClientOptions.
const (
	DefaultTimeout             = 10 * time.Second
	DefaultMaxIdleConnsPerHost = 4
)

// ClientOptions configures NewClient. The zero value is a safe client with
// the defaults above.
type ClientOptions struct {
	// AllowPrivate turns the address check off, for tests and for gateways
	// whose receivers live on a private network.
	AllowPrivate bool
	// CAFile names a PEM file of root certificates trusted in addition to
	// the system's, for receivers behind a private CA.
	CAFile string
	// Timeout bounds a whole request, from dialing to reading the last byte
	// of the response body. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxIdleConnsPerHost is how many idle connections to keep per receiver.
	// Zero means DefaultMaxIdleConnsPerHost.
	MaxIdleConnsPerHost int
}

// NewClient returns the HTTP client for webhook delivery. Unless
// AllowPrivate is set, it checks every address it dials, after DNS
// resolution and on every new connection, and refuses a Forbidden one with
// an error that wraps ErrForbiddenAddress; a name that resolves to both
// kinds of address is dialed on its allowed ones only. It follows no
// redirects (a 3xx is returned as the response), ignores proxy settings in
// the environment, and requires TLS 1.2 or later. HTTP/2 is used when the
// receiver offers it.
func NewClient(opts ClientOptions) (*http.Client, error) {
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("ssrf client: Timeout %v is negative", opts.Timeout)
	}
	if opts.MaxIdleConnsPerHost < 0 {
		return nil, fmt.Errorf("ssrf client: MaxIdleConnsPerHost %d is negative", opts.MaxIdleConnsPerHost)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	idle := opts.MaxIdleConnsPerHost
	if idle == 0 {
		idle = DefaultMaxIdleConnsPerHost
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if opts.CAFile != "" {
		pool, err := loadCAFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ssrf client: CAFile: %w", err)
		}
		tlsConfig.RootCAs = pool
	}

	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !opts.AllowPrivate {
		dialer.Control = checkDial
	}
	transport := &http.Transport{
		Proxy:                  nil, // HTTPS_PROXY would bypass the dial check
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsConfig,
		ForceAttemptHTTP2:      true, // needed with a custom dialer and TLS config
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    idle,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		// A redirect could lead anywhere, and the receiver was registered
		// at one URL: its 3xx counts as its answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// loadCAFile returns the system roots plus the certificates in file.
func loadCAFile(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // no system pool on this platform: the file alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificates in %s", file)
	}
	return pool, nil
}

// checkDial is the net.Dialer Control hook: it runs after DNS resolution
// with the literal address about to be connected, so neither a name nor a
// DNS answer that changes between registration and delivery gets past it.
func checkDial(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp4", "tcp6":
	default:
		return fmt.Errorf("network %s not allowed: %w", network, ErrForbiddenAddress)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unparsable address %q: %w", address, ErrForbiddenAddress)
	}
	if r := addrReason(ap.Addr()); r != "" {
		return fmt.Errorf("%s %s: %w", r, ap.Addr(), ErrForbiddenAddress)
	}
	return nil
}
