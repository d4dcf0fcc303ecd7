package container_test

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/govgate/govgate/core/internal/config"
)

const (
	composeDir    = "../../../../../configs/compose"
	containerfile = "../../../../../configs/Containerfile"
	// configInImage is where `govgate serve` finds its configuration in the
	// image: configs/govgate.yaml under the working directory, /.
	configInImage = "/configs/govgate.yaml"
	binaryInImage = "/usr/local/bin/govgate"
)

// composeFile is the part of the Compose specification the checks read.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

// exampleSecrets are the values the checks give the variables that
// compose.env.example lists.
var exampleSecrets = map[string]string{
	"GOVGATE_SECRET_KEY":  "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	"POSTGRES_PASSWORD":   "compose-test-password",
	"GOVGATE_ADMIN_TOKEN": "compose-test-token",
}

// TestComposeFile checks every govgate service of compose.yaml against
// govgate itself: its command is `serve` with flags serve accepts, the
// configuration file it mounts loads and validates with core/internal/config under
// the image's and the service's environment, every variable it sets is one
// core/internal/config reads, its healthcheck probes the listeners it runs, and the
// ports it publishes are those listeners' ports.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(composeDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	documented := envExampleNames(t)
	text := interpolate(t, string(raw), documented)
	var cf composeFile
	if err := yaml.Unmarshal([]byte(text), &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	imageEnv := containerfileEnv(t)

	listeners := map[string]int{}
	govgates := 0
	for name, svc := range cf.Services {
		if !strings.Contains(svc.Image, "govgate") {
			continue
		}
		govgates++
		t.Run(name, func(t *testing.T) {
			if len(svc.Command) == 0 || svc.Command[0] != "serve" {
				t.Fatalf("command %q: want serve and its flags (the image's entrypoint is govgate)", svc.Command)
			}
			// The flags of `govgate serve` (core/cmd/govgate/serve.go).
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cfgPath := fs.String("config", "", "")
			only := map[string]bool{}
			fs.Func("only", "", func(v string) error { return addOnly(only, v) })
			if err := fs.Parse(svc.Command[1:]); err != nil {
				t.Fatalf("command %q: %v", svc.Command, err)
			}
			if fs.NArg() > 0 {
				t.Fatalf("command %q: serve takes no arguments, got %q", svc.Command, fs.Args())
			}
			if len(only) == 0 {
				only = map[string]bool{"api": true, "webhooks": true, "admin": true}
			}
			for l := range only {
				listeners[l]++
			}

			// The configuration file: mounted from beside compose.yaml.
			inContainer := *cfgPath
			if inContainer == "" {
				inContainer = configInImage
			} else if !filepath.IsAbs(inContainer) {
				inContainer = "/" + inContainer
			}
			hostPath := ""
			for _, v := range svc.Volumes {
				parts := strings.Split(v, ":")
				if len(parts) >= 2 && parts[1] == inContainer {
					hostPath = filepath.Join(composeDir, parts[0])
				}
			}
			if hostPath == "" {
				t.Fatalf("no volume mounts the configuration at %s", inContainer)
			}

			env := map[string]string{}
			for k, v := range imageEnv {
				env[k] = v
			}
			for k, v := range svc.Environment {
				env[k] = v
			}
			read := map[string]bool{}
			cfg, err := config.Load(hostPath, true, func(name string) string {
				read[name] = true
				return env[name]
			})
			if err != nil {
				t.Fatalf("%s with this service's environment: %v", hostPath, err)
			}
			for k := range svc.Environment {
				if !read[k] {
					t.Errorf("environment: core/internal/config does not read %s", k)
				}
			}
			if _, ok := svc.Environment[config.EnvSecretKey]; !ok && !strings.HasPrefix(cfg.DatabaseURL, "sqlite:") {
				t.Errorf("environment: %s is required with PostgreSQL", config.EnvSecretKey)
			}
			if len(cfg.Chains) == 0 || len(cfg.DAOs) == 0 {
				t.Errorf("%s: %d chains and %d DAOs: want both", hostPath, len(cfg.Chains), len(cfg.DAOs))
			}

			// Published ports are the ports the service's listeners bind.
			addrs := map[string]string{"api": cfg.API.Addr, "webhooks": cfg.Webhooks.Addr, "admin": cfg.Admin.Addr}
			want := map[string]bool{}
			for l := range only {
				host, port, _ := net.SplitHostPort(addrs[l])
				if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
					t.Errorf("%s listens on %s: unreachable from outside the container (want 0.0.0.0)", l, addrs[l])
				}
				want[port] = true
			}
			for _, p := range svc.Ports {
				parts := strings.Split(p, ":")
				if port := parts[len(parts)-1]; !want[port] {
					t.Errorf("ports: %q publishes %s, which none of its listeners (%v) binds", p, port, keys(only))
				}
			}

			// The healthcheck probes exactly the listeners the service runs.
			hc := svc.Healthcheck.Test
			wantHC := []string{"CMD", binaryInImage, "healthcheck"}
			if len(hc) < len(wantHC) || !slices.Equal(hc[:len(wantHC)], wantHC) {
				t.Fatalf("healthcheck %q: want it to start with %q", hc, wantHC)
			}
			hfs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
			hfs.SetOutput(io.Discard)
			hfs.String("config", "", "")
			hfs.Bool("live", false, "")
			hfs.Duration("timeout", 0, "")
			checked := map[string]bool{}
			hfs.Func("only", "", func(v string) error { return addOnly(checked, v) })
			if err := hfs.Parse(hc[len(wantHC):]); err != nil {
				t.Fatalf("healthcheck %q: %v", hc, err)
			}
			if len(checked) == 0 {
				checked["api"] = true
			}
			if !sameSet(checked, only) {
				t.Errorf("healthcheck probes %v, the service runs %v", keys(checked), keys(only))
			}
		})
	}
	if govgates == 0 {
		t.Fatal("no govgate service in compose.yaml")
	}
	for _, l := range []string{"api", "webhooks", "admin"} {
		if listeners[l] == 0 {
			t.Errorf("no service runs the %s listener", l)
		}
	}
}

func addOnly(set map[string]bool, v string) error {
	for _, part := range strings.Split(v, ",") {
		switch part {
		case "api", "webhooks", "admin":
			set[part] = true
		default:
			return fmt.Errorf("want api, webhooks or admin, got %q", part)
		}
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sameSet(a, b map[string]bool) bool { return slices.Equal(keys(a), keys(b)) }

// variable is Compose's interpolation: ${NAME}, ${NAME:-default},
// ${NAME-default}, ${NAME:?error}, ${NAME?error}.
var variable = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// interpolate substitutes the variables of a Compose file as Compose does
// with exampleSecrets set, and checks that compose.env.example documents
// every variable the file uses.
func interpolate(t *testing.T, text string, documented map[string]bool) string {
	t.Helper()
	return variable.ReplaceAllStringFunc(text, func(m string) string {
		g := variable.FindStringSubmatch(m)
		name, op, arg := g[1], g[2], g[3]
		if !documented[name] {
			t.Errorf("compose.yaml uses ${%s}, which compose.env.example does not list", name)
		}
		if v, ok := exampleSecrets[name]; ok {
			return v
		}
		switch op {
		case ":-", "-":
			return arg
		case ":?", "?":
			t.Errorf("${%s} is required (%s) but has no example value in this test", name, arg)
		}
		return ""
	})
}

// envExampleNames returns the variables compose.env.example lists, set or
// commented out.
func envExampleNames(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(composeDir, "compose.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	assignment := regexp.MustCompile(`^#?\s*([A-Z_][A-Z0-9_]*)=`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := assignment.FindStringSubmatch(sc.Text()); m != nil {
			names[m[1]] = true
		}
	}
	for name := range exampleSecrets {
		if !names[name] {
			t.Errorf("compose.env.example does not list %s", name)
		}
	}
	return names
}

// containerfileEnv returns the variables the Containerfile's ENV
// instructions set (KEY=VALUE form), after checking that core/internal/config reads
// each GOVGATE_ one.
func containerfileEnv(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(containerfile)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	joined := strings.ReplaceAll(string(raw), "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ENV ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("Containerfile: ENV %q: use the KEY=VALUE form", rest)
			}
			env[k] = v
		}
	}
	read := map[string]bool{}
	if _, err := config.Load("", false, func(name string) string { read[name] = true; return env[name] }); err != nil {
		t.Fatalf("Containerfile: ENV: %v", err)
	}
	for k := range env {
		if strings.HasPrefix(k, "GOVGATE_") && !read[k] {
			t.Errorf("Containerfile: ENV %s: core/internal/config does not read it", k)
		}
	}
	if len(env) == 0 {
		t.Fatal("Containerfile: no ENV instruction")
	}
	return env
}
