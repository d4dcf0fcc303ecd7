// Package astypefilter_test builds the AssemblyScript plugin and checks it:
// its samples and cases in the gateway's host, its answers against those of
// the Go event-filter on the same inputs, and its size.
package astypefilter_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/govgate/govgate/sdk"
	"github.com/govgate/govgate/sdk/plugintest"
)

var (
	buildOnce sync.Once
	built     []byte
	buildErr  string
)

// wasm builds the plugin with the npm packages of its folder, running npm ci
// first when node_modules is missing. Without node and npm it skips the
// test, except under CI=true, where .ci/run installs what the tests need.
func wasm(t *testing.T) []byte {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; CI must install it (.ci/run)", tool)
			}
			t.Skipf("%s is not installed: building the AssemblyScript plugin needs Node.js 20 and npm", tool)
		}
	}
	buildOnce.Do(func() {
		if _, err := os.Stat("node_modules"); err != nil {
			if out, err := exec.Command("npm", "ci", "--no-audit", "--no-fund").CombinedOutput(); err != nil {
				buildErr = "npm ci: " + err.Error() + "\n" + string(out)
				return
			}
		}
		dir, err := os.MkdirTemp("", "as-type-filter-")
		if err != nil {
			buildErr = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "plugin.wasm")
		if msg, err := exec.Command(filepath.Join("node_modules", ".bin", "asc"), "--config", "asconfig.json", "--outFile", out).CombinedOutput(); err != nil {
			buildErr = "asc: " + err.Error() + "\n" + string(msg)
			return
		}
		built, err = os.ReadFile(out)
		if err != nil {
			buildErr = err.Error()
		}
	})
	if buildErr != "" {
		t.Fatal(buildErr)
	}
	return built
}

func n(typ string) sdk.Notification {
	return sdk.Notification{ID: "n", Type: typ, DAO: "ens", Data: json.RawMessage(`{"weight":"1"}`)}
}

var list = json.RawMessage(`{"types": ["proposal.created", "proposal.executed"]}`)

func TestPlugin(t *testing.T) {
	plugintest.CheckWasm(t, wasm(t),
		plugintest.Case{Name: "first of the list", Input: n("proposal.created"), Config: list, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "last of the list", Input: n("proposal.executed"), Config: list, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "not listed", Input: n("vote.cast"), Config: list, Want: &plugintest.Want{Reason: `type "vote.cast" is not in the list`}},
		plugintest.Case{Name: "the key is not a type", Input: n("types"), Config: list, Want: &plugintest.Want{Reason: `type "types" is not in the list`}},
		plugintest.Case{Name: "quoted in the reason", Input: n(`a"b\c`), Config: list, Want: &plugintest.Want{Reason: `type "a\"b\\c" is not in the list`}},
		plugintest.Case{Name: "escaped in the config", Input: n("vote.cast"), Config: json.RawMessage(`{"types":["vote\u002ecast"]}`), Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "empty list keeps all", Input: n("test"), Config: json.RawMessage(`{"types":[]}`), Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "no config", Input: n("test"), Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "unknown key", Input: n("test"), Config: json.RawMessage(`{"type":["test"]}`), Want: &plugintest.Want{Error: `unknown field "type"`}},
		plugintest.Case{Name: "not JSON", Input: n("test"), Config: json.RawMessage(`{"types":[`), Want: &plugintest.Want{Error: "decode config"}},
		plugintest.Case{Name: "long type, reason cut", Input: n(string(bytes.Repeat([]byte("é"), 400))), Config: list, Want: &plugintest.Want{Keep: false}},
		plugintest.Case{Name: "large body", Input: n("vote.cast"), Body: bytes.Repeat([]byte("x"), 300<<10), Config: list, Want: &plugintest.Want{Keep: false}},
	)
}

// TestSameAsGo runs the AssemblyScript filter and the Go event-filter, which
// share the types config and the wording of a drop, on the same inputs, and
// fails when they answer differently.
func TestSameAsGo(t *testing.T) {
	as := wasm(t)
	goFilter := plugintest.Build(t, filepath.Join("..", "event-filter"))
	var cases []plugintest.Case
	for _, cfg := range []string{`{"types":["proposal.created","vote.cast"]}`, `{"types":[]}`, `{}`, ``, `{"types":["test"]}`, `{"typo":1}`, `[`} {
		for _, typ := range []string{"proposal.created", "vote.cast", "proposal.queued", "test", "vote", "é"} {
			cases = append(cases, plugintest.Case{Name: typ + " with " + cfg, Input: n(typ), Config: json.RawMessage(cfg)})
		}
	}
	plugintest.Compare(t, goFilter, as, cases...)
}

// TestSize keeps the module small: an AssemblyScript plugin has no runtime
// to carry beyond its allocator and garbage collector.
func TestSize(t *testing.T) {
	if b := wasm(t); len(b) >= 100<<10 {
		t.Errorf("the module is %d bytes, want under 100 KB", len(b))
	}
}
