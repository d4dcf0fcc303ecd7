package wasmhost

import (
	"errors"
	"fmt"
)

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
