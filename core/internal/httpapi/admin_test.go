package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
)

// TestAdminAuth checks that every admin API route wants the bearer token,
// and that with no token configured every request is refused.
func TestAdminAuth(t *testing.T) {
	t.Parallel()
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/admin/api/webhooks", ""},
		{http.MethodGet, "/admin/api/webhooks/1", ""},
		{http.MethodGet, "/admin/api/webhooks/1/deliveries", ""},
		{http.MethodPost, "/admin/api/webhooks/1/deactivate", ""},
		{http.MethodPost, "/admin/api/webhooks/1/reactivate", ""},
		{http.MethodPost, "/admin/api/deliveries/1/replay", ""},
		{http.MethodPost, "/admin/api/notifications", `{"id": "sneaky", "type": "test", "dao": "uniswap", "data": {}}`},
		{http.MethodGet, "/admin/api/notifications", ""},
		{http.MethodGet, "/admin/api/stats", ""},
		{http.MethodGet, "/admin/api/daos", ""},
	}
	refused := []struct{ name, authorization string }{
		{"no header", ""},
		{"wrong token", "Bearer t0x"},
		{"longer token", "Bearer t0kt0k"},
		{"shorter token", "Bearer t0"},
		{"empty bearer", "Bearer "},
		{"token without scheme", adminToken},
		{"basic scheme", "Basic " + adminToken},
		{"token case", "Bearer T0K"},
	}
	empty := ""
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		e.register(t, "https://auth.example.com/")
		before := e.snapshot(t)
		for _, rt := range routes {
			for _, tt := range refused {
				t.Run(tt.name+rt.method+rt.path, func(t *testing.T) {
					h := map[string]string{"Authorization": tt.authorization, "Content-Type": "application/json"}
					r := do(t, e.admin.Client(), rt.method, e.admin.URL+rt.path, h, rt.body)
					wantError(t, r, http.StatusUnauthorized, core.ECodeUnauthorized)
					if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
						t.Fatalf("WWW-Authenticate %q, want a Bearer challenge", r.header.Get("WWW-Authenticate"))
					}
				})
			}
		}
		// A refused token in the query string is not a way in either.
		r := do(t, e.admin.Client(), http.MethodGet, e.admin.URL+"/admin/api/webhooks?token="+adminToken+"&access_token="+adminToken, nil, "")
		wantError(t, r, http.StatusUnauthorized, core.ECodeUnauthorized)
		e.wantUnchanged(t, before)
		if _, err := e.store.Notification(context.Background(), "sneaky"); core.ErrorCode(err) != core.ECodeNotFound {
			t.Fatalf("an unauthenticated notification was stored: %v", err)
		}
		for _, ok := range []string{"Bearer " + adminToken, "bearer " + adminToken, "BEARER  " + adminToken + " "} {
			r := do(t, e.admin.Client(), http.MethodGet, e.admin.URL+"/admin/api/webhooks", map[string]string{"Authorization": ok}, "")
			if r.status != http.StatusOK {
				t.Fatalf("Authorization %q: %s", ok, r)
			}
		}

		t.Run("no token configured", func(t *testing.T) {
			off := newEnv(t, b, options{token: &empty})
			for _, rt := range routes {
				for _, auth := range []string{"", "Bearer ", "Bearer " + adminToken, "Bearer anything"} {
					h := map[string]string{"Authorization": auth, "Content-Type": "application/json"}
					r := do(t, off.admin.Client(), rt.method, off.admin.URL+rt.path, h, rt.body)
					wantError(t, r, http.StatusUnauthorized, core.ECodeUnauthorized)
				}
			}
			if _, err := off.store.Notification(context.Background(), "sneaky"); core.ErrorCode(err) != core.ECodeNotFound {
				t.Fatalf("a notification was stored with the admin API disabled: %v", err)
			}
		})
	})
}

// listItem is a webhook as the admin API lists it.
type listItem struct {
	ID            int64      `json:"id"`
	URL           string     `json:"url"`
	State         string     `json:"state"`
	CreatedAt     time.Time  `json:"createdAt"`
	DeactivatedAt *time.Time `json:"deactivatedAt"`
}

type listPage struct {
	Items      []listItem `json:"items"`
	NextBefore *int64     `json:"nextBefore"`
}

// list gets one page of GET /admin/api/webhooks and checks that no secret
// is in it.
func (e *env) list(t *testing.T, query string) listPage {
	t.Helper()
	r := e.adminDo(t, http.MethodGet, "/admin/api/webhooks"+query, "")
	if r.status != http.StatusOK {
		t.Fatalf("list%s: %s", query, r)
	}
	low := strings.ToLower(string(r.body))
	if strings.Contains(low, "whsec_") || strings.Contains(low, "secret") {
		t.Fatalf("the webhook list shows a secret: %s", r.body)
	}
	m := object(t, r.body)
	if !slices.Equal(keys(m), []string{"items", "nextBefore"}) {
		t.Fatalf("list body keys %v, want items and nextBefore", keys(m))
	}
	items, ok := m["items"].([]any)
	if !ok {
		t.Fatalf("items is not an array: %s", r.body)
	}
	for _, it := range items {
		o := it.(map[string]any)
		for _, k := range []string{"id", "url", "state", "createdAt"} {
			if _, ok := o[k]; !ok {
				t.Fatalf("list item without %s: %v", k, o)
			}
		}
		if _, ok := o["deactivatedAt"]; ok != (o["state"] == string(core.WebhookDeactivated)) {
			t.Fatalf("deactivatedAt present %v in a %v webhook", ok, o["state"])
		}
	}
	var p listPage
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func urlsOf(items []listItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.URL)
	}
	return out
}

// TestAdminListWebhooks checks the admin listing: fields, no secrets,
// pagination without overlap or gap, filters and bad queries.
func TestAdminListWebhooks(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		start := time.Now().Add(-time.Minute)
		var all []string // newest first
		for i := range 5 {
			url := fmt.Sprintf("https://list%d.example.com/hook", i)
			e.register(t, url)
			all = append([]string{url}, all...)
		}
		e.register(t, "https://other.example.org/x")
		all = append([]string{"https://other.example.org/x"}, all...)
		for _, url := range []string{"https://list1.example.com/hook", "https://list3.example.com/hook"} {
			wantSuccessOnly(t, e.hook(t, http.MethodDelete, url))
		}

		full := e.list(t, "")
		if got := urlsOf(full.Items); !slices.Equal(got, all) || full.NextBefore != nil {
			t.Fatalf("full list %v (next %v), want %v", got, full.NextBefore, all)
		}
		for _, it := range full.Items {
			wh, err := e.store.Webhook(context.Background(), it.ID)
			if err != nil || wh.URL != it.URL || string(wh.State) != it.State || !wh.CreatedAt.Equal(it.CreatedAt) {
				t.Fatalf("listed %+v, stored %+v (%v)", it, wh, err)
			}
			if it.CreatedAt.Before(start) || it.CreatedAt.After(time.Now().Add(time.Minute)) {
				t.Fatalf("createdAt %v is not about now", it.CreatedAt)
			}
			if (it.DeactivatedAt != nil) != (it.State == "deactivated") {
				t.Fatalf("state %s with deactivatedAt %v", it.State, it.DeactivatedAt)
			}
		}

		t.Run("pages", func(t *testing.T) {
			var got []string
			query, pages := "?limit=2", 0
			for {
				p := e.list(t, query)
				pages++
				if len(p.Items) == 0 || len(p.Items) > 2 {
					t.Fatalf("page %d has %d items", pages, len(p.Items))
				}
				got = append(got, urlsOf(p.Items)...)
				if p.NextBefore == nil {
					break
				}
				if *p.NextBefore != p.Items[len(p.Items)-1].ID {
					t.Fatalf("nextBefore %d is not the last id of the page %v", *p.NextBefore, p.Items)
				}
				query = fmt.Sprintf("?limit=2&before=%d", *p.NextBefore)
			}
			if pages != 3 || !slices.Equal(got, all) {
				t.Fatalf("%d pages holding %v, want 3 pages holding %v", pages, got, all)
			}
		})

		filters := []struct {
			name, query string
			want        []string
		}{
			{"active", "?state=active", []string{all[0], all[1], all[3], all[5]}},
			{"deactivated", "?state=deactivated", []string{all[2], all[4]}},
			{"search", "?search=list", all[1:]},
			{"search host", "?search=list2.example", []string{"https://list2.example.com/hook"}},
			{"search and state", "?search=example.com&state=deactivated", []string{all[2], all[4]}},
			{"search nothing", "?search=nowhere", []string{}},
			{"search path", "?search=%2Fx", []string{"https://other.example.org/x"}},
			{"active paged", "?state=active&limit=3", []string{all[0], all[1], all[3]}},
		}
		for _, tt := range filters {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				p := e.list(t, tt.query)
				if got := urlsOf(p.Items); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
					t.Fatalf("%s listed %v, want %v", tt.query, got, tt.want)
				}
				if p.Items == nil {
					t.Fatal("items is null, want an array")
				}
			})
		}

		for _, q := range []string{"?limit=0", "?limit=-1", "?limit=abc", "?limit=501", "?before=0", "?before=x", "?state=bogus", "?state=ACTIVE"} {
			t.Run("bad "+q, func(t *testing.T) {
				t.Parallel()
				wantError(t, e.adminDo(t, http.MethodGet, "/admin/api/webhooks"+q, ""), http.StatusUnprocessableEntity, core.ECodeInvalidRequest)
			})
		}
	})
}

// deliveries lists a webhook's deliveries through the admin API.
func (e *env) deliveries(t *testing.T, webhookID int64) []core.DeliveryDetail {
	t.Helper()
	r := e.adminDo(t, http.MethodGet, fmt.Sprintf("/admin/api/webhooks/%d/deliveries", webhookID), "")
	if r.status != http.StatusOK {
		t.Fatalf("deliveries of %d: %s", webhookID, r)
	}
	var body struct {
		Items []core.DeliveryDetail `json:"items"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.Items == nil {
		t.Fatalf("deliveries body %s: %v", r.body, err)
	}
	return body.Items
}

// TestAdminNotifications publishes notifications through the admin API:
// accepted once per id, fanned out to every active webhook, refused when
// malformed.
func TestAdminNotifications(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		for _, u := range []string{"https://na.example.com/", "https://nb.example.com/", "https://nc.example.com/"} {
			e.register(t, u)
		}
		wantSuccessOnly(t, e.hook(t, http.MethodDelete, "https://nc.example.com/"))
		a, _ := e.webhookByURL(t, "https://na.example.com/")
		bb, _ := e.webhookByURL(t, "https://nb.example.com/")
		c, _ := e.webhookByURL(t, "https://nc.example.com/")

		note := `{"id": "n-1", "type": "proposal.created", "dao": "uniswap", "data": {"proposalId": "42"}}`
		wantJSON(t, e.adminDo(t, http.MethodPost, "/admin/api/notifications", note), http.StatusAccepted, `{"id": "n-1", "created": true}`)
		wantJSON(t, e.adminDo(t, http.MethodPost, "/admin/api/notifications", note), http.StatusAccepted, `{"id": "n-1", "created": false}`)
		var stored int64
		if err := e.store.DB().Table("notifications").Where("id = ?", "n-1").Count(&stored).Error; err != nil || stored != 1 {
			t.Fatalf("%d notifications n-1 stored (%v), want 1", stored, err)
		}

		// Without an id the API makes one.
		r := e.adminDo(t, http.MethodPost, "/admin/api/notifications", `{"type": "test", "dao": "compound", "data": {}, "occurredAt": "2024-05-01T12:00:00Z"}`)
		if r.status != http.StatusAccepted {
			t.Fatalf("notification without id: %s", r)
		}
		gen := object(t, r.body)
		genID, _ := gen["id"].(string)
		if !strings.HasPrefix(genID, "ntf_") || gen["created"] != true {
			t.Fatalf("generated answer %s", r.body)
		}
		n, err := e.store.Notification(context.Background(), genID)
		if err != nil || n.DAO != "compound" || n.Type != "test" || !n.OccurredAt.Equal(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)) {
			t.Fatalf("stored %+v, %v", n, err)
		}

		lr := e.adminDo(t, http.MethodGet, "/admin/api/notifications?dao=uniswap", "")
		var listed struct{ Items []core.Notification }
		if err := json.Unmarshal(lr.body, &listed); err != nil || len(listed.Items) != 1 || listed.Items[0].ID != "n-1" {
			t.Fatalf("notifications of uniswap: %s (%v)", lr.body, err)
		}

		// Fan-out: one pending delivery per notification for each active
		// webhook, none for the deactivated one.
		for _, wh := range []core.Webhook{a, bb} {
			ds := e.deliveries(t, wh.ID)
			if len(ds) != 2 {
				t.Fatalf("webhook %d has %d deliveries, want 2: %+v", wh.ID, len(ds), ds)
			}
			var ids []string
			for _, d := range ds {
				if d.WebhookID != wh.ID || d.State != core.DeliveryPending || d.AttemptLog == nil {
					t.Fatalf("delivery %+v", d)
				}
				ids = append(ids, d.NotificationID)
			}
			if !slices.Equal(ids, []string{genID, "n-1"}) {
				t.Fatalf("deliveries of %d are for %v, want %v newest first", wh.ID, ids, []string{genID, "n-1"})
			}
			if ds[1].DAO != "uniswap" || ds[1].NotificationType != "proposal.created" {
				t.Fatalf("delivery of n-1: %+v", ds[1])
			}
		}
		if ds := e.deliveries(t, c.ID); len(ds) != 0 {
			t.Fatalf("the deactivated webhook got deliveries: %+v", ds)
		}
		wantError(t, e.adminDo(t, http.MethodGet, "/admin/api/webhooks/999999/deliveries", ""), http.StatusNotFound, core.ECodeNotFound)
		wantError(t, e.adminDo(t, http.MethodGet, "/admin/api/webhooks/abc/deliveries", ""), http.StatusNotFound, core.ECodeNotFound)

		bad := []struct {
			name, body string
			status     int
			code       string
		}{
			{"unknown dao", `{"type": "test", "dao": "nope", "data": {}}`, 422, core.ECodeInvalidRequest},
			{"missing dao", `{"type": "test", "data": {}}`, 422, core.ECodeInvalidRequest},
			{"missing type", `{"dao": "uniswap", "data": {}}`, 422, core.ECodeInvalidRequest},
			{"empty type", `{"type": "", "dao": "uniswap", "data": {}}`, 422, core.ECodeInvalidRequest},
			{"bad type", `{"type": "Proposal Created", "dao": "uniswap", "data": {}}`, 422, core.ECodeInvalidRequest},
			{"number type", `{"type": 7, "dao": "uniswap", "data": {}}`, 422, core.ECodeInvalidRequest},
			{"missing data", `{"type": "test", "dao": "uniswap"}`, 422, core.ECodeInvalidRequest},
			{"array data", `{"type": "test", "dao": "uniswap", "data": [1]}`, 422, core.ECodeInvalidRequest},
			{"null data", `{"type": "test", "dao": "uniswap", "data": null}`, 422, core.ECodeInvalidRequest},
			{"string data", `{"type": "test", "dao": "uniswap", "data": "{}"}`, 422, core.ECodeInvalidRequest},
			{"number data", `{"type": "test", "dao": "uniswap", "data": 1}`, 422, core.ECodeInvalidRequest},
			{"bad id", `{"id": "has space", "type": "test", "dao": "uniswap", "data": {}}`, 422, core.ECodeInvalidRequest},
			{"number id", `{"id": 5, "type": "test", "dao": "uniswap", "data": {}}`, 422, core.ECodeInvalidRequest},
			{"bad occurredAt", `{"type": "test", "dao": "uniswap", "data": {}, "occurredAt": "yesterday"}`, 422, core.ECodeInvalidRequest},
			{"not an object", `["test"]`, 400, core.ECodeInvalidJSON},
			{"malformed", `{"type": "test"`, 400, core.ECodeInvalidJSON},
			{"trailing garbage", `{"type": "test", "dao": "uniswap", "data": {}} x`, 400, core.ECodeInvalidJSON},
		}
		var before int64
		e.store.DB().Table("deliveries").Count(&before)
		for _, tt := range bad {
			t.Run(tt.name, func(t *testing.T) {
				wantError(t, e.adminDo(t, http.MethodPost, "/admin/api/notifications", tt.body), tt.status, tt.code)
			})
		}
		t.Run("wrong content type", func(t *testing.T) {
			h := map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "text/plain"}
			r := do(t, e.admin.Client(), http.MethodPost, e.admin.URL+"/admin/api/notifications", h, note)
			wantError(t, r, http.StatusUnsupportedMediaType, core.ECodeUnsupportedMediaType)
		})
		t.Run("body over 1 MiB", func(t *testing.T) {
			big := `{"type": "test", "dao": "uniswap", "data": {"pad": "` + strings.Repeat("x", 1<<20) + `"}}`
			wantError(t, e.adminDo(t, http.MethodPost, "/admin/api/notifications", big), http.StatusRequestEntityTooLarge, core.ECodeBodyTooLarge)
		})
		var notes, after int64
		e.store.DB().Table("notifications").Count(&notes)
		e.store.DB().Table("deliveries").Count(&after)
		if notes != 2 || after != before {
			t.Fatalf("after bad requests: %d notifications and %d deliveries, want 2 and %d", notes, after, before)
		}
	})
}

// TestAdminWebhookActions deactivates, reactivates and replays through the
// admin API and checks how the webhook service sees the result.
func TestAdminWebhookActions(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		ctx := context.Background()
		const url = "https://act.example.com/hook"
		secret := e.register(t, url)
		wh, _ := e.webhookByURL(t, url)
		path := fmt.Sprintf("/admin/api/webhooks/%d", wh.ID)

		r := e.adminDo(t, http.MethodGet, path, "")
		var got core.Webhook
		if r.status != http.StatusOK || json.Unmarshal(r.body, &got) != nil || got.ID != wh.ID || got.URL != url {
			t.Fatalf("GET %s: %s", path, r)
		}
		if strings.Contains(strings.ToLower(string(r.body)), "secret") {
			t.Fatalf("GET %s shows a secret: %s", path, r.body)
		}
		e.adminDo(t, http.MethodPost, "/admin/api/notifications", `{"id": "act-1", "type": "test", "dao": "uniswap", "data": {}}`)

		r = e.adminDo(t, http.MethodPost, path+"/deactivate", "")
		if r.status != http.StatusOK || json.Unmarshal(r.body, &got) != nil || got.State != core.WebhookDeactivated || got.DeactivatedAt == nil {
			t.Fatalf("deactivate: %s", r)
		}
		ds := e.deliveries(t, wh.ID)
		if len(ds) != 1 || ds[0].State != core.DeliveryCanceled {
			t.Fatalf("deliveries after deactivation: %+v, want one canceled", ds)
		}
		wantError(t, e.adminDo(t, http.MethodPost, path+"/deactivate", ""), http.StatusNotFound, core.ECodeNotFound)
		wantError(t, e.hook(t, http.MethodDelete, url), http.StatusNotFound, core.ECodeNotFound)
		// A canceled delivery of a deactivated webhook is not replayed.
		wantError(t, e.adminDo(t, http.MethodPost, fmt.Sprintf("/admin/api/deliveries/%d/replay", ds[0].ID), ""), http.StatusConflict, core.ECodeConflict)

		got = core.Webhook{}
		r = e.adminDo(t, http.MethodPost, path+"/reactivate", "")
		if r.status != http.StatusOK || json.Unmarshal(r.body, &got) != nil || got.State != core.WebhookActive || got.DeactivatedAt != nil {
			t.Fatalf("reactivate: %s", r)
		}
		wantError(t, e.adminDo(t, http.MethodPost, path+"/reactivate", ""), http.StatusConflict, core.ECodeConflict)
		// Reactivated by an administrator it keeps its secret, and is
		// active for its owner.
		if stored, _ := e.store.WebhookSecret(ctx, wh.ID); stored != secret {
			t.Fatal("admin reactivation changed the secret")
		}
		wantSuccessOnly(t, e.hook(t, http.MethodPost, url))

		replay := fmt.Sprintf("/admin/api/deliveries/%d/replay", ds[0].ID)
		r = e.adminDo(t, http.MethodPost, replay, "")
		var d core.Delivery
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &d) != nil || d.ID != ds[0].ID || d.State != core.DeliveryPending {
			t.Fatalf("replay: %s", r)
		}
		wantError(t, e.adminDo(t, http.MethodPost, replay, ""), http.StatusConflict, core.ECodeConflict)

		for _, tt := range []struct{ name, method, path string }{
			{"replay unknown delivery", http.MethodPost, "/admin/api/deliveries/999999/replay"},
			{"replay bad id", http.MethodPost, "/admin/api/deliveries/x/replay"},
			{"replay id zero", http.MethodPost, "/admin/api/deliveries/0/replay"},
			{"get unknown webhook", http.MethodGet, "/admin/api/webhooks/999999"},
			{"deactivate unknown", http.MethodPost, "/admin/api/webhooks/999999/deactivate"},
			{"reactivate unknown", http.MethodPost, "/admin/api/webhooks/999999/reactivate"},
			{"deactivate bad id", http.MethodPost, "/admin/api/webhooks/-1/deactivate"},
			{"unknown admin route", http.MethodGet, "/admin/api/nope"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				wantError(t, e.adminDo(t, tt.method, tt.path, ""), http.StatusNotFound, core.ECodeNotFound)
			})
		}
		t.Run("wrong method", func(t *testing.T) {
			t.Parallel()
			wantError(t, e.adminDo(t, http.MethodDelete, path, ""), http.StatusMethodNotAllowed, core.ECodeMethodNotAllowed)
		})
		t.Run("stats and daos", func(t *testing.T) {
			t.Parallel()
			wantJSON(t, e.adminDo(t, http.MethodGet, "/admin/api/daos", ""), http.StatusOK, mustJSON(t, map[string]any{"items": daos}))
			r := e.adminDo(t, http.MethodGet, "/admin/api/stats", "")
			m := object(t, r.body)
			if r.status != http.StatusOK || !slices.Equal(keys(m), []string{"deliveriesByState", "oldestPendingSeconds", "queueDepth"}) {
				t.Fatalf("stats: %s", r)
			}
		})
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
