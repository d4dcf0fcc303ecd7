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

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/govgate/govgate/sdk/abi"
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

// rewriteCode returns the code section's payload with every function body
// instrumented.
func (in *instrumenter) rewriteCode(s *section) ([]byte, error) {
	d := decoder{b: s.payload, base: s.offset}
	n, err := d.count()
	if err != nil {
		return nil, fmt.Errorf("code section: %w", err)
	}
	out := make([]byte, 0, len(s.payload)+len(s.payload)/4)
	out = appendU32(out, n)
	var f funcScan
	var body []byte
	for i := range n {
		fn := in.funcs + i // as wasm-objdump numbers functions
		size, err := d.u32()
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", fn, err)
		}
		if uint64(size) > uint64(len(d.b)-d.p) {
			return nil, fmt.Errorf("function %d: size %d past the end of the code section", fn, size)
		}
		f.reset(in, d.b[d.p:d.p+int(size)], d.base+d.p)
		if err := f.scan(); err != nil {
			return nil, fmt.Errorf("function %d: %w", fn, err)
		}
		body = f.emit(body[:0])
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
		d.p += int(size)
	}
	if err := d.end("code section"); err != nil {
		return nil, err
	}
	return out, nil
}

// Opcodes the instrumentation reads or writes.
const (
	opUnreachable  = 0x00
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0b
	opBr           = 0x0c
	opBrIf         = 0x0d
	opBrTable      = 0x0e
	opReturn       = 0x0f
	opCall         = 0x10
	opCallIndirect = 0x11
	opSelectTyped  = 0x1c
	opLocalGet     = 0x20
	opLocalTee     = 0x22
	opGlobalGet    = 0x23
	opGlobalSet    = 0x24
	opTableGet     = 0x25
	opTableSet     = 0x26
	opI32Load      = 0x28
	opI64Store32   = 0x3e
	opMemorySize   = 0x3f
	opMemoryGrow   = 0x40
	opI32Const     = 0x41
	opI64Const     = 0x42
	opF32Const     = 0x43
	opF64Const     = 0x44
	opI32Eqz       = 0x45
	opI32LeS       = 0x4c
	opI32Sub       = 0x6b
	opI32ShrU      = 0x76
	opI64Extend32S = 0xc4
	opRefNull      = 0xd0
	opRefIsNull    = 0xd1
	opRefFunc      = 0xd2
	opMiscPrefix   = 0xfc
	opSIMDPrefix   = 0xfd
	blockEmpty     = 0x40
)

// Sub-opcodes of the 0xFC prefix that take a length operand.
const (
	miscMemoryInit = 8
	miscMemoryCopy = 10
	miscMemoryFill = 11
	miscTableInit  = 12
	miscTableCopy  = 14
	miscTableGrow  = 15
	miscTableFill  = 17
)

// insertion is code to add to a body before the byte at offset at: a
// charge of the fuel of a region (a check), or of the length operand of
// a bulk instruction, scaled down by shift (a bulk charge).
type insertion struct {
	at     int
	region int // for a check
	shift  byte
	bulk   bool
}

// funcScan scans one function body. Its slices are reused across bodies.
type funcScan struct {
	in    *instrumenter
	d     decoder
	ins   []insertion
	fuel  []int32 // per region: the instructions it holds directly
	stack []int   // per open block: the region of its instructions
}

func (f *funcScan) reset(in *instrumenter, body []byte, base int) {
	f.in = in
	f.d = decoder{b: body, base: base}
	f.ins, f.fuel, f.stack = f.ins[:0], f.fuel[:0], f.stack[:0]
}

// scan reads every instruction of the body, records where the charges go
// and counts the instructions of each region. Region 0 is the function's
// code outside any loop.
func (f *funcScan) scan() error {
	d := &f.d
	if err := d.locals(); err != nil {
		return err
	}
	f.fuel = append(f.fuel, 0)
	f.stack = append(f.stack, 0)
	f.ins = append(f.ins, insertion{at: d.p, region: 0})
	for len(f.stack) > 0 {
		if d.p >= len(d.b) {
			return fmt.Errorf("at %#x: body ends inside a block", d.base+d.p)
		}
		start := d.p
		region := f.stack[len(f.stack)-1]
		if f.fuel[region] < 1<<30 {
			f.fuel[region]++
		}
		if err := f.instruction(); err != nil {
			return fmt.Errorf("at %#x: %w", d.base+start, err)
		}
	}
	if d.p != len(d.b) {
		return fmt.Errorf("at %#x: code after the end of the function", d.base+d.p)
	}
	return nil
}

// instruction reads one instruction and its immediates.
func (f *funcScan) instruction() error {
	d := &f.d
	start := d.p
	op := d.b[d.p]
	d.p++
	switch {
	case op == opBlock || op == opIf:
		if err := d.blockType(); err != nil {
			return err
		}
		f.stack = append(f.stack, f.stack[len(f.stack)-1])
	case op == opLoop:
		if err := d.blockType(); err != nil {
			return err
		}
		region := len(f.fuel)
		f.fuel = append(f.fuel, 0)
		f.stack = append(f.stack, region)
		f.ins = append(f.ins, insertion{at: d.p, region: region})
	case op == opEnd:
		f.stack = f.stack[:len(f.stack)-1]
	case op == opUnreachable, op == 0x01 /* nop */, op == opElse, op == opReturn,
		op == 0x1a /* drop */, op == 0x1b /* select */, op == opRefIsNull,
		op >= opI32Eqz && op <= opI64Extend32S:
	case op == opBr, op == opBrIf, op == opCall, op == opRefFunc,
		op >= opLocalGet && op <= opLocalTee, op == opTableGet, op == opTableSet:
		_, err := d.u32()
		return err
	case op == opGlobalGet || op == opGlobalSet:
		g, err := d.u32()
		if err != nil {
			return err
		}
		if g >= f.in.globals {
			// Invalid as it is, it would reach the fuel counter once
			// instrumented.
			return fmt.Errorf("global %d does not exist (the module has %d)", g, f.in.globals)
		}
	case op == opBrTable:
		n, err := d.count()
		if err != nil {
			return err
		}
		for range n + 1 {
			if _, err := d.u32(); err != nil {
				return err
			}
		}
	case op == opCallIndirect:
		if _, err := d.u32(); err != nil { // type
			return err
		}
		_, err := d.u32() // table
		return err
	case op == opSelectTyped:
		if n, err := d.byte(); err != nil || n != 1 {
			return errors.New("select: want one result type")
		}
		_, err := d.valueType()
		return err
	case op >= opI32Load && op <= opI64Store32:
		return d.memarg()
	case op == opMemorySize || op == opMemoryGrow:
		return d.zero()
	case op == opI32Const:
		return d.signed(32)
	case op == opI64Const:
		return d.signed(64)
	case op == opF32Const:
		return d.skip(4)
	case op == opF64Const:
		return d.skip(8)
	case op == opRefNull:
		_, err := d.refType()
		return err
	case op == opMiscPrefix:
		return f.misc(start)
	case op == opSIMDPrefix:
		return d.simd()
	default:
		return fmt.Errorf("unknown opcode %#x (not among the features the host enables)", op)
	}
	return nil
}

// misc reads an instruction of the 0xFC prefix: saturating conversions,
// bulk memory and table instructions.
func (f *funcScan) misc(start int) error {
	d := &f.d
	sub, err := d.u32()
	if err != nil {
		return err
	}
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // trunc_sat
	case miscMemoryInit:
		if _, err := d.u32(); err != nil { // data segment
			return err
		}
		err = d.zero()
	case 9: // data.drop
		_, err = d.u32()
	case miscMemoryCopy:
		if err = d.zero(); err == nil {
			err = d.zero()
		}
	case miscMemoryFill:
		err = d.zero()
	case miscTableInit, miscTableCopy: // element segment or table, table
		if _, err = d.u32(); err == nil {
			_, err = d.u32()
		}
	case 13, miscTableGrow, 16, miscTableFill: // elem.drop, table.*
		_, err = d.u32()
	default:
		return fmt.Errorf("unknown opcode 0xfc %d", sub)
	}
	if err != nil {
		return err
	}
	switch sub {
	case miscMemoryInit, miscMemoryCopy, miscMemoryFill:
		f.ins = append(f.ins, insertion{at: start, bulk: true, shift: bulkMemoryShift})
	case miscTableInit, miscTableCopy, miscTableGrow, miscTableFill:
		f.ins = append(f.ins, insertion{at: start, bulk: true, shift: bulkTableShift})
	}
	return nil
}

// simdUnassigned are the SIMD opcodes below 0x100 that wasm 2.0 leaves
// unassigned.
var simdUnassigned = map[uint32]bool{
	0x9a: true, 0xa2: true, 0xa5: true, 0xa6: true, 0xaf: true, 0xb0: true, 0xb2: true,
	0xb3: true, 0xb4: true, 0xbb: true, 0xc2: true, 0xc5: true, 0xc6: true, 0xcf: true,
	0xd0: true, 0xd2: true, 0xd3: true, 0xd4: true, 0xe2: true, 0xee: true,
}

// simd reads an instruction of the 0xFD prefix.
func (d *decoder) simd() error {
	// The spec encodes the opcode as a LEB128 u32 but wazero reads one
	// byte: 0xfd 0x80 0x01 is i16x8.abs for both (wazero reads the 0x01 as
	// a nop), but an overlong 0xfd 0x80 0x00 would be v128.load to the
	// spec and i16x8.abs then unreachable to wazero. Only the shortest
	// encoding reads the same to both.
	start := d.p
	sub, err := d.u32()
	if err != nil {
		return err
	}
	if want := 1 + boolInt(sub >= 0x80); d.p-start != want {
		return fmt.Errorf("SIMD opcode %#x not in its shortest encoding", sub)
	}
	switch {
	case sub <= 0x0b, sub == 0x5c, sub == 0x5d: // loads and stores
		return d.memarg()
	case sub == 0x0c, sub == 0x0d: // v128.const, i8x16.shuffle
		return d.skip(16)
	case sub >= 0x15 && sub <= 0x22: // extract and replace lane
		return d.skip(1)
	case sub >= 0x54 && sub <= 0x5b: // load and store lane
		if err := d.memarg(); err != nil {
			return err
		}
		return d.skip(1)
	case sub <= 0xff && !simdUnassigned[sub]:
		return nil
	}
	return fmt.Errorf("unknown opcode 0xfd %#x", sub)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// emit returns the body with the recorded insertions.
func (f *funcScan) emit(out []byte) []byte {
	body := f.d.b
	last := 0
	for _, ins := range f.ins {
		out = append(out, body[last:ins.at]...)
		last = ins.at
		if ins.bulk {
			// The length operand is on top of the stack: keep it there
			// and charge it.
			out = appendGlobalOp(out, opGlobalSet, f.in.scratch)
			out = appendGlobalOp(out, opGlobalGet, f.in.scratch)
			out = appendGlobalOp(out, opGlobalGet, f.in.fuel)
			out = appendGlobalOp(out, opGlobalGet, f.in.scratch)
			out = append(out, opI32Const, ins.shift, opI32ShrU, opI32Sub)
		} else {
			out = appendGlobalOp(out, opGlobalGet, f.in.fuel)
			out = append(out, opI32Const)
			out = appendS32(out, max(f.fuel[ins.region], 1))
			out = append(out, opI32Sub)
		}
		out = appendGlobalOp(out, opGlobalSet, f.in.fuel)
		// if fuel <= 0 { fuel = fuelPeriod; abi_v1() }
		out = appendGlobalOp(out, opGlobalGet, f.in.fuel)
		out = append(out, opI32Const, 0x00, opI32LeS, opIf, blockEmpty, opI32Const)
		out = appendS32(out, f.in.period)
		out = appendGlobalOp(out, opGlobalSet, f.in.fuel)
		out = append(out, opCall)
		out = appendU32(out, f.in.marker)
		out = append(out, opEnd)
	}
	return append(out, body[last:]...)
}

func appendGlobalOp(out []byte, op byte, idx uint32) []byte {
	return appendU32(append(out, op), idx)
}

func appendU32(out []byte, v uint32) []byte {
	for v >= 0x80 {
		out = append(out, byte(v)|0x80)
		v >>= 7
	}
	return append(out, byte(v))
}

func appendS32(out []byte, v int32) []byte {
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// decoder reads the binary format. base is the offset of b in the module,
// for error messages.
type decoder struct {
	b    []byte
	p    int
	base int
}

var errEOF = errors.New("unexpected end")

func (d *decoder) byte() (byte, error) {
	if d.p >= len(d.b) {
		return 0, errEOF
	}
	d.p++
	return d.b[d.p-1], nil
}

func (d *decoder) skip(n int) error {
	if n > len(d.b)-d.p {
		return errEOF
	}
	d.p += n
	return nil
}

// u32 reads an unsigned LEB128 of at most 32 bits, as the spec bounds it.
func (d *decoder) u32() (uint32, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		b, err := d.byte()
		if err != nil {
			return 0, err
		}
		if i == 4 && b&0xf0 != 0 {
			return 0, errors.New("integer too large")
		}
		v |= uint32(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("integer too large")
}

// signed skips a signed LEB128 of at most bits bits (32, 33 or 64).
func (d *decoder) signed(bits int) error {
	n := (bits + 6) / 7
	for i := 0; i < n; i++ {
		b, err := d.byte()
		if err != nil {
			return err
		}
		if b < 0x80 {
			if i == n-1 {
				// The unused bits of the last byte extend the sign.
				used := bits - 7*i // bits the last byte holds, sign included
				rest := b >> (used - 1) & 0x7f
				if rest != 0 && rest != 0x7f>>(used-1) {
					return errors.New("integer too large")
				}
			}
			return nil
		}
	}
	return errors.New("integer too large")
}

// count reads a vector length and checks that the vector, one byte an
// element at least, fits in what is left.
func (d *decoder) count() (uint32, error) {
	n, err := d.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n) > uint64(len(d.b)-d.p) {
		return 0, fmt.Errorf("%d elements in %d bytes", n, len(d.b)-d.p)
	}
	return n, nil
}

func (d *decoder) name() (string, error) {
	n, err := d.count()
	if err != nil {
		return "", err
	}
	s := string(d.b[d.p : d.p+int(n)])
	d.p += int(n)
	return s, nil
}

// end checks that a section was read to its end.
func (d *decoder) end(what string) error {
	if d.p != len(d.b) {
		return fmt.Errorf("%s: %d bytes left over", what, len(d.b)-d.p)
	}
	return nil
}

// zero reads the reserved 0x00 byte of memory instructions (a memory index
// in later versions of wasm).
func (d *decoder) zero() error {
	if b, err := d.byte(); err != nil || b != 0 {
		return errors.New("reserved byte not zero")
	}
	return nil
}

func (d *decoder) valueType() (byte, error) {
	t, err := d.byte()
	if err != nil {
		return 0, err
	}
	switch t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f: // i32 i64 f32 f64 v128 funcref externref
		return t, nil
	}
	return 0, fmt.Errorf("unknown value type %#x", t)
}

func (d *decoder) valueTypes() (uint32, error) {
	n, err := d.count()
	if err != nil {
		return 0, err
	}
	for range n {
		if _, err := d.valueType(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (d *decoder) refType() (byte, error) {
	t, err := d.byte()
	if err != nil {
		return 0, err
	}
	if t != 0x70 && t != 0x6f {
		return 0, fmt.Errorf("unknown reference type %#x", t)
	}
	return t, nil
}

func (d *decoder) limits() error {
	flag, err := d.byte()
	if err != nil {
		return err
	}
	if flag > 1 {
		return fmt.Errorf("unknown limits flag %#x", flag)
	}
	if _, err := d.u32(); err != nil {
		return err
	}
	if flag == 1 {
		_, err = d.u32()
	}
	return err
}

func (d *decoder) globalType() error {
	if _, err := d.valueType(); err != nil {
		return err
	}
	if mut, err := d.byte(); err != nil || mut > 1 {
		return errors.New("bad global mutability")
	}
	return nil
}

// constExpr reads a constant expression of wasm 2.0: one instruction and
// end.
func (d *decoder) constExpr() error {
	op, err := d.byte()
	if err != nil {
		return err
	}
	switch op {
	case opI32Const:
		err = d.signed(32)
	case opI64Const:
		err = d.signed(64)
	case opF32Const:
		err = d.skip(4)
	case opF64Const:
		err = d.skip(8)
	case opRefNull:
		_, err = d.refType()
	case opRefFunc, opGlobalGet:
		_, err = d.u32()
	case opSIMDPrefix:
		if b, berr := d.byte(); berr != nil || b != 0x0c {
			return errors.New("constant expression: want v128.const")
		}
		err = d.skip(16)
	default:
		return fmt.Errorf("constant expression: unexpected opcode %#x", op)
	}
	if err != nil {
		return err
	}
	if b, err := d.byte(); err != nil || b != opEnd {
		return errors.New("constant expression: want end")
	}
	return nil
}

// blockType reads the type of block, loop or if: empty, one value type, or
// a type index as a non-negative signed 33-bit integer.
func (d *decoder) blockType() error {
	if d.p >= len(d.b) {
		return errEOF
	}
	switch d.b[d.p] {
	case blockEmpty, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		d.p++
		return nil
	}
	start := d.p
	if err := d.signed(33); err != nil {
		return err
	}
	// A negative index is a value type this decoder does not know; its
	// last byte has the sign bit set.
	if d.b[d.p-1]&0x40 != 0 {
		return fmt.Errorf("unknown block type %#x", d.b[start])
	}
	return nil
}

func (d *decoder) memarg() error {
	if _, err := d.u32(); err != nil { // alignment
		return err
	}
	_, err := d.u32() // offset
	return err
}

// locals skips a function's local declarations.
func (d *decoder) locals() error {
	n, err := d.count()
	if err != nil {
		return fmt.Errorf("locals: %w", err)
	}
	for range n {
		if _, err := d.u32(); err != nil {
			return fmt.Errorf("locals: %w", err)
		}
		if _, err := d.valueType(); err != nil {
			return fmt.Errorf("locals: %w", err)
		}
	}
	return nil
}
