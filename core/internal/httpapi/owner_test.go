package httpapi_test

import (
	"context"
	"testing"

	"github.com/govgate/govgate/core"
)

// A consumer request that is replayed, signed with a wrong secret, or names
// a url nobody registered is refused with a stable code and changes
// nothing: settings and secret stay as they were, and an unknown url
// answers exactly what a wrong secret does.
func TestRefusedOwnerRequestsChangeNothing(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		ctx := context.Background()
		if _, _, err := e.store.RegisterWebhook(ctx, ownerHook, ownerSecret); err != nil {
			t.Fatal(err)
		}
		sg := &signer{}
		patch := `{"url":"` + ownerHook + `","types":["vote.cast"],"ordered":true}`
		rotate := `{"url":"` + ownerHook + `","overlapSeconds":0}`
		send := func(method, path string, h map[string]string, body string) response {
			return do(t, e.webhooks.Client(), method, e.webhooks.URL+path, h, body)
		}
		state := func() (core.Webhook, string) {
			wh, secret, err := e.store.OwnerSecret(ctx, ownerHook)
			if err != nil {
				t.Fatal(err)
			}
			return wh, secret
		}
		before, secretBefore := state()

		wrong := send("PATCH", "/webhooks", sg.body(rotateSecret, patch), patch)
		wantError(t, wrong, 401, core.ECodeInvalidSignature)
		unknownBody := `{"url":"https://nobody.example.com/","types":["vote.cast"]}`
		unknown := send("PATCH", "/webhooks", sg.body(ownerSecret, unknownBody), unknownBody)
		wantError(t, unknown, 401, core.ECodeInvalidSignature)
		if string(wrong.body) != string(unknown.body) {
			t.Errorf("a wrong secret and an unknown url answer differently:\n%s\n%s", wrong.body, unknown.body)
		}
		wantError(t, send("POST", "/webhooks/rotate", sg.body(rotateSecret, rotate), rotate), 401, core.ECodeInvalidSignature)
		if after, secret := state(); secret != secretBefore || !equalSettings(after.Settings, before.Settings) {
			t.Fatalf("a refused request changed the webhook: %+v", after.Settings)
		}

		// The genuine request, then the same bytes again.
		h := sg.body(ownerSecret, rotate)
		if r := send("POST", "/webhooks/rotate", h, rotate); r.status != 200 {
			t.Fatalf("rotate: %s", r)
		}
		_, rotated := state()
		wantError(t, send("POST", "/webhooks/rotate", h, rotate), 401, core.ECodeInvalidSignature)
		// Signed anew with the old secret within the window: still refused.
		wantError(t, send("POST", "/webhooks/rotate", sg.body(ownerSecret, rotate), rotate), 401, core.ECodeInvalidSignature)
		h = sg.body(rotated, patch)
		if r := send("PATCH", "/webhooks", h, patch); r.status != 200 {
			t.Fatalf("patch: %s", r)
		}
		patched, _ := state()
		// A replay of the PATCH's exact request is refused, even though the
		// secret is still current.
		wantError(t, send("PATCH", "/webhooks", h, patch), 401, core.ECodeReplayedRequest)
		if after, secret := state(); secret != rotated || !equalSettings(after.Settings, patched.Settings) {
			t.Fatalf("a replayed request changed the webhook: %+v", after.Settings)
		}
	})
}

func equalSettings(a, b core.WebhookSettings) bool {
	return a.Ordered == b.Ordered && a.Throttle == b.Throttle && slicesEqual(a.Types, b.Types) && slicesEqual(a.DAOs, b.DAOs)
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
