package calldata

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// registry holds functions of one source by selector, in the order the
// source lists them: a selector can name several functions (collisions,
// some of them made on purpose), and each is tried in turn.
type registry struct {
	bySelector map[[4]byte][]*method
	// named maps a canonical signature to the first of its functions that
	// names its parameters, to name the arguments of a call decoded from a
	// source without names.
	named map[string]*method
	n     int
}

func newRegistry() *registry {
	return &registry{bySelector: map[[4]byte][]*method{}, named: map[string]*method{}}
}

// add registers m, once per canonical signature.
func (r *registry) add(m *method) {
	for _, o := range r.bySelector[m.selector] {
		if o.sig == m.sig {
			if !o.named && m.named {
				*o = *m
				r.named[m.sig] = o
			}
			return
		}
	}
	r.bySelector[m.selector] = append(r.bySelector[m.selector], m)
	if m.named {
		if _, ok := r.named[m.sig]; !ok {
			r.named[m.sig] = m
		}
	}
	r.n++
}

// abiEntry is the part of a JSON ABI entry that decoding needs.
type abiEntry struct {
	Type   string     `json:"type"`
	Name   string     `json:"name"`
	Inputs []abiParam `json:"inputs"`
}

type abiParam struct {
	Name       string     `json:"name"`
	Type       string     `json:"type"`
	Components []abiParam `json:"components"`
}

// parseABI reads the functions of a JSON ABI: an array of entries, or an
// object whose "abi" is one (Hardhat's and Foundry's artifacts).
func parseABI(raw []byte, source string) ([]*method, error) {
	var entries []abiEntry
	if err := json.Unmarshal(raw, &entries); err != nil {
		var artifact struct {
			ABI []abiEntry `json:"abi"`
		}
		if err2 := json.Unmarshal(raw, &artifact); err2 != nil || artifact.ABI == nil {
			return nil, fmt.Errorf("want a JSON ABI (an array, or an object with \"abi\"): %w", err)
		}
		entries = artifact.ABI
	}
	var out []*method
	for _, e := range entries {
		if e.Type != "function" && e.Type != "" {
			continue
		}
		params := make([]param, len(e.Inputs))
		for i, in := range e.Inputs {
			p, err := abiToParam(in, 0)
			if err != nil {
				return nil, fmt.Errorf("function %s: input %d: %w", e.Name, i, err)
			}
			params[i] = p
		}
		m, err := newMethod(e.Name, params, source)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func abiToParam(in abiParam, depth int) (param, error) {
	if depth > maxNesting {
		return param{}, errors.New("nested too deeply")
	}
	// The type string is a signature's type without a name: tuple[2][]
	// and the like parse as one.
	p := &sigParser{s: strings.TrimSpace(in.Type)}
	var q param
	if strings.HasPrefix(p.s, "tuple") {
		p.pos = len("tuple")
		q.Base = "tuple"
		for _, c := range in.Components {
			cp, err := abiToParam(c, depth+1)
			if err != nil {
				return q, err
			}
			q.Comps = append(q.Comps, cp)
		}
		rest, err := (&sigParser{s: "x" + p.s[p.pos:]}).param(depth)
		if err != nil || rest.Name != "" {
			return q, fmt.Errorf("invalid type %q", in.Type)
		}
		q.Dims = rest.Dims
	} else {
		t, err := p.param(depth)
		if err != nil || t.Name != "" || t.Base == "tuple" {
			return q, fmt.Errorf("invalid type %q", in.Type)
		}
		q = t
	}
	q.Name = in.Name
	return q, checkParam(q, depth)
}

// abiKey places an operator's ABI: one contract address on one chain, or
// on every chain for chain 0.
type abiKey struct {
	chain uint64
	addr  common.Address
}

// loadABIDir reads dir/<address>.json (for every chain) and
// dir/<chain id>/<address>.json (for that chain only).
func loadABIDir(dir string) (map[abiKey]*registry, error) {
	out := map[abiKey]*registry{}
	load := func(path string, chain uint64) error {
		name := filepath.Base(path)
		addr := strings.TrimSuffix(name, filepath.Ext(name))
		if !common.IsHexAddress(addr) || !strings.HasPrefix(strings.ToLower(addr), "0x") {
			return fmt.Errorf("%s: want a file named <0x address>.json", path)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		ms, err := parseABI(raw, SourceABI)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		r := newRegistry()
		for _, m := range ms {
			r.add(m)
		}
		out[abiKey{chain, common.HexToAddress(addr)}] = r
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() {
			chain, err := strconv.ParseUint(e.Name(), 10, 64)
			if err != nil || chain == 0 {
				return nil, fmt.Errorf("%s: want a folder named by a chain id", path)
			}
			sub, err := os.ReadDir(path)
			if err != nil {
				return nil, err
			}
			for _, f := range sub {
				if !f.IsDir() && strings.EqualFold(filepath.Ext(f.Name()), ".json") {
					if err := load(filepath.Join(path, f.Name()), chain); err != nil {
						return nil, err
					}
				}
			}
			continue
		}
		if strings.EqualFold(filepath.Ext(e.Name()), ".json") {
			if err := load(path, 0); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// parseSignatures reads a signatures file: one function signature a line
// (names optional), blank lines and lines starting with # skipped.
func parseSignatures(text, source string) (*registry, error) {
	r := newRegistry()
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, params, err := parseSignature(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		m, err := newMethod(name, params, source)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		r.add(m)
	}
	return r, nil
}
