// Package chain is govgate's gateway to EVM chains: JSON-RPC calls through
// go-ethereum's rpc client, with a timeout on every call, a circuit breaker
// per upstream (sony/gobreaker) and failover to the next upstream of the
// chain when one fails or its breaker is open. Status reports the breakers
// for health checks, metrics and the admin API, with every URL cut down to
// its scheme and host so that API keys never leave the process.
package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/time/rate"
)

// ErrNoUpstream is wrapped by every error of a call that no upstream
// answered: all failed, or their breakers were open.
var ErrNoUpstream = errors.New("no upstream answered")

// errCallerGone marks a call abandoned because the caller's context ended:
// it says nothing about the upstream, so the breaker does not count it.
var errCallerGone = errors.New("caller gave up")

// Options are the optional collaborators of a Gateway.
type Options struct {
	Logger *slog.Logger
	// Metrics, when set, counts calls and their latency.
	Metrics *Metrics
	// HTTPClient is used for http(s) upstreams; nil means a pooled client
	// with dial and TLS timeouts (per-call timeouts come from RequestTimeout).
	HTTPClient *http.Client
}

// Gateway calls one chain's JSON-RPC upstreams. It is safe for concurrent use.
type Gateway struct {
	cfg     ChainConfig
	ups     []*upstream
	log     *slog.Logger
	metrics *Metrics
	// slots caps the calls in flight (MaxConcurrency); limiter paces them
	// (RequestsPerSecond), nil without a limit.
	slots   chan struct{}
	limiter *rate.Limiter
}

// upstream is one JSON-RPC endpoint and its breaker. raw may hold a secret
// and is used only to dial.
type upstream struct {
	index int
	raw   string
	url   string // redacted: scheme and host
	cb    *gobreaker.CircuitBreaker[struct{}]
	hc    *http.Client

	dialMu sync.Mutex
	client *rpc.Client
	eth    *ethclient.Client

	mu            sync.Mutex
	pausedUntil   time.Time // a Retry-After the provider asked for
	consecutive   uint32
	total         uint64
	lastErr       string
	lastErrAt     time.Time
	lastSuccessAt time.Time
}

// New returns a gateway for cfg, after applying defaults and validating it.
// It does not connect: upstreams are dialled on first use.
func New(cfg ChainConfig, opts Options) (*Gateway, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, log: opts.Logger, metrics: opts.Metrics, slots: make(chan struct{}, cfg.MaxConcurrency)}
	if cfg.RequestsPerSecond > 0 {
		g.limiter = rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), cfg.Burst)
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	g.log = g.log.With("chain", cfg.ID)
	hc := opts.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	for i, raw := range cfg.RPC {
		u := &upstream{index: i, raw: raw, url: Redact(raw)}
		// Each upstream's transport notes the Retry-After of its 429s,
		// which go-ethereum's HTTPError does not carry.
		u.hc = &http.Client{Timeout: hc.Timeout, Jar: hc.Jar, CheckRedirect: hc.CheckRedirect, Transport: retryAfterTransport{base: hc.Transport, u: u}}
		u.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
			Name:        fmt.Sprintf("chain-%d-upstream-%d", cfg.ID, i),
			MaxRequests: cfg.Breaker.HalfOpenMaxRequests,
			Timeout:     cfg.Breaker.OpenTimeout,
			ReadyToTrip: func(c gobreaker.Counts) bool {
				return c.ConsecutiveFailures >= cfg.Breaker.FailuresToOpen
			},
			IsSuccessful: func(err error) bool { return !isUpstreamFailure(err) },
			IsExcluded:   func(err error) bool { return errors.Is(err, errCallerGone) },
			OnStateChange: func(_ string, from, to gobreaker.State) {
				g.log.Warn("rpc upstream breaker", "upstream", u.url, "index", u.index, "from", from.String(), "to", to.String())
			},
		})
		g.ups = append(g.ups, u)
	}
	return g, nil
}

func defaultHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // bounded by each call's context
	}}
}

// Config returns the configuration in force, defaults applied.
func (g *Gateway) Config() ChainConfig { return g.cfg }

// Close drops the upstream connections. The gateway may be used again: it
// redials on the next call.
func (g *Gateway) Close() {
	for _, u := range g.ups {
		u.dialMu.Lock()
		if u.client != nil {
			u.client.Close()
			u.client, u.eth = nil, nil
		}
		u.dialMu.Unlock()
	}
}

// ChainID asks the upstreams for their chain id (eth_chainId).
func (g *Gateway) ChainID(ctx context.Context) (uint64, error) {
	var id *big.Int
	err := g.call(ctx, "eth_chainId", func(ctx context.Context, c *ethclient.Client) (err error) {
		id, err = c.ChainID(ctx)
		return err
	})
	if err != nil {
		return 0, err
	}
	if !id.IsUint64() {
		return 0, fmt.Errorf("eth_chainId: %s does not fit 64 bits", id)
	}
	return id.Uint64(), nil
}

// BlockNumber returns the number of the latest block (eth_blockNumber).
func (g *Gateway) BlockNumber(ctx context.Context) (uint64, error) {
	var n uint64
	err := g.call(ctx, "eth_blockNumber", func(ctx context.Context, c *ethclient.Client) (err error) {
		n, err = c.BlockNumber(ctx)
		return err
	})
	return n, err
}

// HeaderByNumber returns the header of block number, or of the latest block
// when number is nil. It returns ethereum.NotFound for a block the upstream
// does not have. Beware that types.Header.Hash recomputes the hash from the
// fields go-ethereum knows, which is wrong on chains with other header
// formats: use BlockStamp where the hash matters.
func (g *Gateway) HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error) {
	var h *types.Header
	err := g.call(ctx, "eth_getBlockByNumber", func(ctx context.Context, c *ethclient.Client) (err error) {
		h, err = c.HeaderByNumber(ctx, number)
		return err
	})
	return h, err
}

// BlockStamp returns the number, hash (as the upstream reports it) and
// timestamp of block number, or of the latest block when number is nil. It
// returns ethereum.NotFound for a block the upstream does not have.
func (g *Gateway) BlockStamp(ctx context.Context, number *big.Int) (num uint64, hash common.Hash, timestamp uint64, err error) {
	num, hash, _, timestamp, err = g.BlockHeader(ctx, number)
	return num, hash, timestamp, err
}

// BlockHeader is BlockStamp with the parent's hash, which lets the
// indexer see that a new block extends the one it indexed last without
// reading that one again.
func (g *Gateway) BlockHeader(ctx context.Context, number *big.Int) (num uint64, hash, parent common.Hash, timestamp uint64, err error) {
	tag := "latest"
	if number != nil {
		tag = hexutil.EncodeBig(number)
	}
	var raw json.RawMessage
	err = g.call(ctx, "eth_getBlockByNumber", func(ctx context.Context, c *ethclient.Client) error {
		return c.Client().CallContext(ctx, &raw, "eth_getBlockByNumber", tag, false)
	})
	if err != nil {
		return 0, common.Hash{}, common.Hash{}, 0, err
	}
	if len(raw) == 0 || string(raw) == "null" {
		return 0, common.Hash{}, common.Hash{}, 0, ethereum.NotFound
	}
	var b struct {
		Number     *hexutil.Uint64 `json:"number"`
		Hash       *common.Hash    `json:"hash"`
		ParentHash common.Hash     `json:"parentHash"`
		Timestamp  hexutil.Uint64  `json:"timestamp"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return 0, common.Hash{}, common.Hash{}, 0, fmt.Errorf("eth_getBlockByNumber: decode block: %w", err)
	}
	if b.Number == nil || b.Hash == nil {
		return 0, common.Hash{}, common.Hash{}, 0, errors.New("eth_getBlockByNumber: block without number or hash")
	}
	return uint64(*b.Number), *b.Hash, b.ParentHash, uint64(b.Timestamp), nil
}

// CodeAt returns the code of a contract at block number (latest for nil):
// empty for an address that holds no contract.
func (g *Gateway) CodeAt(ctx context.Context, addr common.Address, number *big.Int) ([]byte, error) {
	var code []byte
	err := g.call(ctx, "eth_getCode", func(ctx context.Context, c *ethclient.Client) (err error) {
		code, err = c.CodeAt(ctx, addr, number)
		return err
	})
	return code, err
}

// FilterLogs runs eth_getLogs. A provider's refusal of a too wide range comes
// back as the provider's error, without failover: the caller narrows the range.
func (g *Gateway) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	var logs []types.Log
	err := g.call(ctx, "eth_getLogs", func(ctx context.Context, c *ethclient.Client) (err error) {
		logs, err = c.FilterLogs(ctx, q)
		return err
	})
	return logs, err
}

// CallContract runs eth_call of msg at block number (the latest block for
// nil). A revert comes back as the node's error, without failover.
func (g *Gateway) CallContract(ctx context.Context, msg ethereum.CallMsg, number *big.Int) ([]byte, error) {
	var out []byte
	err := g.call(ctx, "eth_call", func(ctx context.Context, c *ethclient.Client) (err error) {
		out, err = c.CallContract(ctx, msg, number)
		return err
	})
	return out, err
}

// call runs fn on the first upstream that answers (callOnce), within the
// chain's concurrency cap and rate limit. When every upstream refused it
// with a rate limit, it waits for the Retry-After the provider asked for
// (or an exponential backoff from one second, with jitter) and tries
// again, RateLimitRetries times.
func (g *Gateway) call(ctx context.Context, method string, fn func(context.Context, *ethclient.Client) error) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = time.Second, 30*time.Second
	for attempt := 0; ; attempt++ {
		err := g.callOnce(ctx, method, fn)
		if err == nil || !errors.Is(err, ErrRateLimited) || attempt >= g.cfg.RateLimitRetries {
			return err
		}
		wait := bo.NextBackOff()
		if until := g.pausedUntil(); time.Until(until) > wait {
			wait = time.Until(until)
		}
		g.metrics.rateLimited(g.cfg.ID, wait)
		g.log.Debug("rpc rate limited, waiting", "method", method, "wait", wait, "attempt", attempt+1)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", method, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// ErrRateLimited is wrapped by the error of a call that every upstream
// refused with a rate limit.
var ErrRateLimited = errors.New("rate limited by every upstream")

// acquire waits for a call slot and the rate limiter; release gives the
// slot back.
func (g *Gateway) acquire(ctx context.Context) (release func(), err error) {
	start := time.Now()
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if g.limiter != nil {
		if err := g.limiter.Wait(ctx); err != nil {
			<-g.slots
			return nil, err
		}
	}
	g.metrics.waited(g.cfg.ID, time.Since(start), len(g.slots))
	return func() {
		<-g.slots
		g.metrics.waited(g.cfg.ID, 0, len(g.slots))
	}, nil
}

// pausedUntil is the earliest time an upstream asked to be left alone
// until; zero when none did.
func (g *Gateway) pausedUntil() time.Time {
	var t time.Time
	for _, u := range g.ups {
		u.mu.Lock()
		if p := u.pausedUntil; p.After(time.Now()) && (t.IsZero() || p.Before(t)) {
			t = p
		}
		u.mu.Unlock()
	}
	return t
}

// callOnce runs fn on the first upstream that answers, in configured order,
// skipping those whose breaker is open or that asked to be left alone
// (Retry-After). An answer that is an error about the request itself (a
// JSON-RPC error object, "not found") is returned at once: another
// upstream would say the same.
func (g *Gateway) callOnce(ctx context.Context, method string, fn func(context.Context, *ethclient.Client) error) error {
	release, err := g.acquire(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer release()
	var lastErr error
	tried, skipped, limited := 0, 0, 0
	for _, u := range g.ups {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if u.paused() {
			skipped++
			limited++
			g.metrics.observe(g.cfg.ID, u, method, "skipped", 0)
			if lastErr == nil {
				lastErr = &UpstreamError{URL: u.url, Method: method, msg: "waiting for its Retry-After"}
			}
			continue
		}
		start := time.Now()
		_, err := u.cb.Execute(func() (struct{}, error) {
			cctx, cancel := context.WithTimeout(ctx, g.cfg.RequestTimeout)
			defer cancel()
			c, err := u.dial(cctx)
			if err == nil {
				err = fn(cctx, c)
			}
			if err != nil && ctx.Err() != nil {
				// The caller's own deadline or cancellation: not the upstream's fault.
				return struct{}{}, fmt.Errorf("%w: %w", errCallerGone, err)
			}
			return struct{}{}, err
		})
		if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
			skipped++
			g.metrics.observe(g.cfg.ID, u, method, "skipped", 0)
			if lastErr == nil {
				lastErr = &UpstreamError{URL: u.url, Method: method, msg: "breaker " + u.cb.State().String()}
			}
			continue
		}
		tried++
		elapsed := time.Since(start)
		switch {
		case err == nil:
			u.success()
			g.metrics.observe(g.cfg.ID, u, method, "ok", elapsed)
			return nil
		case errors.Is(err, errCallerGone):
			g.metrics.observe(g.cfg.ID, u, method, "canceled", elapsed)
			return fmt.Errorf("%s: %w", method, ctx.Err())
		case !isUpstreamFailure(err):
			// The upstream is fine; it refused this request.
			u.success()
			g.metrics.observe(g.cfg.ID, u, method, "rejected", elapsed)
			return u.wrap(method, err)
		default:
			werr := u.wrap(method, err)
			u.failure(werr)
			outcome := "error"
			if isRateLimitError(err) {
				outcome = "rate_limited"
				limited++
			}
			g.metrics.observe(g.cfg.ID, u, method, outcome, elapsed)
			g.log.Debug("rpc upstream failed", "upstream", u.url, "method", method, "err", werr)
			lastErr = werr
		}
	}
	if limited > 0 && limited == tried+skipped {
		return fmt.Errorf("%s: %w: %w", method, ErrRateLimited, lastErr)
	}
	return fmt.Errorf("%s: %w (%d tried, %d skipped with breaker open or rate limited): %w", method, ErrNoUpstream, tried, skipped, lastErr)
}

// isRateLimitError recognises an upstream's "slow down": HTTP 429 or a
// rate-limit JSON-RPC error.
func isRateLimitError(err error) bool {
	var httpErr rpc.HTTPError
	if errors.As(err, &httpErr) && httpErr.StatusCode == http.StatusTooManyRequests {
		return true
	}
	var rpcErr rpc.Error
	return errors.As(err, &rpcErr) && isRateLimit(rpcErr.ErrorCode(), rpcErr.Error())
}

// paused reports whether the upstream asked to be left alone for now.
func (u *upstream) paused() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.pausedUntil.After(time.Now())
}

// retryAfterTransport records the Retry-After of an upstream's 429 and
// 503 answers.
type retryAfterTransport struct {
	base http.RoundTripper
	u    *upstream
}

// maxRetryAfter bounds a provider's Retry-After: a longer one is a
// misconfiguration, and the breaker handles outages.
const maxRetryAfter = 2 * time.Minute

func (t retryAfterTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return resp, err
	}
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		t.u.mu.Lock()
		t.u.pausedUntil = time.Now().Add(min(d, maxRetryAfter))
		t.u.mu.Unlock()
	}
	return resp, nil
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

func (u *upstream) dial(ctx context.Context) (*ethclient.Client, error) {
	u.dialMu.Lock()
	defer u.dialMu.Unlock()
	if u.eth != nil {
		return u.eth, nil
	}
	c, err := rpc.DialOptions(ctx, u.raw, rpc.WithHTTPClient(u.hc))
	if err != nil {
		return nil, err
	}
	u.client, u.eth = c, ethclient.NewClient(c)
	return u.eth, nil
}

func (u *upstream) success() {
	u.mu.Lock()
	u.consecutive = 0
	u.lastSuccessAt = time.Now()
	u.mu.Unlock()
}

func (u *upstream) failure(err error) {
	u.mu.Lock()
	u.consecutive++
	u.total++
	u.lastErr = err.Error()
	u.lastErrAt = time.Now()
	u.mu.Unlock()
}

// wrap returns err as an *UpstreamError whose message has the upstream's URL
// secrets removed.
func (u *upstream) wrap(method string, err error) error {
	return &UpstreamError{URL: u.url, Method: method, Err: err, msg: redactMessage(err.Error(), u.raw)}
}

// UpstreamError is a failed call to one upstream. Its message names the
// upstream by scheme and host only; Unwrap gives the original error (for
// errors.As to rpc.Error or rpc.HTTPError), whose own message may contain
// the full URL and must not be logged.
type UpstreamError struct {
	URL    string
	Method string
	Err    error
	msg    string
}

func (e *UpstreamError) Error() string { return e.Method + " via " + e.URL + ": " + e.msg }

func (e *UpstreamError) Unwrap() error { return e.Err }

// redactMessage removes every secret-bearing part of raw from msg.
func redactMessage(msg, raw string) string {
	msg = strings.ReplaceAll(msg, raw, Redact(raw))
	u, err := url.Parse(raw)
	if err != nil {
		return msg
	}
	for _, secret := range []string{u.User.String(), u.RawQuery, u.EscapedPath(), u.Path} {
		if len(secret) > 3 { // "/" or "/v1" hide nothing worth the noise
			msg = strings.ReplaceAll(msg, secret, "…")
		}
	}
	return msg
}

// isUpstreamFailure reports whether err says the upstream is unwell
// (unreachable, timing out, overloaded, broken) rather than that it answered
// and refused this one request.
func isUpstreamFailure(err error) bool {
	if err == nil || errors.Is(err, ethereum.NotFound) {
		return false
	}
	var httpErr rpc.HTTPError
	if errors.As(err, &httpErr) {
		if httpErr.StatusCode == http.StatusTooManyRequests || httpErr.StatusCode >= 500 {
			return true
		}
		// Some providers answer a refused request with a 4xx status and a
		// JSON-RPC error object: that is an answer, not an outage.
		return !bytes.Contains(httpErr.Body, []byte(`"error"`))
	}
	var rpcErr rpc.Error
	if errors.As(err, &rpcErr) {
		return isRateLimit(rpcErr.ErrorCode(), rpcErr.Error())
	}
	return true
}

// isRateLimit recognises providers' "slow down" answers, which deserve a
// failover rather than an error to the caller.
func isRateLimit(code int, msg string) bool {
	if code == -32029 || code == -32090 {
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "rate limit") || strings.Contains(m, "too many requests") ||
		strings.Contains(m, "exceeded its compute units") || strings.Contains(m, "capacity exceeded")
}
