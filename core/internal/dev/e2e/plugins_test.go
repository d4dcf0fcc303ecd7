package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/sdk/plugintest"
)

// TestPluginsFilterAndTransformDeliveries runs govgate with plugins loaded
// from a directory: a global dao-filter drops other DAOs' notifications for
// every webhook, and one webhook's own chain turns the body into a Slack
// message. The signature covers exactly the transformed bytes sent.
func TestPluginsFilterAndTransformDeliveries(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"dao-filter", "slack"} {
		wasm := plugintest.Build(t, filepath.Join("..", "..", "..", "..", "plugins", name))
		if err := os.WriteFile(filepath.Join(dir, name+".wasm"), wasm, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rcv := newReceiver(t)
	db, _ := sqliteURL(t)
	p := startGovgate(t, db, rcv.caFile, deliveryConfig, "GOVGATE_PLUGINS_DIR="+dir)
	waitFor(t, "the directory's plugins to load", 30*time.Second, func() bool {
		_, body := do(t, "GET", "http://"+p.admin+"/admin/api/plugins", adminToken, nil)
		return strings.Count(string(body), `"loaded":true`) == 2
	})
	rcv.setSecret("/plain", p.register(t, rcv.url("/plain")))
	rcv.setSecret("/slack", p.register(t, rcv.url("/slack")))
	put := func(path string, v any) {
		resp, body := do(t, "PUT", "http://"+p.admin+path, adminToken, v)
		if resp.StatusCode != 200 {
			t.Fatalf("PUT %s: %d %s", path, resp.StatusCode, body)
		}
	}
	put("/admin/api/chain", map[string]any{"items": []any{map[string]any{"plugin": "dao-filter", "config": map[string]any{"daos": []string{"uniswap"}}}}})
	put("/admin/api/webhooks/2/chain", map[string]any{"items": []any{map[string]any{"plugin": "slack", "config": map[string]any{}}}})

	p.notify(t, "ntf-kept", "uniswap", map[string]any{"proposalId": "7", "voter": "0x8E4ED221fa034245F14205f781E0b13C5bd6a42E", "support": 1, "weight": "1000000000000000000", "reason": "yes"})
	p.notify(t, "ntf-dropped", "ens", map[string]any{"proposalId": "8"})
	waitFor(t, "both webhooks to get the uniswap notification", 20*time.Second, func() bool {
		return rcv.count("/plain", "ntf-kept") == 1 && rcv.count("/slack", "ntf-kept") == 1
	})
	rcv.mu.Lock()
	plain, slack := rcv.bodies["/plain ntf-kept"], rcv.bodies["/slack ntf-kept"]
	rcv.mu.Unlock()
	var n struct{ ID, Type string }
	if json.Unmarshal(plain, &n); n.ID != "ntf-kept" {
		t.Fatalf("plain body %s", plain)
	}
	var msg struct {
		Text   string
		Blocks []any
	}
	if err := json.Unmarshal(slack, &msg); err != nil || msg.Text == "" || len(msg.Blocks) == 0 {
		t.Fatalf("slack body %s (%v)", slack, err)
	}
	// The receiver verified the signature over these exact bytes; the
	// dropped notification never arrives and its drop is on record.
	var list struct {
		Items []struct {
			NotificationID string
			State          string
			AttemptLog     []struct{ Outcome, Error, PluginTrace string }
		}
	}
	waitFor(t, "the drop to be recorded", 10*time.Second, func() bool {
		_, body := do(t, "GET", "http://"+p.admin+"/admin/api/webhooks/2/deliveries", adminToken, nil)
		json.Unmarshal(body, &list)
		for _, d := range list.Items {
			if d.NotificationID == "ntf-dropped" && d.State == "dropped" {
				return true
			}
		}
		return false
	})
	for _, d := range list.Items {
		if len(d.AttemptLog) == 0 || !strings.Contains(d.AttemptLog[0].PluginTrace, `"plugin":"dao-filter"`) {
			t.Errorf("delivery %s has no plugin trace: %+v", d.NotificationID, d.AttemptLog)
		}
		if d.NotificationID == "ntf-kept" && !strings.Contains(d.AttemptLog[0].PluginTrace, `"plugin":"slack"`) {
			t.Errorf("the slack step is not in the trace: %s", d.AttemptLog[0].PluginTrace)
		}
	}
	if rcv.count("/plain", "ntf-dropped")+rcv.count("/slack", "ntf-dropped") != 0 {
		t.Fatal("a filtered notification was delivered")
	}
	// A chain naming an unknown plugin is refused and changes nothing.
	resp, body := do(t, "PUT", "http://"+p.admin+"/admin/api/chain", adminToken, map[string]any{"items": []any{map[string]any{"plugin": "nope"}}})
	if resp.StatusCode != 422 || !strings.Contains(string(body), "invalid_request") {
		t.Fatalf("unknown plugin in chain: %d %s", resp.StatusCode, body)
	}
	// So is a config that does not match the plugin's JSON Schema.
	resp, body = do(t, "PUT", "http://"+p.admin+"/admin/api/chain", adminToken, map[string]any{"items": []any{map[string]any{"plugin": "dao-filter", "config": map[string]any{"daos": "uniswap"}}}})
	if resp.StatusCode != 422 || !strings.Contains(string(body), "invalid_request") || !strings.Contains(string(body), "/daos") {
		t.Fatalf("config against its schema: %d %s", resp.StatusCode, body)
	}
	_, body = do(t, "GET", "http://"+p.admin+"/admin/api/chain", adminToken, nil)
	if !strings.Contains(string(body), `"daos":["uniswap"]`) {
		t.Fatalf("a refused chain changed the stored one: %s", body)
	}
	_ = fmt.Sprint
}
