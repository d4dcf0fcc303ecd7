package core_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/govgate/govgate/"

// allowed lists, for each package, the govgate packages it may import.
// Adapters depend on the domain (core) and on leaf libraries (signing,
// ssrf, secrets), never on each other; core/cmd/... wires them. The
// exceptions say why.
var allowed = map[string][]string{
	"core":          {},
	"core/chain":    {},
	"core/secrets":  {},
	"core/signing":  {},
	"core/ssrf":     {},
	"core/store":    {"core"},
	"core/httpapi":  {"core", "core/ssrf"},
	"core/delivery": {"core", "core/signing"},
	"core/health":   {"core"},
	"core/indexer":  {"core"},
	"core/tracing":  {"core"},
	"core/wasmhost": {"core", "sdk/abi"},
	// The dev chain serves what the gateway connects to.
	"core/devchain": {"core", "core/chain"},
	// The plugin manager is the application service over the wasm host.
	"core/pluginmgr": {"core", "core/wasmhost"},
	// The configuration embeds the adapters' own config structs.
	"core/config": {"core", "core/chain", "core/health", "core/indexer"},
	// The admin page is a client of the admin API.
	"web": {"core", "core/httpapi"},
	// The sdk module: standard library only (TestSDKIsStandardLibraryOnly).
	"sdk":                {"sdk/abi", "sdk/internal/guest"},
	"sdk/abi":            {},
	"sdk/internal/guest": {"sdk/abi"},
	"sdk/plugintest":     {"sdk", "sdk/abi", "sdk/internal/guest"},
	"sdk/receiver":       {},
}

type pkg struct {
	path    string
	doc     string
	imports []string
}

func list(t *testing.T, patterns ...string) []pkg {
	t.Helper()
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Doc}}\t{{join .Imports \" \"}}"}, patterns...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		p := pkg{path: strings.TrimPrefix(f[0], module), doc: f[1]}
		for _, imp := range strings.Fields(f[2]) {
			if strings.HasPrefix(imp, module) {
				p.imports = append(p.imports, strings.TrimPrefix(imp, module))
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestAdaptersDoNotImportEachOther(t *testing.T) {
	seen := 0
	for _, p := range list(t, "../core/...", "../web/...", "../sdk/...") {
		ok, listed := allowed[p.path]
		if !listed {
			continue
		}
		seen++
		for _, imp := range p.imports {
			permitted := false
			for _, a := range ok {
				if imp == a {
					permitted = true
				}
			}
			if !permitted {
				t.Errorf("%s imports %s, which the architecture does not allow (see allowed in this file)", p.path, imp)
			}
		}
	}
	if seen < len(allowed) {
		t.Errorf("checked %d of the %d packages listed; a package was renamed or removed", seen, len(allowed))
	}
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range list(t, "../...") {
		if p.doc == "" {
			t.Errorf("package %s has no package doc comment", p.path)
		}
	}
}

// TestSDKIsStandardLibraryOnly checks that the sdk, which every plugin's
// go.mod requires, is a module that requires nothing and whose packages,
// tests included, import only the standard library and the sdk itself, on
// the host and for wasip1: a plugin's build list is the sdk module alone.
func TestSDKIsStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "mod", "edit", "-json", "../sdk/go.mod").Output()
	if err != nil {
		t.Fatalf("go mod edit: %v", err)
	}
	var mod struct {
		Module  struct{ Path string }
		Require []struct{ Path string }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Module.Path != module+"sdk" {
		t.Errorf("sdk/go.mod is module %q, want %q", mod.Module.Path, module+"sdk")
	}
	for _, r := range mod.Require {
		t.Errorf("sdk/go.mod requires %s: the sdk must use the standard library only", r.Path)
	}
	for _, env := range [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}} {
		cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...")
		cmd.Dir = "../sdk"
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "[") {
				continue // the package a test variant is built for
			}
			p = strings.TrimSuffix(strings.TrimSuffix(p, ".test"), "_test")
			if p != module+"sdk" && !strings.HasPrefix(p, module+"sdk/") {
				t.Errorf("%v: the sdk imports %s", env, p)
			}
		}
	}
}
