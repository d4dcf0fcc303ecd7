package httpapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/store"
)

// ownerSecret and rotateSecret are the secrets of the owner cases' webhooks.
const (
	ownerSecret  = "whsec_b3duZXItc2VjcmV0LW93bmVyLXNlY3JldC1vd25lcjA="
	rotateSecret = "whsec_cm90YXRlLXNlY3JldC1yb3RhdGUtc2VjcmV0LXJvdDA="
	ownerHook    = "https://owner.example.com/hook"
	rotateHook   = "https://rotate.example.com/hook"
	goneHook     = "https://gone.example.com/hook"
)

// signer signs owner requests with timestamps a second apart, so that no
// two cases share a signature (each is accepted once).
type signer struct{ n atomic.Int64 }

func (s *signer) ts() string {
	return strconv.FormatInt(time.Now().Unix()-s.n.Add(1)%200, 10)
}

// body signs a JSON body with secret.
func (s *signer) body(secret, body string) map[string]string {
	ts := s.ts()
	return map[string]string{"Content-Type": "application/json", "X-Webhook-Timestamp": ts, "X-Webhook-Signature-V2": hmacHex(secret, ts+"."+body)}
}

// get signs a GET of target (path and query as sent) with secret.
func (s *signer) get(secret, target string) map[string]string {
	ts := s.ts()
	return map[string]string{"X-Webhook-Timestamp": ts, "X-Webhook-Signature-V2": hmacHex(secret, ts+".GET "+target)}
}

func hmacHex(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func wantCode(code string) func(t *testing.T, r response) { return wantField("error.code", code) }

// ownerFixtures registers the owner cases' webhooks and gives the owner's a
// pending and a finished delivery; it returns their ids.
func ownerFixtures(t *testing.T, s *store.Store) (pending, finished int64) {
	t.Helper()
	ctx := context.Background()
	for hook, secret := range map[string]string{ownerHook: ownerSecret, rotateHook: rotateSecret, goneHook: ownerSecret} {
		if _, _, err := s.RegisterWebhook(ctx, hook, secret); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeactivateWebhook(ctx, goneHook, "test"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"owner-1", "owner-2"} {
		if _, err := s.CreateNotification(ctx, core.Notification{ID: id, Type: "proposal.created", DAO: "uniswap", OccurredAt: time.Now(), Data: []byte(`{}`)}, "test"); err != nil {
			t.Fatal(err)
		}
		if id == "owner-2" {
			break
		}
		jobs, err := s.Claim(ctx, 10, time.Minute, nil)
		if err != nil || len(jobs) < 2 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		var results []core.AttemptResult
		for _, j := range jobs {
			results = append(results, core.AttemptResult{Job: j, Outcome: core.OutcomeFailed, StartedAt: time.Now(), StatusCode: 500, Error: "receiver answered 500"})
			if j.WebhookURL == ownerHook {
				finished = j.DeliveryID
			}
		}
		if _, err := s.Complete(ctx, results, 0); err != nil {
			t.Fatal(err)
		}
	}
	owner, _, err := s.OwnerSecret(ctx, ownerHook)
	if err != nil {
		t.Fatal(err)
	}
	items, _, err := s.ListDeliveries(ctx, owner.ID, core.DeliveryPending, core.Page{})
	if err != nil || len(items) != 1 {
		t.Fatalf("pending deliveries %v %v", items, err)
	}
	return items[0].ID, finished
}

// ownerCases exercise every owner operation against the document.
func ownerCases(t *testing.T, pending, finished int64) []specCase {
	sg := &signer{}
	q := "?url=" + url.QueryEscape(ownerHook)
	unknown := "?url=" + url.QueryEscape("https://unknown.example.com/")
	admin := map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "application/json"}
	patch := `{"url":"` + ownerHook + `","types":["proposal.*"],"daos":["uniswap"],"maxPerSecond":5,"burst":2}`
	big := `{"url": "` + ownerHook + `", "pad": "` + strings.Repeat("x", httpapi.MaxRequestBody) + `"}`
	replayOne := func(id int64) string {
		return `{"url":"` + ownerHook + `","deliveryId":` + strconv.FormatInt(id, 10) + `}`
	}
	text := map[string]string{"Content-Type": "text/plain"}
	replayed := sg.body(ownerSecret, `{"url":"`+ownerHook+`","types":["vote.cast"]}`)
	return []specCase{
		{name: "owner PATCH", on: onWebhooks, method: "PATCH", path: "/webhooks", header: sg.body(ownerSecret, patch), body: patch, status: 200, check: wantField("webhook.settings.maxPerSecond", json.Number("5"))},
		{name: "owner PATCH replayed", on: onWebhooks, method: "PATCH", path: "/webhooks", header: replayed, body: `{"url":"` + ownerHook + `","types":["vote.cast"]}`, status: 200},
		{name: "owner PATCH replayed again", on: onWebhooks, method: "PATCH", path: "/webhooks", header: replayed, body: `{"url":"` + ownerHook + `","types":["vote.cast"]}`, status: 401, check: wantCode(core.ECodeReplayedRequest)},
		{name: "owner PATCH unsigned", on: onWebhooks, method: "PATCH", path: "/webhooks", header: jsonType, body: patch, status: 401, check: wantCode(core.ECodeSignatureRequired)},
		{name: "owner PATCH wrong secret", on: onWebhooks, method: "PATCH", path: "/webhooks", header: sg.body(rotateSecret, patch), body: patch, status: 401, check: wantCode(core.ECodeInvalidSignature)},
		{name: "owner PATCH stale", on: onWebhooks, method: "PATCH", path: "/webhooks", header: map[string]string{"Content-Type": "application/json", "X-Webhook-Timestamp": "1000", "X-Webhook-Signature-V2": hmacHex(ownerSecret, "1000."+patch)}, body: patch, status: 401, check: wantCode(core.ECodeStaleTimestamp)},
		{name: "owner PATCH wrong admin token", on: onWebhooks, method: "PATCH", path: "/webhooks", header: map[string]string{"Authorization": "Bearer nope", "Content-Type": "application/json"}, body: patch, status: 401, check: wantCode(core.ECodeUnauthorized)},
		{name: "owner PATCH bad type", on: onWebhooks, method: "PATCH", path: "/webhooks", header: sg.body(ownerSecret, `{"url":"`+ownerHook+`","types":["Bad"]}`), body: `{"url":"` + ownerHook + `","types":["Bad"]}`, status: 422, req: reqInvalid},
		{name: "owner PATCH nothing", on: onWebhooks, method: "PATCH", path: "/webhooks", header: sg.body(ownerSecret, `{"url":"`+ownerHook+`"}`), body: `{"url":"` + ownerHook + `"}`, status: 422, req: reqAny},
		{name: "owner PATCH unknown dao", on: onWebhooks, method: "PATCH", path: "/webhooks", header: sg.body(ownerSecret, `{"url":"`+ownerHook+`","daos":["nope"]}`), body: `{"url":"` + ownerHook + `","daos":["nope"]}`, status: 422, req: reqAny},
		{name: "owner PATCH deactivated by admin", on: onWebhooks, method: "PATCH", path: "/webhooks", header: admin, body: `{"url":"` + goneHook + `","ordered":true}`, status: 409},
		{name: "owner PATCH malformed", on: onWebhooks, method: "PATCH", path: "/webhooks", header: jsonType, body: `{`, status: 400, req: reqInvalid},
		{name: "owner PATCH too big", on: onWebhooks, method: "PATCH", path: "/webhooks", header: jsonType, body: big, status: 413, req: reqAny},
		{name: "owner PATCH text", on: onWebhooks, method: "PATCH", path: "/webhooks", header: text, body: patch, status: 415, req: reqInvalid},

		{name: "owner settings", on: onWebhooks, method: "GET", path: "/webhooks/settings" + q, header: sg.get(ownerSecret, "/webhooks/settings"+q), status: 200, check: wantField("settings.types", []any{"vote.cast"})},
		{name: "owner settings unsigned", on: onWebhooks, method: "GET", path: "/webhooks/settings" + q, status: 401, check: wantCode(core.ECodeSignatureRequired)},
		{name: "owner settings signed for another url", on: onWebhooks, method: "GET", path: "/webhooks/settings" + unknown, header: sg.get(ownerSecret, "/webhooks/settings"+unknown), status: 401, check: wantCode(core.ECodeInvalidSignature)},
		{name: "owner settings admin unknown", on: onWebhooks, method: "GET", path: "/webhooks/settings" + unknown, header: admin, status: 404},
		{name: "owner settings no url", on: onWebhooks, method: "GET", path: "/webhooks/settings", status: 422, req: reqInvalid},

		{name: "owner deliveries", on: onWebhooks, method: "GET", path: "/webhooks/deliveries" + q, header: sg.get(ownerSecret, "/webhooks/deliveries"+q), status: 200, check: wantItems("items", 2)},
		{name: "owner deliveries unsigned", on: onWebhooks, method: "GET", path: "/webhooks/deliveries" + q, status: 401},
		{name: "owner deliveries admin unknown", on: onWebhooks, method: "GET", path: "/webhooks/deliveries" + unknown, header: admin, status: 404},
		{name: "owner deliveries no url", on: onWebhooks, method: "GET", path: "/webhooks/deliveries", status: 422, req: reqInvalid},

		{name: "owner delivery", on: onWebhooks, method: "GET", path: "/webhooks/deliveries/" + strconv.FormatInt(finished, 10) + q, header: sg.get(ownerSecret, "/webhooks/deliveries/"+strconv.FormatInt(finished, 10)+q), status: 200, check: wantField("state", "failed")},
		{name: "owner delivery unsigned", on: onWebhooks, method: "GET", path: "/webhooks/deliveries/1" + q, status: 401},
		{name: "owner delivery missing", on: onWebhooks, method: "GET", path: "/webhooks/deliveries/999999" + q, header: sg.get(ownerSecret, "/webhooks/deliveries/999999"+q), status: 404},
		{name: "owner delivery no url", on: onWebhooks, method: "GET", path: "/webhooks/deliveries/1", status: 422, req: reqInvalid},

		{name: "owner replay", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: sg.body(ownerSecret, replayOne(finished)), body: replayOne(finished), status: 202, check: wantItems("replayed", 1)},
		{name: "owner replay queued", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: sg.body(ownerSecret, replayOne(pending)), body: replayOne(pending), status: 409},
		{name: "owner replay missing", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: sg.body(ownerSecret, replayOne(999999)), body: replayOne(999999), status: 404},
		{name: "owner replay nothing named", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: sg.body(ownerSecret, `{"url":"`+ownerHook+`"}`), body: `{"url":"` + ownerHook + `"}`, status: 422, req: reqAny},
		{name: "owner replay unsigned", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: jsonType, body: replayOne(finished), status: 401},
		{name: "owner replay malformed", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: jsonType, body: `[`, status: 400, req: reqInvalid},
		{name: "owner replay too big", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: jsonType, body: big, status: 413, req: reqAny},
		{name: "owner replay text", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: text, body: replayOne(finished), status: 415, req: reqInvalid},

		{name: "owner rotate", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: sg.body(rotateSecret, `{"url":"`+rotateHook+`","overlapSeconds":60}`), body: `{"url":"` + rotateHook + `","overlapSeconds":60}`, status: 200},
		{name: "owner rotate with the old secret", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: sg.body(rotateSecret, `{"url":"`+rotateHook+`"}`), body: `{"url":"` + rotateHook + `"}`, status: 401, check: wantCode(core.ECodeInvalidSignature)},
		{name: "owner rotate overlap too long", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: admin, body: `{"url":"` + rotateHook + `","overlapSeconds":604801}`, status: 422, req: reqInvalid},
		{name: "owner rotate unknown field", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: admin, body: `{"url":"` + rotateHook + `","types":[]}`, status: 422, req: reqInvalid},
		{name: "owner rotate deactivated", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: admin, body: `{"url":"` + goneHook + `"}`, status: 409},
		{name: "owner rotate malformed", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: jsonType, body: `{`, status: 400, req: reqInvalid},
		{name: "owner rotate too big", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: jsonType, body: big, status: 413, req: reqAny},
		{name: "owner rotate text", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: text, body: `{"url":"` + rotateHook + `"}`, status: 415, req: reqInvalid},
	}
}

// ownerFailingCases run against a store that fails: 500 each.
func ownerFailingCases() []specCase {
	sg := &signer{}
	q := "?url=" + url.QueryEscape(ownerHook)
	b := `{"url":"` + ownerHook + `","ordered":true}`
	r := `{"url":"` + ownerHook + `"}`
	p := `{"url":"` + ownerHook + `","deliveryId":1}`
	return []specCase{
		{name: "owner PATCH on a failing store", on: onWebhooks, method: "PATCH", path: "/webhooks", header: sg.body(ownerSecret, b), body: b, status: 500},
		{name: "owner rotate on a failing store", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: sg.body(ownerSecret, r), body: r, status: 500},
		{name: "owner settings on a failing store", on: onWebhooks, method: "GET", path: "/webhooks/settings" + q, header: sg.get(ownerSecret, "/webhooks/settings"+q), status: 500},
		{name: "owner deliveries on a failing store", on: onWebhooks, method: "GET", path: "/webhooks/deliveries" + q, header: sg.get(ownerSecret, "/webhooks/deliveries"+q), status: 500},
		{name: "owner delivery on a failing store", on: onWebhooks, method: "GET", path: "/webhooks/deliveries/1" + q, header: sg.get(ownerSecret, "/webhooks/deliveries/1"+q), status: 500},
		{name: "owner replay on a failing store", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: sg.body(ownerSecret, p), body: p, status: 500},
	}
}

// ownerLimitedCases run once the client's bucket is empty: 429 each.
func ownerLimitedCases() []specCase {
	q := "?url=" + url.QueryEscape(ownerHook)
	b := `{"url":"` + ownerHook + `","ordered":true}`
	return []specCase{
		{name: "owner PATCH over the limit", on: onWebhooks, method: "PATCH", path: "/webhooks", header: jsonType, body: b, status: 429, req: reqAny},
		{name: "owner rotate over the limit", on: onWebhooks, method: "POST", path: "/webhooks/rotate", header: jsonType, body: b, status: 429, req: reqAny},
		{name: "owner settings over the limit", on: onWebhooks, method: "GET", path: "/webhooks/settings" + q, status: 429, req: reqAny},
		{name: "owner deliveries over the limit", on: onWebhooks, method: "GET", path: "/webhooks/deliveries" + q, status: 429, req: reqAny},
		{name: "owner delivery over the limit", on: onWebhooks, method: "GET", path: "/webhooks/deliveries/1" + q, status: 429, req: reqAny},
		{name: "owner replay over the limit", on: onWebhooks, method: "POST", path: "/webhooks/replay", header: jsonType, body: b, status: 429, req: reqAny},
	}
}
