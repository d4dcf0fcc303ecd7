// Command vulncheck runs govulncheck (pinned in go.mod as a tool) on the
// module and the sdk module against the Go vulnerability database as of a
// pinned version of golang.org/x/vulndb, fetched through the Go module proxy
// like any module: vuln.go.dev cannot be reached from the machines this
// project runs on, and a pinned database gives every run the same answer.
// Bump vulnDB to take newer reports.
//
// It fails on every vulnerability the code calls, except those
// .lint/vulncheck-accepted.txt lists with a reason (a fix that needs a
// toolchain the project has not moved to, say), which it prints on every
// run; and it fails on an accepted one that is no longer found, so that the
// list stays true.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
)

// vulnDB is the version of golang.org/x/vulndb whose data/osv is the
// database (go list -m golang.org/x/vulndb@latest names the newest).
const vulnDB = "golang.org/x/vulndb@v0.0.0-20261105234957-e22db6528018"

func main() {
	accepted := flag.String("accepted", ".lint/vulncheck-accepted.txt", "vulnerabilities accepted, one ID and its reason a line")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	if err := run(*accepted, dirs); err != nil {
		fmt.Fprintln(os.Stderr, "vulncheck:", err)
		os.Exit(1)
	}
}

func run(acceptedFile string, dirs []string) error {
	accepted, err := readAccepted(acceptedFile)
	if err != nil {
		return err
	}
	db, err := database()
	if err != nil {
		return err
	}
	found := map[string]finding{}
	for _, dir := range dirs {
		cmd := exec.Command("go", "tool", "govulncheck", "-db", "file://"+db, "-format", "json", "./...")
		cmd.Dir = dir
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("govulncheck in %s: %w", dir, err)
		}
		fs, err := called(bytes.NewReader(out))
		if err != nil {
			return fmt.Errorf("govulncheck in %s: %w", dir, err)
		}
		for _, f := range fs {
			found[f.ID] = f
		}
	}
	var ids []string
	for id := range found {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var problems []string
	for _, id := range ids {
		f := found[id]
		if reason, ok := accepted[id]; ok {
			fmt.Printf("vulncheck: accepted %s in %s (fixed in %s): %s\n", id, f.Module, f.Fixed, reason)
			continue
		}
		problems = append(problems, fmt.Sprintf("%s in %s %s is called (fixed in %s): %s", id, f.Module, f.Version, f.Fixed, f.Trace))
	}
	for id := range accepted {
		if _, ok := found[id]; !ok {
			problems = append(problems, fmt.Sprintf("%s is accepted in %s but no longer found: take it out", id, acceptedFile))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return errors.New(strings.Join(problems, "\n  "))
	}
	fmt.Printf("vulncheck: no vulnerability called but the %d accepted (database %s)\n", len(accepted), vulnDB)
	return nil
}

// database downloads the pinned vulndb module (once: the module cache
// keeps it) and returns its directory of OSV reports.
func database() (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", vulnDB).Output()
	if err != nil {
		return "", fmt.Errorf("download %s: %w", vulnDB, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("download %s: %v %s", vulnDB, err, m.Error)
	}
	return m.Dir + "/data/osv", nil
}

// finding is a vulnerability the code calls.
type finding struct {
	ID, Module, Version, Fixed, Trace string
}

// called reads govulncheck's JSON stream and returns the findings whose
// trace reaches a function: the code calls the vulnerable symbol. Findings
// of a package imported or a module required, but not called, are left
// out, as govulncheck's text output leaves them.
func called(r io.Reader) ([]finding, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var out []finding
	for {
		var msg struct {
			Finding *struct {
				OSV          string `json:"osv"`
				FixedVersion string `json:"fixed_version"`
				Trace        []struct {
					Module, Version, Package, Function, Receiver string
				} `json:"trace"`
			} `json:"finding"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		f := msg.Finding
		if f == nil || len(f.Trace) == 0 || f.Trace[0].Function == "" {
			continue
		}
		t := f.Trace[0]
		var path []string
		for i := len(f.Trace) - 1; i >= 0; i-- {
			s := f.Trace[i]
			name := s.Function
			if s.Receiver != "" {
				name = s.Receiver + "." + name
			}
			path = append(path, s.Package+"."+name)
		}
		out = append(out, finding{ID: f.OSV, Module: t.Module, Version: t.Version, Fixed: f.FixedVersion, Trace: strings.Join(path, " → ")})
	}
}

// readAccepted reads "ID reason" lines; // starts a comment line.
func readAccepted(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		id, reason, _ := strings.Cut(line, " ")
		if strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s: %s has no reason", path, id)
		}
		out[id] = strings.TrimSpace(reason)
	}
	return out, nil
}
