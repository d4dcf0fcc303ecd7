package wasmhost

// Why plugins are instrumented
//
// A plugin that loops forever must be stopped at its call deadline, and,
// while it runs, the gateway's garbage collector must not wait for it: a
// stop-the-world waits for every goroutine to reach a safe point, and
// compiled wasm has none. wazero's WithCloseOnContextDone solves both by
// making every loop header of the compiled code call a trampoline that
// checks the module's exit code, which costs Go-compiled plugins (a loop in
// nearly every function) a factor of six per call. It also leaves a hole:
// recursion without a loop is never checked.
//
// Instead the host rewrites each plugin's bytecode before compiling it, as
// wasmtime's fuel does: a counter (a global appended to the module) is
// charged at the entry of every function and at the head of every loop, and
// when it runs out the code calls the plugin's own import govgate.abi_v1,
// which the host implements as "stop the call if its deadline has passed".
// Each such call leaves the compiled code for Go, a safe point, so a
// garbage collection waits at most one fuel period, and a deadline is
// overrun by at most one period.
//
// A period must be short in time whatever the plugin does, so a charge is
// not 1 but an upper bound of the instructions that can run before the next
// charge in the same frame: every instruction that the loop (or the
// function's code outside any loop) holds directly, outside its nested
// loops. Control only jumps backwards to a loop head, which charges again,
// so one pass through a region runs each of its direct instructions at most
// once. Bulk memory and table instructions, whose time grows with their
// length operand, are charged that length too.
//
// The decoder below reads every instruction of the features that wazero
// enables by default (core features 2.0: MVP, sign extension, multi-value,
// non-trapping conversions, bulk memory, reference types, SIMD) and refuses
// anything else rather than guessing its length: a misread length would
// hide a loop from the instrumentation. It is written here, on the standard
// library, because wazero's decoder is internal and no maintained Go
// library for wasm binaries exists; wazero still validates the result.
//
// The instrumenter is split by what it reads and writes, as wazero's
// decoder is: instrument.go runs it over a module; instrument_sections.go
// cuts the module into sections and reads the ones before the code;
// instrument_code.go scans each function body and writes the charges in;
// instrument_decode.go reads and writes the binary format's encodings
// (LEB128 integers, names, types, limits, constant expressions).

import (
	"bytes"
	"errors"
	"fmt"
)

const (
	// fuelPeriod is the fuel between two calls to the host, each of which
	// costs under 0.1 µs. A Go plugin runs a small part of the code it is
	// charged for (every turn of a loop charges the whole function, which
	// Go compiles as one loop around a br_table): BenchmarkPluginCall's
	// filter calls the host about 85 times in a 65 µs call, 6 µs of it. The
	// worst code, a pointer chase where every load misses the caches, runs
	// a period in about 9 ms; a tight loop in 0.1 ms (BenchmarkFuelPeriod).
	// 2^20 would save 6 µs a call and make that worst period 70 ms.
	fuelPeriod = 1 << 17
	// bulkMemoryShift and bulkTableShift scale the length operand of a
	// bulk memory instruction (bytes) and of a bulk table one (elements) to
	// fuel. A charge stays below 2^31, so the counter cannot wrap.
	bulkMemoryShift = 3
	bulkTableShift  = 1
)

// errNoMarker: the module does not import govgate.abi_v1, so it cannot be
// instrumented; checkModule refuses such a module with a message that says
// what it is (another ABI version, or not a plugin).
var errNoMarker = errors.New("no marker import")

// instrumenter holds what the sections before the code tell about the
// module.
type instrumenter struct {
	module  []byte
	period  int32  // fuel between two calls to the host
	marker  uint32 // function index of the govgate.abi_v1 import
	funcs   uint32 // imported functions
	globals uint32 // globals of the original module, imported and defined
	fuel    uint32 // index of the appended fuel counter
	scratch uint32 // index of the appended scratch global
}

// instrument returns the module with the fuel accounting added, or an error
// wrapping ErrInvalidPlugin (errNoMarker when it does not import the
// marker). The output depends on the input alone, so that the compilation
// cache finds it again.
func instrument(wasm []byte) ([]byte, error) {
	in := &instrumenter{module: wasm, period: fuelPeriod}
	out, err := in.run()
	if err != nil {
		if errors.Is(err, errNoMarker) {
			return nil, err
		}
		return nil, fmt.Errorf("instrument: %w: %w", err, ErrInvalidPlugin)
	}
	return out, nil
}

func (in *instrumenter) run() ([]byte, error) {
	if !bytes.HasPrefix(in.module, wasmHeader) {
		return nil, errors.New("not a WebAssembly binary (version 1)")
	}
	sections, err := splitSections(in.module)
	if err != nil {
		return nil, err
	}
	var typ, imp, glob, exp, code *section
	for i := range sections {
		s := &sections[i]
		switch s.id {
		case secType:
			typ = s
		case secImport:
			imp = s
		case secGlobal:
			glob = s
		case secExport:
			exp = s
		case secCode:
			code = s
		}
	}
	emptyTypes, err := readTypes(typ)
	if err != nil {
		return nil, err
	}
	importedGlobals, err := in.readImports(imp, emptyTypes)
	if err != nil {
		return nil, err
	}
	definedGlobals, err := countGlobals(glob)
	if err != nil {
		return nil, err
	}
	in.globals = importedGlobals + definedGlobals
	in.fuel, in.scratch = in.globals, in.globals+1
	if err := in.checkExports(exp); err != nil {
		return nil, err
	}
	var newCode []byte
	if code != nil {
		if newCode, err = in.rewriteCode(code); err != nil {
			return nil, err
		}
	}

	out := make([]byte, 0, len(in.module)+len(in.module)/8)
	out = append(out, wasmHeader...)
	globalsDone := false
	for _, s := range sections {
		switch {
		case s.id == secCustom && isDebugSection(s.payload):
			// DWARF addresses code by offset, which the rewrite shifts:
			// wazero would print wrong source lines in stack traces.
			continue
		case s.id == secGlobal:
			out = appendSection(out, secGlobal, in.appendGlobals(s.payload, definedGlobals))
			globalsDone = true
			continue
		case !globalsDone && s.id != secCustom && sectionRank[s.id] > sectionRank[secGlobal]:
			out = appendSection(out, secGlobal, in.appendGlobals(nil, 0))
			globalsDone = true
		}
		if s.id == secCode {
			out = appendSection(out, secCode, newCode)
			continue
		}
		out = append(out, s.raw...)
	}
	if !globalsDone {
		out = appendSection(out, secGlobal, in.appendGlobals(nil, 0))
	}
	return out, nil
}
