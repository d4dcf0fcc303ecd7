package wasmhost

import (
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/govgate/govgate/sdk/abi"
)

// skeletons holds the plugin skeletons that "govgate plugin new" writes, one
// folder per language; each file is a text/template named as written, with
// .tmpl appended (and gitignore for .gitignore, which embed would skip).
//
//go:embed skeleton
var skeletons embed.FS

// Versions the skeletons require. SDKVersion is the sdk module's version
// tag (sdk/vX.Y.Z), used when --sdk does not point at a local checkout.
const (
	SDKVersion            = "v0.1.0"
	SDKPackageVersion     = "^0.1.0"
	AssemblyScriptVersion = "0.28.20"
)

// Languages "govgate plugin new" writes skeletons in.
var Languages = []string{"go", "assemblyscript"}

// skeletonData is what the templates see.
type skeletonData struct {
	Name       string
	SDK        string // the local sdk directory, absolute, or ""
	SDKVersion string
	SDKPackage string // the @govgate/sdk dependency, as a JSON string
	ASVersion  string
}

// NewPlugin writes the skeleton of a plugin called name in lang into dir,
// which must not exist or be empty. sdkDir, when not "", is a local
// checkout's sdk directory: the skeleton then builds against it (a Go
// replace directive, an npm file: dependency) instead of the published SDK.
// It returns the paths written, relative to dir.
func NewPlugin(dir, name, lang, sdkDir string) ([]string, error) {
	if !abi.ValidName(name) {
		return nil, fmt.Errorf("new plugin: name %q: want lowercase letters, digits and inner '.', '_' or '-', at most 64 bytes", name)
	}
	root := path.Join("skeleton", lang)
	if _, err := fs.Stat(skeletons, root); err != nil {
		return nil, fmt.Errorf("new plugin: language %q: want one of %s", lang, strings.Join(Languages, ", "))
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("new plugin: %s is not empty", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("new plugin: %w", err)
	}
	data := skeletonData{Name: name, SDKVersion: SDKVersion, ASVersion: AssemblyScriptVersion}
	pkg := SDKPackageVersion
	if sdkDir != "" {
		abs, err := filepath.Abs(sdkDir)
		if err != nil {
			return nil, fmt.Errorf("new plugin: %w", err)
		}
		if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
			return nil, fmt.Errorf("new plugin: --sdk %s: not the sdk directory of a govgate checkout: %w", sdkDir, err)
		}
		data.SDK = abs
		pkg = "file:" + filepath.Join(abs, "assemblyscript")
	}
	q, _ := json.Marshal(pkg)
	data.SDKPackage = string(q)

	var written []string
	err := fs.WalkDir(skeletons, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".tmpl")
		if path.Base(rel) == "gitignore" {
			rel = path.Join(path.Dir(rel), ".gitignore")
		}
		text, err := fs.ReadFile(skeletons, p)
		if err != nil {
			return err
		}
		t, err := template.New(rel).Option("missingkey=error").Parse(string(text))
		if err != nil {
			return err
		}
		out := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		if err := t.Execute(f, data); err != nil {
			return errors.Join(err, f.Close())
		}
		if err := f.Close(); err != nil {
			return err
		}
		written = append(written, rel)
		return nil
	})
	if err != nil {
		return written, fmt.Errorf("new plugin: %w", err)
	}
	return written, nil
}

func cliNew(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugin new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lang := fs.String("lang", "go", "language of the skeleton: "+strings.Join(Languages, " or "))
	parent := fs.String("dir", ".", "directory to create the plugin's folder in")
	sdkDir := fs.String("sdk", "", "a govgate checkout's sdk directory, to build against instead of the published SDK")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, cliUsage)
		return 2
	}
	dir := filepath.Join(*parent, pos[0])
	files, err := NewPlugin(dir, pos[0], *lang, *sdkDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(dir, f))
	}
	switch *lang {
	case "go":
		fmt.Fprintf(stdout, "next: cd %s && go test ./... && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o %s.wasm . && govgate plugin test %s.wasm\n", dir, pos[0], pos[0])
	case "assemblyscript":
		fmt.Fprintf(stdout, "next: cd %s && npm install && npm run build && govgate plugin test build/%s.wasm\n", dir, pos[0])
	}
	return 0
}
