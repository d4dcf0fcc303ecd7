package core_test

import (
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
	"core/wasmhost": {"core", "sdk/abi"},
	// The dev chain serves what the gateway connects to.
	"core/devchain": {"core", "core/chain"},
	// The plugin manager is the application service over the wasm host.
	"core/pluginmgr": {"core", "core/wasmhost"},
	// The configuration embeds the adapters' own config structs.
	"core/config": {"core", "core/chain", "core/health", "core/indexer"},
	// The admin page is a client of the admin API.
	"web":          {"core", "core/httpapi"},
	"sdk/receiver": {},
	"sdk/abi":      {},
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
