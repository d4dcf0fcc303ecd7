package chain

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Defaults applied by ChainConfig.WithDefaults to fields left at zero.
const (
	DefaultRequestTimeout      = 10 * time.Second
	DefaultFailuresToOpen      = 5
	DefaultOpenTimeout         = 30 * time.Second
	DefaultHalfOpenMaxRequests = 1
	DefaultMaxConcurrency      = 8
	DefaultMaxAddresses        = 1000
	DefaultRateLimitRetries    = 4
)

// BreakerConfig tunes the circuit breaker kept for each upstream.
type BreakerConfig struct {
	// FailuresToOpen is how many consecutive failed calls open the breaker.
	FailuresToOpen uint32 `yaml:"failures_to_open" json:"failuresToOpen"`
	// OpenTimeout is how long an open breaker rejects calls before it lets
	// trial calls through (half-open).
	OpenTimeout time.Duration `yaml:"open_timeout" json:"openTimeout"`
	// HalfOpenMaxRequests is how many trial calls a half-open breaker admits;
	// that many successes in a row close it again.
	HalfOpenMaxRequests uint32 `yaml:"half_open_max_requests" json:"halfOpenMaxRequests"`
}

// ChainConfig describes one EVM chain and the JSON-RPC upstreams that serve it.
// It is part of govgate's configuration file.
type ChainConfig struct {
	// ID is the EIP-155 chain id; the gateway does not check it against the
	// upstream (the indexer does, once, before it indexes).
	ID uint64 `yaml:"id" json:"id"`
	// Name is the chain's name in logs, health and the admin page.
	Name string `yaml:"name" json:"name"`
	// RPC lists JSON-RPC endpoints (http, https, ws, wss) in order of
	// preference. They may carry API keys in the path or query: those never
	// appear in logs, errors or Status.
	RPC []string `yaml:"rpc" json:"-"`
	// Confirmations is how many blocks below the head the indexer stops: a
	// block is indexed (and notified) once that many blocks sit on top of it.
	Confirmations uint64 `yaml:"confirmations" json:"confirmations"`
	// RequestTimeout bounds each call to one upstream; a failover to the next
	// upstream gets a fresh timeout.
	RequestTimeout time.Duration `yaml:"request_timeout" json:"requestTimeout"`
	// Breaker tunes the circuit breaker kept per upstream (sony/gobreaker).
	Breaker BreakerConfig `yaml:"breaker" json:"breaker"`
	// MaxConcurrency caps the calls in flight to the chain's upstreams at
	// once, whoever makes them (the indexer's shared reads, its catch-ups,
	// the health checks).
	MaxConcurrency int `yaml:"max_concurrency" json:"maxConcurrency"`
	// RequestsPerSecond is the provider's rate limit, honoured before each
	// call (0: none); Burst is how many calls may go at once above it.
	RequestsPerSecond float64 `yaml:"requests_per_second" json:"requestsPerSecond"`
	Burst             int     `yaml:"burst" json:"burst"`
	// MaxAddressesPerRequest splits an eth_getLogs over many contracts into
	// requests of at most this many addresses: providers cap the list.
	MaxAddressesPerRequest int `yaml:"max_addresses_per_request" json:"maxAddressesPerRequest"`
	// RateLimitRetries is how many times a call that every upstream
	// refused with a rate limit (HTTP 429, or the provider's JSON-RPC
	// equivalent) is tried again, after the Retry-After the provider asked
	// for or an exponential backoff from one second, before it fails.
	RateLimitRetries int `yaml:"rate_limit_retries" json:"rateLimitRetries"`
}

// WithDefaults returns c with zero durations and counters set to the defaults.
func (c ChainConfig) WithDefaults() ChainConfig {
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Breaker.FailuresToOpen == 0 {
		c.Breaker.FailuresToOpen = DefaultFailuresToOpen
	}
	if c.Breaker.OpenTimeout == 0 {
		c.Breaker.OpenTimeout = DefaultOpenTimeout
	}
	if c.Breaker.HalfOpenMaxRequests == 0 {
		c.Breaker.HalfOpenMaxRequests = DefaultHalfOpenMaxRequests
	}
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if c.MaxAddressesPerRequest == 0 {
		c.MaxAddressesPerRequest = DefaultMaxAddresses
	}
	if c.RequestsPerSecond > 0 && c.Burst == 0 {
		c.Burst = max(1, int(c.RequestsPerSecond))
	}
	if c.RateLimitRetries == 0 {
		c.RateLimitRetries = DefaultRateLimitRetries
	}
	return c
}

// maxConfirmations is far deeper than any chain reorganises; a larger value is
// almost certainly a typo (a block count where seconds were meant).
const maxConfirmations = 10_000

// Validate reports the first field of c that cannot work, naming it as the
// YAML file does. It expects WithDefaults to have been applied.
func (c ChainConfig) Validate() error {
	name := fmt.Sprintf("chain %d", c.ID)
	if c.Name != "" {
		name = fmt.Sprintf("chain %d (%s)", c.ID, c.Name)
	}
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", name, field, fmt.Sprintf(format, args...))
	}
	if c.ID == 0 {
		return fail("id", "must be set to the chain's EIP-155 id")
	}
	if c.Name == "" {
		return fail("name", "must not be empty")
	}
	if len(c.RPC) == 0 {
		return fail("rpc", "must list at least one JSON-RPC URL")
	}
	for i, raw := range c.RPC {
		if err := validURL(raw); err != nil {
			// The URL itself may hold a key: show only its redacted form.
			return fail(fmt.Sprintf("rpc[%d]", i), "%v (%s)", err, Redact(raw))
		}
	}
	if c.Confirmations > maxConfirmations {
		return fail("confirmations", "%d is more than %d blocks", c.Confirmations, maxConfirmations)
	}
	if c.RequestTimeout <= 0 {
		return fail("request_timeout", "must be positive")
	}
	if c.Breaker.FailuresToOpen == 0 {
		return fail("breaker.failures_to_open", "must be at least 1")
	}
	if c.Breaker.OpenTimeout <= 0 {
		return fail("breaker.open_timeout", "must be positive")
	}
	if c.Breaker.HalfOpenMaxRequests == 0 {
		return fail("breaker.half_open_max_requests", "must be at least 1")
	}
	switch {
	case c.MaxConcurrency < 1:
		return fail("max_concurrency", "must be at least 1")
	case c.RequestsPerSecond < 0:
		return fail("requests_per_second", "must not be negative (0: no limit)")
	case c.RequestsPerSecond > 0 && c.Burst < 1:
		return fail("burst", "must be at least 1")
	case c.MaxAddressesPerRequest < 1:
		return fail("max_addresses_per_request", "must be at least 1")
	case c.RateLimitRetries < 0:
		return fail("rate_limit_retries", "must not be negative")
	}
	return nil
}

func validURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	default:
		return errors.New("scheme must be http, https, ws or wss")
	}
	if u.Host == "" {
		return errors.New("has no host")
	}
	return nil
}

// Redact returns the scheme and host of a URL, dropping the user info, path,
// query and fragment where API keys live. It returns "invalid-url" for
// anything it cannot parse.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "invalid-url"
	}
	return u.Scheme + "://" + u.Host
}
