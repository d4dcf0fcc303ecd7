package wasmhost

import (
	"fmt"
	"strings"

	"github.com/govgate/govgate/sdk/abi"
)

// Section ids, and their required order (custom sections, id 0, may go
// anywhere).
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

var sectionRank = map[byte]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secGlobal: 6,
	secExport: 7, secStart: 8, secElement: 9, secDataCount: 10, secCode: 11, secData: 12,
}

// wasmHeader is the magic number and version 1 of the binary format.
var wasmHeader = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

type section struct {
	id      byte
	raw     []byte // the whole section: id, size and payload
	payload []byte
	offset  int // of the payload in the module, for error messages
}

// splitSections cuts a module into its sections and checks their order,
// which decides where a new global section goes.
func splitSections(wasm []byte) ([]section, error) {
	var sections []section
	d := decoder{b: wasm, p: len(wasmHeader)}
	last := 0
	for d.p < len(d.b) {
		start := d.p
		id := d.b[d.p]
		d.p++
		size, err := d.u32()
		if err != nil {
			return nil, fmt.Errorf("section at %#x: %w", start, err)
		}
		if uint64(size) > uint64(len(d.b)-d.p) {
			return nil, fmt.Errorf("section at %#x: size %d past the end of the module", start, size)
		}
		s := section{id: id, payload: d.b[d.p : d.p+int(size)], offset: d.p}
		d.p += int(size)
		s.raw = d.b[start:d.p]
		if id != secCustom {
			rank, ok := sectionRank[id]
			switch {
			case !ok:
				return nil, fmt.Errorf("section at %#x: unknown section id %d", start, id)
			case rank <= last:
				return nil, fmt.Errorf("section at %#x: section id %d out of order or repeated", start, id)
			}
			last = rank
		}
		sections = append(sections, s)
	}
	return sections, nil
}

func isDebugSection(payload []byte) bool {
	d := decoder{b: payload}
	name, err := d.name()
	return err == nil && strings.HasPrefix(name, ".debug_")
}

func appendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(payload)))
	return append(out, payload...)
}

// readTypes reports, for each type of the type section, whether it is
// func() -> (), the marker's type.
func readTypes(s *section) ([]bool, error) {
	if s == nil {
		return nil, nil
	}
	d := decoder{b: s.payload, base: s.offset}
	n, err := d.count()
	if err != nil {
		return nil, fmt.Errorf("type section: %w", err)
	}
	empty := make([]bool, n)
	for i := range empty {
		if form, err := d.byte(); err != nil || form != 0x60 {
			return nil, fmt.Errorf("type %d: not a function type", i)
		}
		params, err := d.valueTypes()
		if err != nil {
			return nil, fmt.Errorf("type %d: %w", i, err)
		}
		results, err := d.valueTypes()
		if err != nil {
			return nil, fmt.Errorf("type %d: %w", i, err)
		}
		empty[i] = params == 0 && results == 0
	}
	return empty, d.end("type section")
}

// readImports finds the marker import and counts the imported globals.
func (in *instrumenter) readImports(s *section, emptyTypes []bool) (globals uint32, err error) {
	found := false
	if s != nil {
		d := decoder{b: s.payload, base: s.offset}
		n, err := d.count()
		if err != nil {
			return 0, fmt.Errorf("import section: %w", err)
		}
		for i := range n {
			mod, err := d.name()
			if err != nil {
				return 0, fmt.Errorf("import %d: %w", i, err)
			}
			name, err := d.name()
			if err != nil {
				return 0, fmt.Errorf("import %d: %w", i, err)
			}
			kind, err := d.byte()
			if err != nil {
				return 0, fmt.Errorf("import %d: %w", i, err)
			}
			switch kind {
			case 0x00: // function
				t, err := d.u32()
				if err != nil {
					return 0, fmt.Errorf("import %d: %w", i, err)
				}
				if mod == abi.HostModule && name == abi.ImportMarker && !found {
					if int(t) >= len(emptyTypes) || !emptyTypes[t] {
						return 0, fmt.Errorf("imports %s.%s with the wrong signature: want func()", mod, name)
					}
					in.marker, found = in.funcs, true
				}
				in.funcs++
			case 0x01: // table
				if _, err := d.refType(); err != nil {
					return 0, fmt.Errorf("import %d: %w", i, err)
				}
				if err := d.limits(); err != nil {
					return 0, fmt.Errorf("import %d: %w", i, err)
				}
			case 0x02: // memory
				if err := d.limits(); err != nil {
					return 0, fmt.Errorf("import %d: %w", i, err)
				}
			case 0x03: // global
				if err := d.globalType(); err != nil {
					return 0, fmt.Errorf("import %d: %w", i, err)
				}
				globals++
			default:
				return 0, fmt.Errorf("import %d: unknown kind %#x", i, kind)
			}
		}
		if err := d.end("import section"); err != nil {
			return 0, err
		}
	}
	if !found {
		return 0, errNoMarker
	}
	return globals, nil
}

// countGlobals counts the globals the module defines and checks their
// initializers. A constant expression may read only imported globals, so
// it cannot reach the appended ones.
func countGlobals(s *section) (uint32, error) {
	if s == nil {
		return 0, nil
	}
	d := decoder{b: s.payload, base: s.offset}
	n, err := d.count()
	if err != nil {
		return 0, fmt.Errorf("global section: %w", err)
	}
	for i := range n {
		if err := d.globalType(); err != nil {
			return 0, fmt.Errorf("global %d: %w", i, err)
		}
		if err := d.constExpr(); err != nil {
			return 0, fmt.Errorf("global %d: %w", i, err)
		}
	}
	return n, d.end("global section")
}

// appendGlobals returns the global section's payload with the fuel counter
// and the scratch global added after the module's own, so that no existing
// index moves.
func (in *instrumenter) appendGlobals(payload []byte, n uint32) []byte {
	out := appendU32(nil, n+2)
	if payload != nil {
		d := decoder{b: payload}
		_, _ = d.u32() // read by countGlobals
		out = append(out, payload[d.p:]...)
	}
	out = append(out, 0x7f, 0x01, opI32Const) // fuel: mutable i32
	out = appendS32(out, in.period)
	out = append(out, opEnd)
	out = append(out, 0x7f, 0x01, opI32Const, 0x00, opEnd) // scratch: mutable i32 = 0
	return out
}

// checkExports refuses a module that exports a global it does not have:
// invalid as it is, it would export the fuel counter once instrumented.
func (in *instrumenter) checkExports(s *section) error {
	if s == nil {
		return nil
	}
	d := decoder{b: s.payload, base: s.offset}
	n, err := d.count()
	if err != nil {
		return fmt.Errorf("export section: %w", err)
	}
	for i := range n {
		name, err := d.name()
		if err != nil {
			return fmt.Errorf("export %d: %w", i, err)
		}
		kind, err := d.byte()
		if err != nil {
			return fmt.Errorf("export %s: %w", name, err)
		}
		idx, err := d.u32()
		if err != nil {
			return fmt.Errorf("export %s: %w", name, err)
		}
		if kind == 0x03 && idx >= in.globals {
			return fmt.Errorf("export %s: global %d does not exist (the module has %d)", name, idx, in.globals)
		}
	}
	return d.end("export section")
}
