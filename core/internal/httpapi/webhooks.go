package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/govgate/govgate/core"
)

// MaxRequestBody is the largest request body the webhook service reads.
const MaxRequestBody = 64 << 10

// SecretNote is the note that accompanies a new secret.
const SecretNote = "Store this secret now; it will not be shown again. Use it to verify the X-Webhook-Signature-V2 header of every delivery."

// WebhookRegistry is what the webhook service needs from the store.
// A registry that is also an OwnerStore serves the owner operations too.
type WebhookRegistry interface {
	RegisterWebhookWith(ctx context.Context, url, secret string, s core.WebhookSettings) (wh core.Webhook, created bool, err error)
	DeactivateWebhook(ctx context.Context, url, reason string) (core.Webhook, error)
}

// WebhookServiceConfig configures NewWebhookService.
type WebhookServiceConfig struct {
	Registry      WebhookRegistry
	NewSecret     func() (string, error)
	AllowPrivate  bool
	RatePerMinute float64
	Burst         int
	Logger        *slog.Logger
	// DAOs are the slugs a subscription may name; nil accepts any valid slug.
	DAOs []core.DAO
	// AdminToken lets the operator do what an owner's signature does.
	AdminToken string
	// Now is the clock that owner signatures are checked against and the
	// rate limiter's buckets refill by (default time.Now).
	Now func() time.Time
}

// RegistrationResponse is the body of a successful POST /webhooks.
type RegistrationResponse struct {
	Success bool   `json:"success"`
	Secret  string `json:"secret,omitempty"`
	Note    string `json:"note,omitempty"`
}

// NewWebhookService returns the handler of the webhook service:
// POST /webhooks registers a receiver, DELETE /webhooks deactivates it,
// GET /openapi.yaml serves the OpenAPI document, and the owner operations
// (PATCH /webhooks, POST /webhooks/rotate, GET /webhooks/settings,
// GET /webhooks/deliveries[/{id}], POST /webhooks/replay) let an endpoint's
// owner manage it with signed requests.
func NewWebhookService(cfg WebhookServiceConfig) http.Handler {
	log := cfg.Logger
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := newEngine(log)
	// Registered before the rate limiter, which gin applies only to the
	// routes that come after it: reading the document costs no token.
	e.GET("/openapi.yaml", serveOpenAPI)
	limit := newRateLimiter(cfg.RatePerMinute, cfg.Burst, cfg.Now)
	e.Use(limit.middleware(log))

	normalize := func(c *gin.Context, raw string) (string, bool) {
		norm, err := NormalizeWebhookURL(raw, cfg.AllowPrivate)
		if err != nil {
			writeError(c, log, err)
			return "", false
		}
		return norm, true
	}
	readURL := func(c *gin.Context) (map[string]json.RawMessage, string, bool) {
		obj, err := readJSONObject(c, MaxRequestBody)
		if err != nil {
			writeError(c, log, err)
			return nil, "", false
		}
		raw, err := stringField(obj, "url")
		if err != nil {
			writeError(c, log, err)
			return nil, "", false
		}
		norm, ok := normalize(c, raw)
		return obj, norm, ok
	}
	parser := settingsParser{daos: daoSet(cfg.DAOs)}

	e.POST("/webhooks", func(c *gin.Context) {
		obj, url, ok := readURL(c)
		if !ok {
			return
		}
		// The owner's settings, if any, apply to a first registration or a
		// reactivation; other fields are ignored, as before.
		p, err := parser.patch(obj)
		if err != nil {
			writeError(c, log, err)
			return
		}
		secret, err := cfg.NewSecret()
		if err != nil {
			writeError(c, log, err)
			return
		}
		wh, created, err := cfg.Registry.RegisterWebhookWith(c.Request.Context(), url, secret, p.Apply(core.WebhookSettings{}))
		if err != nil {
			writeError(c, log, err)
			return
		}
		if !created {
			c.JSON(http.StatusOK, RegistrationResponse{Success: true})
			return
		}
		log.Info("webhook registered", "webhook", wh.ID, "url", wh.URL)
		c.Header("Cache-Control", "no-store") // the one response that carries the secret
		c.JSON(http.StatusCreated, RegistrationResponse{Success: true, Secret: secret, Note: SecretNote})
	})
	e.DELETE("/webhooks", func(c *gin.Context) {
		_, url, ok := readURL(c)
		if !ok {
			return
		}
		wh, err := cfg.Registry.DeactivateWebhook(c.Request.Context(), url, "deactivated by its owner (DELETE /webhooks)")
		if err != nil {
			writeError(c, log, err)
			return
		}
		log.Info("webhook deactivated", "webhook", wh.ID, "url", wh.URL)
		c.JSON(http.StatusOK, gin.H{"success": true})
	})
	ownerRoutes(e, cfg, log, normalize)
	return e
}

// rateLimiter is a token bucket per client IP (golang.org/x/time/rate),
// forgetting clients idle for ten minutes.
type rateLimiter struct {
	mu        sync.Mutex
	perSec    rate.Limit
	burst     int
	clients   map[string]*client
	lastSweep time.Time
	now       func() time.Time
}

type client struct {
	lim  *rate.Limiter
	seen time.Time
}

func newRateLimiter(perMinute float64, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{perSec: rate.Limit(perMinute / 60), burst: burst, clients: map[string]*client{}, now: now}
}

func (l *rateLimiter) reserve(key string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > time.Minute {
		for k, c := range l.clients {
			if now.Sub(c.seen) > 10*time.Minute {
				delete(l.clients, k)
			}
		}
		l.lastSweep = now
	}
	c := l.clients[key]
	if c == nil {
		c = &client{lim: rate.NewLimiter(l.perSec, l.burst)}
		l.clients[key] = c
	}
	c.seen = now
	r := c.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

func (l *rateLimiter) middleware(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		if wait := l.reserve(c.ClientIP(), l.now()); wait > 0 {
			c.Header("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			writeError(c, log, core.Errorf(core.ECodeRateLimited, "too many requests; retry after %d s", int(math.Ceil(wait.Seconds()))))
			return
		}
		c.Next()
	}
}
