package wasmhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/govgate/govgate/sdk/abi"
)

// The instrumenter is checked the way wazero checks its compilers
// (internal/integration_test/fuzz): differentially. A fuzzed program runs as
// written and as instrumented, in two runtimes, and must end the same way:
// the same result, or a trap of the same kind, and the same memory. Only the
// fuel accounting may differ, and it calls a host function that does
// nothing. Random bytes are rarely a valid module, so
// FuzzInstrumentKeepsBehaviour builds one from them: genProgram reads the
// bytes as choices of a small code generator whose programs always
// validate and always end (every loop counts down), with blocks, ifs,
// branches out, loops nested three deep, locals, a global, loads and
// stores, bulk memory and traps. FuzzInstrumentModule mutates whole modules
// instead: whatever it is given, the instrumenter must not panic, and a
// module that compiles must still compile instrumented.

// FuzzInstrumentKeepsBehaviour: a generated program behaves the same with
// and without instrumentation, at a fuel period short enough that the host
// is called.
func FuzzInstrumentKeepsBehaviour(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		bytes.Repeat([]byte{opLoop, 3, 200, 17, 9}, 8),   // nested loops
		bytes.Repeat([]byte{21, 7, 13, 99, 250, 4}, 12),  // memory and branches
		[]byte("the instrumenter keeps behaviour"),       // anything
		bytes.Repeat([]byte{0xff, 0x80, 0x41, 0x0e}, 16), // high choices
	} {
		f.Add(seed, uint32(7))
	}
	r := newDiffRuntime(f)
	f.Fuzz(func(t *testing.T, choices []byte, arg uint32) {
		wasm := genProgram(choices)
		out, err := (&instrumenter{module: wasm, period: 64}).run()
		if err != nil {
			t.Fatalf("instrument a valid program: %v\nmodule %x", err, wasm)
		}
		want, err := r.run(wasm, arg)
		if err != nil {
			t.Fatalf("the generated program does not run: %v\nmodule %x", err, wasm)
		}
		got, err := r.run(out, arg)
		if err != nil {
			t.Fatalf("the instrumented program does not run: %v\nmodule %x", err, wasm)
		}
		if got != want {
			t.Fatalf("instrumented: %+v\nas written:   %+v\nmodule %x", got, want, wasm)
		}
	})
}

// FuzzInstrumentModule: any bytes. The instrumenter refuses or rewrites;
// what it rewrites from a module that compiles compiles too.
func FuzzInstrumentModule(f *testing.F) {
	f.Add(genProgram([]byte("seed")))
	f.Add(rawModule(nil, []byte{opI32Const, 0, opEnd}))
	f.Add(rawModule(nil, []byte{opLoop, blockEmpty, opLocalGet, 0, opBrIf, 0, opEnd, opI32Const, 1, opEnd}))
	f.Add(wasmHeader)
	r := newDiffRuntime(f)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := instrument(wasm)
		if err != nil {
			if !errors.Is(err, ErrInvalidPlugin) && !errors.Is(err, errNoMarker) {
				t.Fatalf("instrument failed without saying the plugin is invalid: %v", err)
			}
			return
		}
		if _, err := r.CompileModule(context.Background(), wasm); err != nil {
			return // invalid as written: the host refuses it either way
		}
		if _, err := r.CompileModule(context.Background(), out); err != nil {
			t.Fatalf("valid as written, invalid instrumented: %v\nmodule %x", err, wasm)
		}
	})
}

// diffRuntime runs modules in wazero's interpreter (compiling a fuzzed
// module to machine code would cost more than running it), with
// govgate.abi_v1 as a host function that does nothing.
type diffRuntime struct{ wazero.Runtime }

func newDiffRuntime(tb testing.TB) *diffRuntime {
	ctx := context.Background()
	r := &diffRuntime{wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())}
	tb.Cleanup(func() { r.Close(context.Background()) })
	if _, err := r.NewHostModuleBuilder(abi.HostModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) {}), nil, nil).Export(abi.ImportMarker).Instantiate(ctx); err != nil {
		tb.Fatal(err)
	}
	return r
}

// runEnd is how a run ended: the result or the trap (its first line: the
// stack trace below it names offsets that instrumentation moves), and a
// digest of the memory.
type runEnd struct {
	result uint32
	trap   string
	memory [32]byte
}

func (r *diffRuntime) run(wasm []byte, arg uint32) (runEnd, error) {
	ctx := context.Background()
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		return runEnd{}, err
	}
	defer compiled.Close(ctx)
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return runEnd{}, err
	}
	defer mod.Close(ctx)
	var o runEnd
	res, err := mod.ExportedFunction("f").Call(ctx, uint64(arg))
	if err != nil {
		o.trap, _, _ = strings.Cut(err.Error(), "\n")
	} else {
		o.result = uint32(res[0])
	}
	mem, _ := mod.Memory().Read(0, mod.Memory().Size())
	o.memory = sha256.Sum256(mem)
	return o, nil
}

// genProgram builds a module (the marker import, one page of memory, a
// mutable i32 global, and f(i32) -> i32 with five i32 locals, exported with
// the memory) whose body choices decides. Each choice byte picks the next
// instruction among those valid at that point; the generator keeps the
// operand stack's depth, so every program validates, and counts every loop
// down from at most 7, so every program ends.
func genProgram(choices []byte) []byte {
	g := &gen{choices: choices}
	g.block(0)
	g.settle(0)
	if g.depth == 0 {
		g.code = append(g.code, opI32Const, 0)
	}
	for ; g.depth > 1; g.depth-- {
		g.code = append(g.code, opDrop)
	}
	g.code = append(g.code, opEnd)
	body := cat([]byte{1, 5, 0x7f}, g.code) // five i32 locals
	return cat(wasmHeader,
		wasmSection(secType, wasmVec([]byte{0x60, 0, 0}, []byte{0x60, 1, 0x7f, 1, 0x7f})),
		wasmSection(secImport, wasmVec(cat(wasmName("govgate"), wasmName("abi_v1"), []byte{0, 0}))),
		wasmSection(secFunction, wasmVec([]byte{1})),
		wasmSection(secMemory, wasmVec([]byte{0, 1})),
		wasmSection(secGlobal, wasmVec([]byte{0x7f, 1, opI32Const, 0, opEnd})),
		wasmSection(secExport, wasmVec(cat(wasmName("f"), []byte{0, 1}), cat(wasmName("m"), []byte{2, 0}))),
		wasmSection(secCode, wasmVec(cat(uleb(uint32(len(body))), body))),
	)
}

const (
	opDrop     = 0x1a
	opLocalSet = 0x21
	opI32Ad    = 0x6a
)

// gen is genProgram's state. Locals: 0 is the argument, 1 to 3 count the
// loops at depth 1 to 3 down (nothing else writes them), 4 is free.
type gen struct {
	choices []byte
	code    []byte
	depth   int    // operand stack depth, in i32s
	labels  []bool // open blocks, innermost last: true for a loop
	loops   int
	size    int
}

func (g *gen) next() (byte, bool) {
	if len(g.choices) == 0 || g.size > 4000 {
		return 0, false
	}
	c := g.choices[0]
	g.choices = g.choices[1:]
	return c, true
}

// settle drops what a block left above depth.
func (g *gen) settle(depth int) {
	for ; g.depth > depth; g.depth-- {
		g.code = append(g.code, opDrop)
	}
}

// block emits instructions until the choices run out or one ends the block.
func (g *gen) block(nesting int) {
	for {
		c, ok := g.next()
		if !ok {
			return
		}
		g.size++
		arg := byte(0)
		if len(g.choices) > 0 {
			arg = g.choices[0]
		}
		switch c % 24 {
		case 0, 1: // i32.const
			g.code = append(g.code, opI32Const)
			g.code = appendS32(g.code, int32(int8(arg))*int32(arg))
			g.depth++
		case 2:
			g.code = append(g.code, opLocalGet, 0)
			g.depth++
		case 3:
			g.code = append(g.code, opLocalGet, 4)
			g.depth++
		case 4:
			if g.depth > 0 {
				g.code = append(g.code, opLocalTee, 4)
			}
		case 5:
			g.code = append(g.code, opGlobalGet, 0)
			g.depth++
		case 6:
			if g.depth > 0 {
				g.code = append(g.code, opGlobalSet, 0)
				g.depth--
			}
		case 7, 8, 9: // a binary operator: add, sub, mul, div_u (may trap), rem_s (may trap), and, xor, shl, rotl
			if g.depth >= 2 {
				ops := []byte{opI32Ad, opI32Sub, 0x6c, 0x6e, 0x6f, 0x71, 0x73, 0x74, 0x77}
				g.code = append(g.code, ops[int(arg)%len(ops)])
				g.depth--
			}
		case 10: // i32.eqz
			if g.depth > 0 {
				g.code = append(g.code, opI32Eqz)
			}
		case 11: // i32.load at a masked address, or at any (may trap)
			if g.depth > 0 {
				if arg&1 == 0 {
					g.code = append(g.code, opI32Const, 0xfc, 0x1f, 0x71) // i32.const 4092; i32.and
				}
				g.code = append(g.code, opI32Load, 2, 0)
			}
		case 12: // i32.store
			if g.depth >= 2 {
				g.code = append(g.code, opLocalSet, 4, opI32Const, 0xfc, 0x1f, 0x71, opLocalGet, 4, 0x36, 2, 0)
				g.depth -= 2
			}
		case 13: // memory.fill(dst & 0xfff, value, len & 0xff): bulk fuel
			if g.depth >= 3 {
				g.code = append(g.code, opI32Const, 0xff, 0x01, 0x71, opLocalSet, 4, opLocalSet, 4) // keep it simple: len = value & 0xff
				g.code = append(g.code, opI32Const, 0xff, 0x1f, 0x71, opLocalGet, 4, opLocalGet, 4, opI32Const, 0xff, 0x01, 0x71, opMiscPrefix, miscMemoryFill, 0)
				g.depth -= 3
			}
		case 14: // memory.copy(dst & 0xfff, src & 0xfff, 64)
			if g.depth >= 2 {
				g.code = append(g.code, opI32Const, 0xff, 0x1f, 0x71, opLocalSet, 4, opI32Const, 0xff, 0x1f, 0x71, opLocalGet, 4, opI32Const, 0xc0, 0x00, opMiscPrefix, miscMemoryCopy, 0, 0)
				g.depth -= 2
			}
		case 15: // block
			if nesting < 6 {
				d := g.depth
				g.code = append(g.code, opBlock, blockEmpty)
				g.labels = append(g.labels, false)
				g.depth = 0
				g.block(nesting + 1)
				g.settle(0)
				g.code = append(g.code, opEnd)
				g.labels = g.labels[:len(g.labels)-1]
				g.depth = d
			}
		case 16: // if … else … end
			if nesting < 6 && g.depth > 0 {
				d := g.depth - 1
				g.code = append(g.code, opIf, blockEmpty)
				g.labels = append(g.labels, false)
				g.depth = 0
				g.block(nesting + 1)
				g.settle(0)
				if arg&1 == 1 {
					g.code = append(g.code, opElse)
					g.block(nesting + 1)
					g.settle(0)
				}
				g.code = append(g.code, opEnd)
				g.labels = g.labels[:len(g.labels)-1]
				g.depth = d
			}
		case 17: // a loop counted down from arg & 7
			if g.loops < 3 && nesting < 6 {
				g.loops++
				counter := byte(g.loops)
				d := g.depth
				g.code = append(g.code, opI32Const, arg&7, opLocalSet, counter, opLoop, blockEmpty)
				g.labels = append(g.labels, true)
				g.depth = 0
				g.block(nesting + 1)
				g.settle(0)
				// counter--; br_if 0 while it is above zero (as signed)
				g.code = append(g.code, opLocalGet, counter, opI32Const, 1, opI32Sub, opLocalTee, counter, opI32Const, 0, 0x4a /* i32.gt_s */, opBrIf, 0, opEnd)
				g.labels = g.labels[:len(g.labels)-1]
				g.loops--
				g.depth = d
			}
		case 18: // br_if out of a block or if (never back to a loop's head)
			if g.depth > 0 {
				for i := len(g.labels) - 1; i >= 0; i-- {
					if !g.labels[i] && int(arg)%(len(g.labels)-i+1) == 0 {
						g.code = append(g.code, opBrIf)
						g.code = appendU32(g.code, uint32(len(g.labels)-1-i))
						g.depth--
						break
					}
				}
			}
		case 19: // end the block here
			return
		case 20: // unreachable, rarely
			if arg == 0xff {
				g.code = append(g.code, opUnreachable)
				return // what follows would be unreachable code, typed as anything
			}
		case 21:
			if g.depth > 0 {
				g.code = append(g.code, opDrop)
				g.depth--
			}
		case 22: // select
			if g.depth >= 3 {
				g.code = append(g.code, 0x1b)
				g.depth -= 2
			}
		case 23: // memory.size
			g.code = append(g.code, opMemorySize, 0)
			g.depth++
		}
	}
}

// TestGenProgramIsValid: the generator's programs validate and run,
// whatever the choices; the fuzzer's failures then mean the instrumenter.
func TestGenProgramIsValid(t *testing.T) {
	r := newDiffRuntime(t)
	for i := range 200 {
		var choices [64]byte
		for j := range choices {
			binary.LittleEndian.PutUint32(choices[j&^3:], uint32(i*2654435761)+uint32(j))
			choices[j] ^= byte(i * j)
		}
		if _, err := r.run(genProgram(choices[:]), uint32(i)); err != nil {
			t.Fatalf("choices %x: %v", choices, err)
		}
	}
}
