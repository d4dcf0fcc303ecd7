package core_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/govgate/govgate/core"
)

// TestNotificationTypesAgreeEverywhere holds every other spelling of the
// notification types to core.NotificationTypes: the Go SDK's Type*
// constants (the sdk module cannot import core, so this reads its source),
// the AssemblyScript SDK's TYPE_* exports, the JSON Schema's per-type data
// rules (every type but test, whose data is free), and the examples (one per
// type, named after it). The admin page's list is core's own
// (webui.knownTypes), and the example plugins test theirs against it
// (plugins/internal/event).
func TestNotificationTypesAgreeEverywhere(t *testing.T) {
	want := core.NotificationTypes()
	slices.Sort(want)
	if len(slices.Compact(slices.Clone(want))) != len(want) {
		t.Fatalf("core.NotificationTypes repeats a type: %v", want)
	}
	for _, typ := range want {
		if !core.ValidNotificationType(typ) {
			t.Errorf("%q is not a valid notification type", typ)
		}
	}
	root := filepath.Join("..")
	same := func(where string, got []string, want []string) {
		t.Helper()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s has %v; core.NotificationTypes has %v", where, got, want)
		}
	}

	same("sdk/sdk.go (Type* constants)", goStringConsts(t, filepath.Join(root, "sdk", "sdk.go"), "Type"), want)

	ts, err := os.ReadFile(filepath.Join(root, "sdk", "assemblyscript", "assembly", "index.ts"))
	if err != nil {
		t.Fatal(err)
	}
	var asTypes []string
	for _, m := range regexp.MustCompile(`(?m)^export const TYPE_[A-Z_]+ = "([^"]*)";`).FindAllSubmatch(ts, -1) {
		asTypes = append(asTypes, string(m[1]))
	}
	same("sdk/assemblyscript/assembly/index.ts (TYPE_* exports)", asTypes, want)

	raw, err := os.ReadFile(filepath.Join(root, "docs", "schemas", "notification.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		AllOf []struct {
			If struct {
				Properties struct {
					Type struct {
						Const string `json:"const"`
					} `json:"type"`
				} `json:"properties"`
			} `json:"if"`
		} `json:"allOf"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	var schemaTypes []string
	for _, rule := range schema.AllOf {
		schemaTypes = append(schemaTypes, rule.If.Properties.Type.Const)
	}
	same("docs/schemas/notification.schema.json (a data rule per type)", append(schemaTypes, core.TypeTest), want)

	examples, _ := filepath.Glob(filepath.Join(root, "docs", "schemas", "examples", "*.json"))
	var exampleTypes []string
	for _, path := range examples {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		exampleTypes = append(exampleTypes, name)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var n struct{ Type string }
		if err := json.Unmarshal(raw, &n); err != nil || n.Type != name {
			t.Errorf("%s: type %q, want the file's name (%v)", path, n.Type, err)
		}
	}
	same("docs/schemas/examples (one file per type)", exampleTypes, want)
}

// goStringConsts returns the values of the string constants of a Go file
// whose names start with prefix.
func goStringConsts(t *testing.T, path, prefix string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			if !strings.HasPrefix(name.Name, prefix) || i >= len(spec.Values) {
				continue
			}
			if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, _ := strconv.Unquote(lit.Value)
				out = append(out, v)
			}
		}
		return true
	})
	return out
}
