package core_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/govgate/govgate/"

// layers places every package of the module in the architecture: for each,
// the govgate packages it may import. A package not listed here fails
// TestLayering, so a new package must be placed before its test compiles
// green. The domain (core) depends on nothing; adapters depend on the domain
// and on leaf libraries (signing, ssrf, secrets), never on each other;
// core/cmd/... wires them. Development tooling lives under core/internal/dev
// and may use what it needs; the production binary links none of it
// (TestProductionBinaryLinksNoDevTooling). The exceptions say why.
var layers = map[string][]string{
	"core":                  {},
	"core/internal/chain":   {},
	"core/internal/secrets": {},
	"core/internal/signing": {},
	"core/internal/ssrf":    {},
	// The owner of a process's goroutines: a leaf, used by the commands.
	"core/internal/supervisor": {},
	"core/internal/store":      {"core", "core/internal/store/migrations"},
	// The store's schema history: gormigrate and GORM only.
	"core/internal/store/migrations": {},
	"core/internal/httpapi":          {"core", "core/internal/ssrf"},
	"core/internal/delivery":         {"core", "core/internal/signing"},
	"core/internal/health":           {"core"},
	"core/internal/indexer":          {"core"},
	// The calldata decoder: the domain's Action, go-ethereum's ABI codec.
	"core/internal/calldata": {"core"},
	"core/internal/tracing":  {"core"},
	"core/internal/wasmhost": {"core", "sdk/abi"},
	// The plugin manager is the application service over the wasm host.
	"core/internal/pluginmgr": {"core", "core/internal/wasmhost"},
	// The adapter from the plugin manager to the dispatcher, shared by the
	// two commands that wire them.
	"core/internal/plugindelivery": {"core", "core/internal/delivery", "core/internal/pluginmgr"},
	// The configuration embeds the adapters' own config structs.
	"core/internal/config": {"core", "core/internal/calldata", "core/internal/chain", "core/internal/health", "core/internal/indexer"},
	// The admin page's server renders the page's files and calls the admin
	// API over HTTP, in-process: it imports no adapter.
	"core/internal/webui": {"core", "web"},
	// The admin page's files.
	"web": {},
	// Development tooling: the dev chain serves what the gateway connects
	// to; the test servers and certificates serve the test suites.
	"core/internal/dev/devchain": {"core", "core/internal/chain"},
	"core/internal/dev/pgtest":   {},
	// The two-database test matrix every store-backed suite runs on.
	"core/internal/dev/storetest":     {"core/internal/store", "core/internal/secrets", "core/internal/dev/pgtest"},
	"core/internal/dev/rpcproxy":      {},
	"core/internal/dev/testcert":      {},
	"core/internal/dev/e2e":           {},
	"core/internal/dev/e2e/container": {},
	"core/internal/dev/schemas":       {},
	"core/internal/dev/vulncheck":     {},
	// The DAO administration the admin API's and page's tests share.
	"core/internal/dev/daoadmin": {"core"},
	// Commands wire everything.
	"core/cmd/govgate":       {"*"},
	"core/cmd/govgate-bench": {"*"},
	// Example plugins: the sdk and their shared helpers only.
	"plugins/as-type-filter":  {},
	"plugins/wat-type-filter": {},
	"plugins/dao-filter":      {"sdk"},
	"plugins/event-filter":    {"sdk"},
	"plugins/discord":         {"sdk", "plugins/internal/event"},
	"plugins/slack":           {"sdk", "plugins/internal/event"},
	"plugins/internal/event":  {"sdk"},
	// The sdk module: standard library only (TestSDKIsStandardLibraryOnly).
	"sdk":                               {"sdk/abi", "sdk/internal/guest"},
	"sdk/abi":                           {},
	"sdk/internal/guest":                {"sdk/abi"},
	"sdk/plugintest":                    {"sdk", "sdk/abi", "sdk/internal/guest"},
	"sdk/receiver":                      {},
	"sdk/receiver/cmd/example-receiver": {"sdk/receiver"},
}

type pkg struct {
	path    string
	name    string
	doc     string
	files   []string // non-test Go files
	imports []string // govgate packages, non-test
}

// list runs go list in dir (the module root) on patterns.
func list(t *testing.T, dir string, patterns ...string) []pkg {
	t.Helper()
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Doc}}\t{{join .GoFiles \" \"}}\t{{join .Imports \" \"}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 5)
		p := pkg{path: strings.TrimPrefix(f[0], module), name: f[1], doc: f[2], files: strings.Fields(f[3])}
		for _, imp := range strings.Fields(f[4]) {
			if strings.HasPrefix(imp, module) {
				p.imports = append(p.imports, strings.TrimPrefix(imp, module))
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// layering returns what is wrong with pkgs against layers: a package that is
// not placed, or an import the layering does not allow.
func layering(pkgs []pkg, layers map[string][]string) []string {
	var errs []string
	for _, p := range pkgs {
		ok, placed := layers[p.path]
		if !placed {
			errs = append(errs, fmt.Sprintf("package %s is not placed in the architecture: add it to layers in core/architecture_test.go with the packages it may import", p.path))
			continue
		}
		for _, imp := range p.imports {
			if !slices.Contains(ok, imp) && !slices.Contains(ok, "*") {
				errs = append(errs, fmt.Sprintf("%s imports %s, which the architecture does not allow (see layers in core/architecture_test.go)", p.path, imp))
			}
		}
	}
	return errs
}

func TestLayering(t *testing.T) {
	pkgs := list(t, "..", "./...", "./sdk/...")
	for _, e := range layering(pkgs, layers) {
		t.Error(e)
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.path] = true
	}
	for p := range layers {
		if !seen[p] {
			t.Errorf("layers places %s, which does not exist: remove it or follow its rename", p)
		}
	}
}

// TestLayeringDeniesAnUnplacedPackage adds a package to a copy of the module's
// layout in a temporary module and checks that the layering refuses it.
func TestLayeringDeniesAnUnplacedPackage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module "+strings.TrimSuffix(module, "/")+"\n\ngo 1.26\n")
	write("core/core.go", "// Package core is the domain.\npackage core\n")
	write("core/internal/store/store.go", "// Package store is placed.\npackage store\n\nimport _ \""+module+"core\"\n")
	write("core/internal/newthing/newthing.go", "// Package newthing is not placed.\npackage newthing\n\nimport _ \""+module+"core/internal/store\"\n")
	errs := layering(list(t, dir, "./..."), layers)
	if len(errs) != 1 || !strings.Contains(errs[0], "core/internal/newthing is not placed") {
		t.Fatalf("layering of a module with an unplaced package: %q, want one error naming core/internal/newthing", errs)
	}
}

// TestOnlyTheSDKTheDomainAndWebAreImportable checks that every library
// package outside internal/ is one that users may import: the sdk, the domain
// and the admin page's files. A folder outside internal/ may also hold a
// package of documentation alone (doc.go), the home of a plugin's tests.
func TestOnlyTheSDKTheDomainAndWebAreImportable(t *testing.T) {
	for _, p := range list(t, "..", "./...", "./sdk/...") {
		switch {
		case p.name == "main", strings.Contains("/"+p.path+"/", "/internal/"),
			p.path == "core", p.path == "web", p.path == "sdk", strings.HasPrefix(p.path, "sdk/"):
		case len(p.files) == 1 && p.files[0] == "doc.go":
		default:
			t.Errorf("package %s can be imported from outside the module: move it under internal/ (files %v)", p.path, p.files)
		}
	}
}

// TestProductionBinaryLinksNoDevTooling checks that govgate as built for
// production (go tool task build: -tags nodevchain) links no development
// tooling: no dev chain, no test certificates, no test server.
func TestProductionBinaryLinksNoDevTooling(t *testing.T) {
	cmd := exec.Command("go", "list", "-tags", "nodevchain nomsgpack", "-deps", "./core/cmd/govgate")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, module+"core/internal/dev/") || strings.Contains(dep, "/testing") || strings.HasSuffix(dep, "/testutil") {
			t.Errorf("the production govgate links %s", dep)
		}
	}
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range list(t, "..", "./...", "./sdk/...") {
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

// TestArchitectureDocNamesRealTests checks that every test the architecture
// document names as the proof of a guarantee exists, so that the document
// cannot keep pointing at a test that was renamed or removed.
func TestArchitectureDocNamesRealTests(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	err = filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := testName.FindAllString(string(doc), -1)
	if len(named) < 20 {
		t.Fatalf("docs/architecture.md names %d tests; its guarantees table should name the test of each", len(named))
	}
	for _, name := range named {
		if !defined[name] {
			t.Errorf("docs/architecture.md names %s, which no test defines", name)
		}
	}
}

// TestDocsLinksResolve checks that every relative link of the README and of
// docs/*.md points at a file or folder that exists.
func TestDocsLinksResolve(t *testing.T) {
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
		}
	}
}

var (
	testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	testName = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]+`)
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// TestArchitectureDocMapsEveryPackage checks that the package map of the
// architecture document names every package of the gateway, so a newcomer
// finds each one there.
func TestArchitectureDocMapsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "dev" {
			continue
		}
		if !strings.Contains(string(doc), "`core/internal/"+d.Name()+"`") {
			t.Errorf("docs/architecture.md's package map does not name core/internal/%s", d.Name())
		}
	}
}
