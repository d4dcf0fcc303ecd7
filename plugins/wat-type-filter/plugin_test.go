// Package wattypefilter_test checks the hand-written plugin.wat: that the
// committed plugin.wasm is built from it and that it behaves in the
// gateway's host.
package wattypefilter_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/govgate/govgate/sdk"
	"github.com/govgate/govgate/sdk/plugintest"
)

func wasm(t *testing.T) []byte {
	b, err := os.ReadFile("plugin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPlugin(t *testing.T) {
	n := func(typ string) sdk.Notification {
		return sdk.Notification{ID: "n", Type: typ, DAO: "ens", Data: json.RawMessage(`{}`)}
	}
	list := json.RawMessage(`{"types": ["proposal.created", "proposal.executed"]}`)
	plugintest.CheckWasm(t, wasm(t),
		plugintest.Case{Name: "first of the list", Input: n("proposal.created"), Config: list, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "last of the list", Input: n("proposal.executed"), Config: list, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "not listed", Input: n("vote.cast"), Config: list, Want: &plugintest.Want{Keep: false}},
		plugintest.Case{Name: "the key is not a type", Input: n("types"), Config: list, Want: &plugintest.Want{Keep: false}},
		plugintest.Case{Name: "empty list", Input: n("test"), Config: json.RawMessage(`{"types":[]}`), Want: &plugintest.Want{Keep: false}},
		plugintest.Case{Name: "no config", Input: n("test"), Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "large body", Input: n("vote.cast"), Body: bytes.Repeat([]byte("x"), 300<<10), Config: list, Want: &plugintest.Want{Keep: false}},
	)
}

// TestBuiltFromSource rebuilds plugin.wasm when wat2wasm (Debian package
// wabt) is installed and checks that the committed one is the same.
func TestBuiltFromSource(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm not installed (apt-get install wabt)")
	}
	out := filepath.Join(t.TempDir(), "plugin.wasm")
	if msg, err := exec.Command(wat2wasm, "plugin.wat", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, msg)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, wasm(t)) {
		t.Error("plugin.wasm is stale: run wat2wasm plugin.wat -o plugin.wasm")
	}
}
