package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/govgate/govgate/core"
)

// AdminStore is what the admin API needs from the store.
type AdminStore interface {
	ListWebhooks(ctx context.Context, f core.WebhookFilter, p core.Page) ([]core.Webhook, int64, error)
	Webhook(ctx context.Context, id int64) (core.Webhook, error)
	WebhookView(ctx context.Context, id int64) (core.WebhookView, error)
	DeactivateWebhookByID(ctx context.Context, id int64, reason string) (core.Webhook, error)
	ReactivateWebhookByID(ctx context.Context, id int64) (core.Webhook, error)
	ListDeliveries(ctx context.Context, webhookID int64, state core.DeliveryState, p core.Page) ([]core.DeliveryDetail, int64, error)
	Replay(ctx context.Context, deliveryID int64) (core.Delivery, error)
	CreateNotification(ctx context.Context, n core.Notification, source string) (bool, error)
	ListNotifications(ctx context.Context, f core.NotificationFilter) ([]core.Notification, error)
	QueueStats(ctx context.Context) (core.QueueStats, error)
}

// AdminConfig configures NewAdmin.
type AdminConfig struct {
	Store AdminStore
	// DAOs is the catalog in force; DAOAdmin, when set, changes it (the
	// admin API's DAO operations), else they answer unavailable.
	DAOs     core.DAOCatalog
	DAOAdmin DAOAdmin
	Token    string // empty: every admin request is refused
	Logger   *slog.Logger
	// Metrics serves GET /metrics (Prometheus), behind the same token.
	Metrics http.Handler
	// Routes adds more authenticated routes under /admin/api (plugins, health).
	Routes []func(g *gin.RouterGroup)
	// UI serves the admin page under /admin/ (everything but /admin/api/).
	UI http.Handler
	// Authorized, when set, accepts a request the bearer token does not
	// (the admin page's session cookie).
	Authorized func(r *http.Request) bool
}

// MaxNotificationBody is the largest notification the admin API accepts.
const MaxNotificationBody = 1 << 20

var notificationIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// BearerToken returns the token of an "Authorization: Bearer" header.
func BearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// NewAdmin returns the handler of the admin listener.
func NewAdmin(cfg AdminConfig) http.Handler {
	log := cfg.Logger
	e := newEngine(log)
	daos := cfg.DAOs
	if daos == nil {
		daos = core.FixedDAOs{}
	}
	auth := func(c *gin.Context) {
		if cfg.Token == "" {
			writeError(c, log, core.Errorf(core.ECodeUnauthorized, "the admin API is disabled: set GOVGATE_ADMIN_TOKEN to enable it"))
			return
		}
		if core.TokenMatches(BearerToken(c.Request), cfg.Token) || (cfg.Authorized != nil && cfg.Authorized(c.Request)) {
			c.Next()
			return
		}
		c.Header("WWW-Authenticate", `Bearer realm="govgate-admin"`)
		writeError(c, log, core.Errorf(core.ECodeUnauthorized, "missing or wrong bearer token"))
	}
	if cfg.Metrics != nil {
		e.GET("/metrics", auth, gin.WrapH(cfg.Metrics))
	}
	if cfg.UI != nil {
		e.GET("/", func(c *gin.Context) { c.Redirect(http.StatusFound, "/admin/") })
		ui := gin.WrapH(cfg.UI)
		e.Any("/admin", ui)
		e.Any("/admin/", ui)
		for _, p := range []string{"/admin/static/*path", "/admin/ui/*path"} {
			e.Any(p, ui)
		}
	}
	api := e.Group("/admin/api", auth)
	api.GET("/webhooks", func(c *gin.Context) {
		p, err := pageOf(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		f := core.WebhookFilter{State: core.WebhookState(c.Query("state")), Search: c.Query("search")}
		if f.State != "" && f.State != core.WebhookActive && f.State != core.WebhookDeactivated {
			writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "state must be active or deactivated"))
			return
		}
		items, next, err := cfg.Store.ListWebhooks(c.Request.Context(), f, p)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, listBody(items, next))
	})
	api.GET("/webhooks/:id", func(c *gin.Context) {
		id, err := idParam(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		// The webhook with its ordering line and rotation history.
		wh, err := cfg.Store.WebhookView(c.Request.Context(), id)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, wh)
	})
	api.POST("/webhooks/:id/deactivate", func(c *gin.Context) {
		id, err := idParam(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		wh, err := cfg.Store.DeactivateWebhookByID(c.Request.Context(), id, "deactivated by an administrator")
		if err != nil {
			writeError(c, log, err)
			return
		}
		log.Info("webhook deactivated by admin", "webhook", id)
		c.JSON(http.StatusOK, wh)
	})
	api.POST("/webhooks/:id/reactivate", func(c *gin.Context) {
		id, err := idParam(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		wh, err := cfg.Store.ReactivateWebhookByID(c.Request.Context(), id)
		if err != nil {
			writeError(c, log, err)
			return
		}
		log.Info("webhook reactivated by admin", "webhook", id)
		c.JSON(http.StatusOK, wh)
	})
	api.GET("/webhooks/:id/deliveries", func(c *gin.Context) {
		id, err := idParam(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		p, err := pageOf(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		if _, err := cfg.Store.Webhook(c.Request.Context(), id); err != nil {
			writeError(c, log, err)
			return
		}
		items, next, err := cfg.Store.ListDeliveries(c.Request.Context(), id, core.DeliveryState(c.Query("state")), p)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, listBody(items, next))
	})
	api.POST("/deliveries/:id/replay", func(c *gin.Context) {
		id, err := idParam(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		d, err := cfg.Store.Replay(c.Request.Context(), id)
		if err != nil {
			writeError(c, log, err)
			return
		}
		log.Info("delivery replayed by admin", "delivery", id)
		c.JSON(http.StatusAccepted, d)
	})
	api.POST("/notifications", func(c *gin.Context) {
		n, err := notificationFromBody(c, daos)
		if err != nil {
			writeError(c, log, err)
			return
		}
		created, err := cfg.Store.CreateNotification(c.Request.Context(), n, "admin")
		if err != nil {
			writeError(c, log, err)
			return
		}
		if created {
			log.Info("notification accepted", "id", n.ID, "type", n.Type, "dao", n.DAO)
		}
		c.JSON(http.StatusAccepted, gin.H{"id": n.ID, "created": created})
	})
	api.GET("/notifications", func(c *gin.Context) {
		f := core.NotificationFilter{DAO: c.Query("dao"), Type: c.Query("type")}
		if v := c.Query("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "limit must be a positive integer"))
				return
			}
			f.Limit = n
		}
		if v := c.Query("before"); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "before must be an RFC 3339 time"))
				return
			}
			f.Before = t
		}
		items, err := cfg.Store.ListNotifications(c.Request.Context(), f)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"items": items})
	})
	api.GET("/stats", func(c *gin.Context) {
		st, err := cfg.Store.QueueStats(c.Request.Context())
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"queueDepth": st.Depth, "oldestPendingSeconds": st.OldestPendingAge.Seconds(), "deliveriesByState": st.ByState})
	})
	daoRoutes(api, daos, cfg.DAOAdmin, log)
	for _, add := range cfg.Routes {
		add(api)
	}
	return e
}

func notificationFromBody(c *gin.Context, daos core.DAOCatalog) (core.Notification, error) {
	obj, err := readJSONObject(c, MaxNotificationBody)
	if err != nil {
		return core.Notification{}, err
	}
	typ, err := stringField(obj, "type")
	if err != nil {
		return core.Notification{}, err
	}
	if !core.ValidNotificationType(typ) {
		return core.Notification{}, core.Errorf(core.ECodeInvalidRequest, "type must be dotted lowercase words such as \"proposal.created\"")
	}
	dao, err := stringField(obj, "dao")
	if err != nil {
		return core.Notification{}, err
	}
	if _, ok := daos.DAO(dao); !ok {
		return core.Notification{}, core.Errorf(core.ECodeInvalidRequest, "dao %q is not configured (GET /daos lists them)", dao)
	}
	data, ok := obj["data"]
	if !ok {
		return core.Notification{}, core.Errorf(core.ECodeInvalidRequest, "data is required")
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return core.Notification{}, core.Errorf(core.ECodeInvalidRequest, "data must be a JSON object")
	}
	n := core.Notification{Type: typ, DAO: dao, Data: data, OccurredAt: time.Now().UTC()}
	if raw, ok := obj["id"]; ok {
		var id string
		if err := json.Unmarshal(raw, &id); err != nil || !notificationIDPattern.MatchString(id) {
			return core.Notification{}, core.Errorf(core.ECodeInvalidRequest, "id must be 1 to 128 letters, digits, '_', '.', ':' or '-'")
		}
		n.ID = id
	} else {
		n.ID = "ntf_" + strings.ReplaceAll(uuid.Must(uuid.NewV7()).String(), "-", "")
	}
	if raw, ok := obj["occurredAt"]; ok {
		var t time.Time
		if err := json.Unmarshal(raw, &t); err != nil {
			return core.Notification{}, core.Errorf(core.ECodeInvalidRequest, "occurredAt must be an RFC 3339 time")
		}
		n.OccurredAt = t.UTC()
	}
	return n, nil
}

// ListBody is the JSON shape of a paginated list: pass NextBefore as
// ?before= to get the next page; null on the last page.
type ListBody[T any] struct {
	Items      []T    `json:"items"`
	NextBefore *int64 `json:"nextBefore"`
}

func listBody[T any](items []T, next int64) ListBody[T] {
	if items == nil {
		items = []T{}
	}
	b := ListBody[T]{Items: items}
	if next > 0 {
		b.NextBefore = &next
	}
	return b
}

func pageOf(c *gin.Context) (core.Page, error) {
	var p core.Page
	if v := c.Query("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return p, core.Errorf(core.ECodeInvalidRequest, "before must be a positive integer")
		}
		p.Before = n
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return p, core.Errorf(core.ECodeInvalidRequest, "limit must be an integer from 1 to 500")
		}
		p.Limit = n
	}
	return p, nil
}

func idParam(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, core.Errorf(core.ECodeNotFound, "no such id %q", c.Param("id"))
	}
	return id, nil
}
