package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
)

// Owner operations: an endpoint's owner proves ownership by signing the
// request with the endpoint's current secret exactly as govgate signs
// deliveries (X-Webhook-Timestamp, X-Webhook-Signature-V2 = hex
// HMAC-SHA256 of "{timestamp}.{rawBody}" keyed with the whole secret
// string, a 5-minute window); the operator may use the admin token instead.
//
// A GET has no body: its signed string is "{timestamp}.GET {target}",
// target being the request line's path and query as sent. The owner's url
// travels in the query, so the signature covers it and every filter; and
// since a JSON body starts with "{", no GET signature can pass for a body's,
// nor the other way round. Among bodies, each operation accepts only its
// own fields (PATCH must change something, rotate takes url and
// overlapSeconds only, replay must name deliveries), so that a signed body
// is valid for one operation only. A signature is accepted once: the store
// remembers it, in the database every process shares, until its window
// closes.

// OwnerStore is what the owner operations need from the store.
type OwnerStore interface {
	OwnerSecret(ctx context.Context, url string) (core.Webhook, string, error)
	WebhookByURL(ctx context.Context, url string) (core.Webhook, error)
	UseSignature(ctx context.Context, webhookID int64, signature string, expires time.Time) (bool, error)
	UpdateWebhookSettings(ctx context.Context, id int64, p core.SettingsPatch) (core.Webhook, error)
	RotateWebhookSecret(ctx context.Context, id int64, secret string, overlap time.Duration, actor string) (core.Rotation, error)
	WebhookView(ctx context.Context, id int64) (core.WebhookView, error)
	ListDeliveries(ctx context.Context, webhookID int64, state core.DeliveryState, p core.Page) ([]core.DeliveryDetail, int64, error)
	Replay(ctx context.Context, deliveryID int64) (core.Delivery, error)
	ReplayDeliveries(ctx context.Context, webhookID, first, last int64) (core.ReplayResult, error)
}

// signatureWindow is the largest difference between an owner request's
// timestamp and the gateway's clock, as for deliveries.
const signatureWindow = 300 * time.Second

// RotationNote accompanies a rotated secret.
const RotationNote = "Store this secret now; it will not be shown again. Until previousSecretExpiresAt deliveries are signed with both secrets: X-Webhook-Signature-V2 keeps the previous secret's digest, X-Webhook-Signature-V2-Next carries the new one's, and webhook-signature carries both. Afterwards only the new secret signs."

// dummySecret is what an unknown url's signature is checked against, so
// that it costs what a known one does and answers the same.
const dummySecret = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

// owner is who a consumer request proved to be.
type owner struct {
	webhook core.Webhook
	actor   string // core.ActorOwner or core.ActorAdmin
}

type ownerAuth struct {
	store OwnerStore
	token string
	now   func() time.Time
}

// authenticate checks a consumer request for url: the admin token, or the
// owner's signature over signed. Every failure of the signature itself
// (unknown url, deactivated webhook, wrong secret) answers the same.
func (a ownerAuth) authenticate(ctx context.Context, r *http.Request, url string, signed []byte) (owner, error) {
	if tok := BearerToken(r); tok != "" || r.Header.Get("Authorization") != "" {
		if !core.TokenMatches(tok, a.token) {
			return owner{}, core.Errorf(core.ECodeUnauthorized, "missing or wrong bearer token")
		}
		wh, err := a.store.WebhookByURL(ctx, url)
		if err != nil {
			return owner{}, err
		}
		return owner{webhook: wh, actor: core.ActorAdmin}, nil
	}
	ts, sig := r.Header.Values("X-Webhook-Timestamp"), r.Header.Values("X-Webhook-Signature-V2")
	if len(ts) == 0 || len(sig) == 0 {
		return owner{}, core.Errorf(core.ECodeSignatureRequired, "sign the request with the webhook's secret (X-Webhook-Timestamp and X-Webhook-Signature-V2, as deliveries are signed) or send the admin token")
	}
	sec, ok := unixSeconds(ts[0])
	now := a.now()
	if !ok || math.Abs(float64(now.Unix()-sec)) > signatureWindow.Seconds() {
		return owner{}, core.Errorf(core.ECodeStaleTimestamp, "X-Webhook-Timestamp must be Unix seconds within 5 minutes of the gateway's clock")
	}
	wh, secret, err := a.store.OwnerSecret(ctx, url)
	known := err == nil
	if err != nil && core.ErrorCode(err) != core.ECodeNotFound {
		return owner{}, err
	}
	if !known {
		secret = dummySecret
	}
	mac := hmac.New(sha256.New, []byte(secret))
	_, _ = io.WriteString(mac, ts[0]) // a hash never fails a write
	mac.Write([]byte{'.'})
	mac.Write(signed)
	want := make([]byte, hex.EncodedLen(sha256.Size))
	hex.Encode(want, mac.Sum(nil))
	if !hmac.Equal(want, []byte(strings.ToLower(sig[0]))) || !known {
		return owner{}, core.Errorf(core.ECodeInvalidSignature, "the signature does not match the current secret of an active webhook with this url")
	}
	fresh, err := a.store.UseSignature(ctx, wh.ID, string(want), time.Unix(sec, 0).Add(signatureWindow+time.Second))
	if err != nil {
		return owner{}, err
	}
	if !fresh {
		return owner{}, core.Errorf(core.ECodeReplayedRequest, "this signature was already used; sign each request anew")
	}
	return owner{webhook: wh, actor: core.ActorOwner}, nil
}

// unixSeconds accepts ASCII digits only, as sdk/receiver does.
func unixSeconds(s string) (int64, bool) {
	if s == "" || len(s) > 12 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// settingsParser validates the owner's settings fields.
type settingsParser struct {
	daos map[string]bool // configured DAOs; nil accepts any valid slug
}

// patch reads the settings fields present in obj.
func (p settingsParser) patch(obj map[string]json.RawMessage) (core.SettingsPatch, error) {
	var out core.SettingsPatch
	if raw, ok := obj["types"]; ok {
		list, err := stringList(raw, "types")
		if err != nil {
			return out, err
		}
		for _, t := range list {
			if !core.ValidTypePattern(t) {
				return out, core.Errorf(core.ECodeInvalidRequest, "types: %q is neither a notification type (dotted lowercase words such as \"proposal.created\") nor such a prefix followed by \".*\"", t)
			}
		}
		out.Types = &list
	}
	if raw, ok := obj["daos"]; ok {
		list, err := stringList(raw, "daos")
		if err != nil {
			return out, err
		}
		for _, d := range list {
			if !core.ValidSlug(d) || (p.daos != nil && !p.daos[d]) {
				return out, core.Errorf(core.ECodeInvalidRequest, "daos: %q is not a configured DAO (GET /daos on the REST API lists them)", d)
			}
		}
		out.DAOs = &list
	}
	if raw, ok := obj["ordered"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return out, core.Errorf(core.ECodeInvalidRequest, "ordered must be a boolean")
		}
		out.Ordered = &b
	}
	if raw, ok := obj["maxPerSecond"]; ok {
		var f *float64
		if err := json.Unmarshal(raw, &f); err != nil || (f != nil && (*f <= 0 || *f > core.MaxPerSecondLimit)) {
			return out, core.Errorf(core.ECodeInvalidRequest, "maxPerSecond must be a number above 0 and at most %d (null removes the limit)", core.MaxPerSecondLimit)
		}
		zero := 0.0
		if f == nil {
			f = &zero
		}
		out.MaxPerSecond = f
	}
	if raw, ok := obj["burst"]; ok {
		var n *int
		if err := json.Unmarshal(raw, &n); err != nil || (n != nil && (*n < 1 || *n > core.MaxBurst)) {
			return out, core.Errorf(core.ECodeInvalidRequest, "burst must be an integer from 1 to %d", core.MaxBurst)
		}
		zero := 0
		if n == nil {
			n = &zero
		}
		out.Burst = n
	}
	return out, nil
}

// stringList reads a JSON array of distinct strings, at most
// core.MaxSubscriptionItems of them (null is the empty list).
func stringList(raw json.RawMessage, name string) ([]string, error) {
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, core.Errorf(core.ECodeInvalidRequest, "%s must be an array of strings", name)
	}
	if len(list) > core.MaxSubscriptionItems {
		return nil, core.Errorf(core.ECodeInvalidRequest, "%s holds at most %d items", name, core.MaxSubscriptionItems)
	}
	out := []string{}
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// onlyFields refuses a body with a field outside allowed: each signed
// operation accepts its own fields only (see the package comment above).
func onlyFields(obj map[string]json.RawMessage, allowed ...string) error {
	for k := range obj {
		if !slices.Contains(allowed, k) {
			return core.Errorf(core.ECodeInvalidRequest, "unknown field %q (allowed: %s)", k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// OwnerView is what an owner reads about its webhook.
type OwnerView struct {
	URL                     string               `json:"url"`
	State                   core.WebhookState    `json:"state"`
	CreatedAt               time.Time            `json:"createdAt"`
	Settings                core.WebhookSettings `json:"settings"`
	PreviousSecretExpiresAt *time.Time           `json:"previousSecretExpiresAt"`
	Ordering                core.Ordering        `json:"ordering"`
	Rotations               []core.Rotation      `json:"rotations"`
	ConsecutiveFailures     int                  `json:"consecutiveFailures"`
	LastDeliveryAt          *time.Time           `json:"lastDeliveryAt"`
}

func ownerView(v core.WebhookView) OwnerView {
	return OwnerView{URL: v.URL, State: v.State, CreatedAt: v.CreatedAt, Settings: v.Settings, PreviousSecretExpiresAt: v.PreviousSecretExpiresAt,
		Ordering: v.Ordering, Rotations: v.Rotations, ConsecutiveFailures: v.ConsecutiveFailures, LastDeliveryAt: v.LastDeliveryAt}
}

// RotationResponse is the body of a successful POST /webhooks/rotate.
type RotationResponse struct {
	Success                 bool      `json:"success"`
	Secret                  string    `json:"secret"`
	Note                    string    `json:"note"`
	PreviousSecretExpiresAt time.Time `json:"previousSecretExpiresAt"`
}

// ownerRoutes adds the owner operations to the webhook service.
func ownerRoutes(e *gin.Engine, cfg WebhookServiceConfig, log *slog.Logger, readURL func(c *gin.Context, raw string) (string, bool)) {
	st, ok := cfg.Registry.(OwnerStore)
	if !ok {
		return
	}
	auth := ownerAuth{store: st, token: cfg.AdminToken, now: cfg.Now}
	// body reads a signed JSON body, its url, and who sent it.
	body := func(c *gin.Context, allowed ...string) (map[string]json.RawMessage, owner, bool) {
		obj, raw, err := readJSONObjectRaw(c, MaxRequestBody)
		if err == nil {
			err = onlyFields(obj, allowed...)
		}
		var u string
		if err == nil {
			u, err = stringField(obj, "url")
		}
		if err != nil {
			writeError(c, log, err)
			return nil, owner{}, false
		}
		url, ok := readURL(c, u)
		if !ok {
			return nil, owner{}, false
		}
		o, err := auth.authenticate(c.Request.Context(), c.Request, url, raw)
		if err != nil {
			writeError(c, log, err)
			return nil, owner{}, false
		}
		return obj, o, true
	}
	// query authenticates a GET, whose url is in the query.
	query := func(c *gin.Context) (owner, bool) {
		u := c.Query("url")
		if u == "" {
			writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "url is required (query parameter)"))
			return owner{}, false
		}
		url, ok := readURL(c, u)
		if !ok {
			return owner{}, false
		}
		o, err := auth.authenticate(c.Request.Context(), c.Request, url, []byte("GET "+c.Request.RequestURI))
		if err != nil {
			writeError(c, log, err)
			return owner{}, false
		}
		return o, true
	}
	active := func(c *gin.Context, o owner) bool {
		if o.webhook.State != core.WebhookActive {
			writeError(c, log, core.Errorf(core.ECodeConflict, "the webhook is deactivated; register it again"))
			return false
		}
		return true
	}
	parser := settingsParser{daos: daoSet(cfg.DAOs)}

	e.PATCH("/webhooks", func(c *gin.Context) {
		obj, o, ok := body(c, "url", "types", "daos", "ordered", "maxPerSecond", "burst")
		if !ok || !active(c, o) {
			return
		}
		p, err := parser.patch(obj)
		if err == nil && p.Empty() {
			err = core.Errorf(core.ECodeInvalidRequest, "nothing to change: send at least one of types, daos, ordered, maxPerSecond, burst")
		}
		if err != nil {
			writeError(c, log, err)
			return
		}
		if _, err := st.UpdateWebhookSettings(c.Request.Context(), o.webhook.ID, p); err != nil {
			writeError(c, log, err)
			return
		}
		v, err := st.WebhookView(c.Request.Context(), o.webhook.ID)
		if err != nil {
			writeError(c, log, err)
			return
		}
		log.Info("webhook settings changed", "webhook", o.webhook.ID, "by", o.actor)
		c.JSON(http.StatusOK, gin.H{"success": true, "webhook": ownerView(v)})
	})
	e.POST("/webhooks/rotate", func(c *gin.Context) {
		obj, o, ok := body(c, "url", "overlapSeconds")
		if !ok || !active(c, o) {
			return
		}
		overlap := core.DefaultOverlap
		if raw, ok := obj["overlapSeconds"]; ok {
			var n int64
			if err := json.Unmarshal(raw, &n); err != nil || n < 0 || time.Duration(n)*time.Second > core.MaxOverlap {
				writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "overlapSeconds must be an integer from 0 to %d (7 days)", int64(core.MaxOverlap/time.Second)))
				return
			}
			overlap = time.Duration(n) * time.Second
		}
		secret, err := cfg.NewSecret()
		if err != nil {
			writeError(c, log, err)
			return
		}
		rot, err := st.RotateWebhookSecret(c.Request.Context(), o.webhook.ID, secret, overlap, o.actor)
		if err != nil {
			writeError(c, log, err)
			return
		}
		log.Info("webhook secret rotated", "webhook", o.webhook.ID, "by", o.actor, "previous_expires_at", rot.PreviousExpiresAt)
		c.Header("Cache-Control", "no-store")
		c.JSON(http.StatusOK, RotationResponse{Success: true, Secret: secret, Note: RotationNote, PreviousSecretExpiresAt: rot.PreviousExpiresAt})
	})
	e.GET("/webhooks/settings", func(c *gin.Context) {
		o, ok := query(c)
		if !ok {
			return
		}
		v, err := st.WebhookView(c.Request.Context(), o.webhook.ID)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, ownerView(v))
	})
	e.GET("/webhooks/deliveries", func(c *gin.Context) {
		o, ok := query(c)
		if !ok {
			return
		}
		p, err := pageOf(c)
		if err == nil {
			err = validState(c.Query("state"))
		}
		if err != nil {
			writeError(c, log, err)
			return
		}
		items, next, err := st.ListDeliveries(c.Request.Context(), o.webhook.ID, core.DeliveryState(c.Query("state")), p)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, listBody(items, next))
	})
	e.GET("/webhooks/deliveries/:id", func(c *gin.Context) {
		o, ok := query(c)
		if !ok {
			return
		}
		id, err := idParam(c)
		if err != nil {
			writeError(c, log, err)
			return
		}
		// The newest delivery below id+1 is id itself when it is this
		// webhook's.
		items, _, err := st.ListDeliveries(c.Request.Context(), o.webhook.ID, "", core.Page{Before: id + 1, Limit: 1})
		if err != nil {
			writeError(c, log, err)
			return
		}
		if len(items) != 1 || items[0].ID != id {
			writeError(c, log, core.Errorf(core.ECodeNotFound, "this webhook has no delivery %d", id))
			return
		}
		c.JSON(http.StatusOK, items[0])
	})
	e.POST("/webhooks/replay", func(c *gin.Context) {
		obj, o, ok := body(c, "url", "deliveryId", "fromId", "toId")
		if !ok || !active(c, o) {
			return
		}
		var one, from, to int64
		intField := func(name string, into *int64) bool {
			raw, ok := obj[name]
			if !ok {
				return false
			}
			if err := json.Unmarshal(raw, into); err != nil || *into < 1 {
				*into = -1
			}
			return true
		}
		hasOne, hasFrom, hasTo := intField("deliveryId", &one), intField("fromId", &from), intField("toId", &to)
		switch {
		case hasOne && !hasFrom && !hasTo && one > 0:
			from, to = one, one
		case !hasOne && hasFrom && hasTo && from > 0 && to >= from:
		default:
			writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "send deliveryId, or fromId and toId (positive delivery ids, fromId <= toId, at most 1000 apart)"))
			return
		}
		res, err := st.ReplayDeliveries(c.Request.Context(), o.webhook.ID, from, to)
		if err != nil {
			writeError(c, log, err)
			return
		}
		if hasOne && len(res.Replayed) == 0 {
			if len(res.Skipped) == 1 {
				writeError(c, log, core.Errorf(core.ECodeConflict, "delivery %d is still queued", one))
			} else {
				writeError(c, log, core.Errorf(core.ECodeNotFound, "this webhook has no delivery %d", one))
			}
			return
		}
		log.Info("deliveries replayed", "webhook", o.webhook.ID, "by", o.actor, "replayed", len(res.Replayed))
		c.JSON(http.StatusAccepted, gin.H{"success": true, "replayed": res.Replayed, "skipped": res.Skipped})
	})
}

func validState(s string) error {
	switch core.DeliveryState(s) {
	case "", core.DeliveryPending, core.DeliveryInFlight, core.DeliverySucceeded, core.DeliveryFailed, core.DeliveryCanceled, core.DeliveryDropped, core.DeliveryWaiting:
		return nil
	}
	return core.Errorf(core.ECodeInvalidRequest, "state must be one of pending, in_flight, waiting, succeeded, failed, canceled, dropped")
}

func daoSet(daos []core.DAO) map[string]bool {
	if len(daos) == 0 {
		return nil
	}
	m := make(map[string]bool, len(daos))
	for _, d := range daos {
		m[d.Slug] = true
	}
	return m
}
