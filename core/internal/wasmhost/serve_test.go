package wasmhost

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govgate/govgate/sdk/abi"
)

// TestServe speaks the serve protocol as sdk/plugintest does: the plugin's
// description first, then one answer a line, in the ABI's encoding.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "hostile.wasm")
	if err := os.WriteFile(plugin, hostileWasm(t), 0o644); err != nil {
		t.Fatal(err)
	}
	n := abi.Notification{ID: "n1", Type: "vote.cast", DAO: "blocked", Data: json.RawMessage(`{}`)}
	request := func(hook abi.Hook, configs ...string) string {
		in := abi.Input{Notification: n, Body: []byte(`{}`), ContentType: abi.DefaultContentType}
		for _, c := range configs {
			in.Configs = append(in.Configs, json.RawMessage(c))
		}
		b, _ := json.Marshal(serveRequest{Hook: hook, Input: abi.AppendInput(nil, &in)})
		return string(b) + "\n"
	}
	stdin := request(abi.HookFilter, `{"mode":"ok"}`, `{"mode":"log","lines":1}`) +
		request(abi.HookFilter, `{"mode":"crash"}`) +
		"not json\n"
	var stdout, stderr bytes.Buffer
	status := cliServe(context.Background(), []string{plugin, "--cache-dir", testCacheDir(t)}, strings.NewReader(stdin), &stdout, &stderr)
	if status != 0 {
		t.Fatalf("status %d\n%s", status, &stderr)
	}
	d := json.NewDecoder(&stdout)
	var hello serveHello
	if err := d.Decode(&hello); err != nil || hello.Plugin == nil || hello.Plugin.Name != "hostile" {
		t.Fatalf("hello %+v, %v", hello, err)
	}
	var answers []serveResponse
	for d.More() {
		var r serveResponse
		if err := d.Decode(&r); err != nil {
			t.Fatal(err)
		}
		answers = append(answers, r)
	}
	if len(answers) != 3 {
		t.Fatalf("%d answers to 3 requests: %+v", len(answers), answers)
	}
	res, err := abi.DecodeResults(answers[0].Output, 2)
	if err != nil || res[0].Status != abi.StatusDrop || res[1].Status != abi.StatusDrop || !strings.Contains(strings.Join(answers[0].Logs, "\n"), "line 0 of n1") {
		t.Errorf("first answer: %+v %v, logs %q", res, err, answers[0].Logs)
	}
	if answers[1].Error == "" {
		t.Errorf("a trap answered %+v, want an error", answers[1])
	}
	if !strings.Contains(answers[2].Error, "decode request") {
		t.Errorf("a line that is not JSON answered %+v", answers[2])
	}

	// A plugin the host refuses is answered with why, and status 1.
	stdout.Reset()
	hello = serveHello{}
	if status := cliServe(context.Background(), []string{filepath.Join(dir, "missing.wasm")}, strings.NewReader(""), &stdout, &stderr); status != 1 {
		t.Errorf("status %d for a missing plugin", status)
	}
	if err := json.NewDecoder(&stdout).Decode(&hello); err != nil || hello.Error == "" || hello.Plugin != nil {
		t.Errorf("hello %+v, %v, want an error", hello, err)
	}
}
