package calldata

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"
)

// curatedJSON is the curated set: the functions governance proposals call
// on well-known contracts, as signatures with parameter names, grouped by
// the published ABI each comes from. curated/gen.sh writes it.
//
//go:embed curated.json
var curatedJSON []byte

var (
	curatedOnce sync.Once
	curatedReg  *registry
	curatedErr  error
)

// curatedRegistry parses the curated set once per process.
func curatedRegistry() (*registry, error) {
	curatedOnce.Do(func() {
		var f struct {
			Sources []struct {
				From      string   `json:"from"`
				Functions []string `json:"functions"`
			} `json:"sources"`
		}
		if curatedErr = json.Unmarshal(curatedJSON, &f); curatedErr != nil {
			return
		}
		r := newRegistry()
		for _, s := range f.Sources {
			for _, fn := range s.Functions {
				name, params, err := parseSignature(fn)
				var m *method
				if err == nil {
					m, err = newMethod(name, params, SourceCurated)
				}
				if err != nil {
					curatedErr = fmt.Errorf("%s: %w", s.From, err)
					return
				}
				r.add(m)
			}
		}
		curatedReg = r
	})
	return curatedReg, curatedErr
}
