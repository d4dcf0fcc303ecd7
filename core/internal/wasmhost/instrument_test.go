package wasmhost

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/govgate/govgate/sdk/abi"
)

// instrumentPeriod instruments wasm with a fuel period of its own, so that
// a test sees the host called often.
func instrumentPeriod(tb testing.TB, wasm []byte, period int32) []byte {
	tb.Helper()
	out, err := (&instrumenter{module: wasm, period: period}).run()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// markerRuntime is a wazero runtime as the host configures it, whose
// govgate.abi_v1 counts its calls and calls onCall, if set.
type markerRuntime struct {
	wazero.Runtime
	calls  int
	onCall func(ctx context.Context)
}

func newMarkerRuntime(tb testing.TB) *markerRuntime {
	tb.Helper()
	ctx := context.Background()
	r := &markerRuntime{Runtime: wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(sharedCache(tb)))}
	tb.Cleanup(func() { r.Close(context.Background()) })
	_, err := r.NewHostModuleBuilder(abi.HostModule).
		NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, _ []uint64) {
		r.calls++
		if r.onCall != nil {
			r.onCall(ctx)
		}
	}), nil, nil).Export(abi.ImportMarker).
		Instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

var sharedCaches = map[string]wazero.CompilationCache{}

// sharedCache is a compilation cache in the test binary's cache directory,
// so that each module is compiled once however many tests run it.
func sharedCache(tb testing.TB) wazero.CompilationCache {
	buildMu.Lock()
	defer buildMu.Unlock()
	dir := filepath.Join(testCacheDir(tb), "instrument")
	if c := sharedCaches[dir]; c != nil {
		return c
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	sharedCaches[dir] = c
	return c
}

// instantiate starts a fresh instance of wasm.
func (r *markerRuntime) instantiate(tb testing.TB, wasm []byte) api.Module {
	tb.Helper()
	ctx := context.Background()
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		tb.Fatal(err)
	}
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { mod.Close(context.Background()) })
	return mod
}

// TestInstrumentKeepsBehaviour runs each function of testdata/features,
// which uses an instruction of every kind the host enables, as compiled
// from the original module and from the instrumented one, with a short
// fuel period: the answers are the same and the host is called.
func TestInstrumentKeepsBehaviour(t *testing.T) {
	t.Parallel()
	wasm := fixture(t, "features.wasm")
	inst := instrumentPeriod(t, wasm, 50)
	for _, tc := range []struct {
		name string
		arg  uint64
	}{
		{"multivalue", 100},
		{"control", 100},
		{"bulk", 100},
		{"refs", 1},
		{"refs", 2},
		{"simd", 100},
		{"fib", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newMarkerRuntime(t)
			want, err := r.instantiate(t, wasm).ExportedFunction(tc.name).Call(ctx, tc.arg)
			if err != nil {
				t.Fatal(err)
			}
			if r.calls != 0 {
				t.Fatalf("the original module called the marker %d times", r.calls)
			}
			got, err := r.instantiate(t, inst).ExportedFunction(tc.name).Call(ctx, tc.arg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s(%d) = %v instrumented, %v as written", tc.name, tc.arg, got, want)
			}
			if r.calls == 0 {
				t.Errorf("%s(%d) never called the host", tc.name, tc.arg)
			}
		})
	}
}

// realPlugins are the plugins of this repository that do not need Node.js:
// the Go plugins of testdata, the WAT fixtures that speak ABI v1 and the
// hand-written example.
func realPlugins(tb testing.TB) map[string][]byte {
	plugins := map[string][]byte{
		"hostile":    hostileWasm(tb),
		"votefilter": buildPlugin(tb, "votefilter"),
	}
	for _, f := range []string{"features", "fuel", "initloop", "malformed", "noexports", "recursion", "spin"} {
		plugins[f] = fixture(tb, f+".wasm")
	}
	wat, err := os.ReadFile(filepath.Join("..", "..", "..", "plugins", "wat-type-filter", "plugin.wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	plugins["wat-type-filter"] = wat
	return plugins
}

// TestInstrumentPlugins instruments every real plugin: the result is the
// same every time (the compilation cache keys on it), compiles, and differs
// from the original only in its code and globals.
func TestInstrumentPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("long (instruments and compiles every plugin of the repository); not run with -short")
	}
	t.Parallel()
	check := func(t *testing.T, wasm []byte) {
		out, err := instrument(wasm)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := instrument(wasm); !bytes.Equal(out, again) {
			t.Error("instrumenting twice gave different modules")
		}
		r := newMarkerRuntime(t)
		if _, err := r.CompileModule(context.Background(), out); err != nil {
			t.Fatalf("the instrumented module does not compile: %v", err)
		}
		compareSections(t, wasm, out)
	}
	for name, wasm := range realPlugins(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, wasm)
		})
	}
	// These need Node.js; they skip without it, except under CI=true.
	t.Run("examples", func(t *testing.T) {
		for name, wasm := range examplePlugins(t) {
			t.Run(name, func(t *testing.T) { check(t, wasm) })
		}
	})
	t.Run("assemblyscript-hooks", func(t *testing.T) { check(t, asHooksWasm(t)) })
}

// compareSections checks that out has the sections of in, in the same
// order and byte for byte, except the global section (two more globals),
// the code section (as many bodies) and the DWARF sections (dropped).
func compareSections(t *testing.T, in, out []byte) {
	t.Helper()
	a, err := splitSections(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := splitSections(out)
	if err != nil {
		t.Fatal(err)
	}
	counts := func(ss []section, id byte) (n uint32, found bool) {
		for _, s := range ss {
			if s.id == id {
				d := decoder{b: s.payload}
				n, _ = d.u32()
				return n, true
			}
		}
		return 0, false
	}
	ga, _ := counts(a, secGlobal)
	if gb, ok := counts(b, secGlobal); !ok || gb != ga+2 {
		t.Errorf("global section of %d globals, want %d", gb, ga+2)
	}
	ca, _ := counts(a, secCode)
	if cb, _ := counts(b, secCode); cb != ca {
		t.Errorf("%d function bodies, want %d", cb, ca)
	}
	var keep, got [][]byte
	for _, s := range a {
		if s.id != secGlobal && s.id != secCode && !(s.id == secCustom && isDebugSection(s.payload)) {
			keep = append(keep, s.raw)
		}
	}
	for _, s := range b {
		if s.id != secGlobal && s.id != secCode {
			got = append(got, s.raw)
		}
	}
	if !slices.EqualFunc(keep, got, bytes.Equal) {
		t.Errorf("the other sections changed: %d sections kept, %d after", len(keep), len(got))
	}
}

// The hand-assembled modules below are for what WAT cannot express:
// invalid code, unknown opcodes, odd encodings.

func wasmVec(items ...[]byte) []byte {
	out := uleb(uint32(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func wasmSection(id byte, payload []byte) []byte {
	return append(append([]byte{id}, uleb(uint32(len(payload)))...), payload...)
}

func wasmName(s string) []byte { return append(uleb(uint32(len(s))), s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// rawModule assembles a module that imports govgate.abi_v1 (of type
// markerType, func() when nil), has a memory page, one mutable i32 global
// and one function of type func(i32) -> i32, exported as "f", whose body
// (after a declaration of no locals) is code. extra sections go at the end.
func rawModule(markerType []byte, code []byte, extra ...[]byte) []byte {
	if markerType == nil {
		markerType = []byte{0x60, 0, 0}
	}
	body := append([]byte{0}, code...)
	return cat(wasmHeader,
		wasmSection(secType, wasmVec(markerType, []byte{0x60, 1, 0x7f, 1, 0x7f})),
		wasmSection(secImport, wasmVec(cat(wasmName("govgate"), wasmName("abi_v1"), []byte{0, 0}))),
		wasmSection(secFunction, wasmVec([]byte{1})),
		wasmSection(secMemory, wasmVec([]byte{0, 1})),
		wasmSection(secGlobal, wasmVec([]byte{0x7f, 1, opI32Const, 0, opEnd})),
		wasmSection(secExport, wasmVec(cat(wasmName("f"), []byte{0, 1}))),
		wasmSection(secCode, wasmVec(cat(uleb(uint32(len(body))), body))),
		cat(extra...))
}

// TestInstrumentRefuses checks that what the decoder does not know, and
// code that would reach the appended globals, is refused with a message
// rather than instrumented by a guess.
func TestInstrumentRefuses(t *testing.T) {
	t.Parallel()
	ret0 := []byte{opI32Const, 0, opEnd}
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"reads a global past its own", rawModule(nil, cat([]byte{opGlobalGet, 1, 0x1a}, ret0)), "global 1 does not exist"},
		{"writes a global past its own", rawModule(nil, cat([]byte{opI32Const, 0, opGlobalSet, 2}, ret0)), "global 2 does not exist"},
		{"exports a global past its own", replaceSection(rawModule(nil, ret0), secExport,
			wasmVec(cat(wasmName("f"), []byte{0, 1}), cat(wasmName("g"), []byte{3, 1}))), "export g: global 1 does not exist"},
		{"atomics", rawModule(nil, cat([]byte{0xfe, 0x03, 0x00}, ret0)), "unknown opcode 0xfe"},
		{"exception handling", rawModule(nil, cat([]byte{0x06, 0x40, opEnd}, ret0)), "unknown opcode 0x6"},
		{"tail call", rawModule(nil, []byte{opLocalGet, 0, 0x12, 1, opEnd}), "unknown opcode 0x12"},
		{"SIMD opcode not in its shortest form", rawModule(nil, cat([]byte{opSIMDPrefix, 0x80, 0x00, 0x03, 0x40}, ret0)), "shortest encoding"},
		{"unassigned SIMD opcode", rawModule(nil, cat([]byte{opSIMDPrefix, 0x9a, 0x01}, ret0)), "unknown opcode 0xfd 0x9a"},
		{"relaxed SIMD", rawModule(nil, cat([]byte{opSIMDPrefix, 0x80, 0x02}, ret0)), "unknown opcode 0xfd 0x100"},
		{"unknown 0xfc opcode", rawModule(nil, cat([]byte{opMiscPrefix, 18}, ret0)), "unknown opcode 0xfc 18"},
		{"memory index", rawModule(nil, cat([]byte{opMemorySize, 1, 0x1a}, ret0)), "reserved byte not zero"},
		{"integer too long", rawModule(nil, []byte{opI32Const, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, opEnd}), "integer too large"},
		{"block type of another proposal", rawModule(nil, cat([]byte{opBlock, 0x63, opEnd}, ret0)), "unknown block type 0x63"},
		{"body cut short", rawModule(nil, []byte{opBlock, blockEmpty, opI32Const, 0, opEnd}), "body ends inside a block"},
		{"code after the end", rawModule(nil, cat(ret0, []byte{0x01})), "code after the end of the function"},
		{"marker with parameters", rawModule([]byte{0x60, 1, 0x7f, 0}, ret0), "imports govgate.abi_v1 with the wrong signature"},
		{"tag section", rawModule(nil, ret0, wasmSection(13, []byte{0})), "unknown section id 13"},
		{"sections out of order", rawModule(nil, ret0, wasmSection(secType, []byte{0})), "out of order"},
		{"not wasm", []byte("(module)"), "not a WebAssembly binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := instrument(tc.wasm)
			if !errors.Is(err, ErrInvalidPlugin) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("instrument = %v, want ErrInvalidPlugin mentioning %q", err, tc.want)
			}
		})
	}
}

// replaceSection returns wasm with the payload of its section id replaced.
func replaceSection(wasm []byte, id byte, payload []byte) []byte {
	sections, err := splitSections(wasm)
	if err != nil {
		panic(err)
	}
	out := slices.Clone(wasmHeader)
	for _, s := range sections {
		if s.id == id {
			out = append(out, wasmSection(id, payload)...)
		} else {
			out = append(out, s.raw...)
		}
	}
	return out
}

// validModule compiles wasm as written.
func validModule(t *testing.T, wasm []byte) error {
	_, err := newMarkerRuntime(t).CompileModule(context.Background(), wasm)
	return err
}

// TestInstrumentDropsDWARF checks that the DWARF sections, whose code
// offsets the rewrite shifts, go, and that the other custom sections stay.
func TestInstrumentDropsDWARF(t *testing.T) {
	t.Parallel()
	ret0 := []byte{opI32Const, 0, opEnd}
	wasm := rawModule(nil, ret0, customSection(".debug_info", "dwarf"), customSection("name", "\x00\x02\x01f"), customSection("producers", "x"))
	out, err := instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	sections, err := splitSections(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range sections {
		if s.id == secCustom {
			d := decoder{b: s.payload}
			n, _ := d.name()
			names = append(names, n)
		}
	}
	if want := []string{"name", "producers"}; !slices.Equal(names, want) {
		t.Errorf("custom sections %q, want %q", names, want)
	}
	// A module without a global section gets one, in its place.
	if err := validModule(t, instrumentPeriod(t, removeSection(wasm, secGlobal), 10)); err != nil {
		t.Errorf("instrumented module without globals: %v", err)
	}
}

func removeSection(wasm []byte, id byte) []byte {
	sections, err := splitSections(wasm)
	if err != nil {
		panic(err)
	}
	out := slices.Clone(wasmHeader)
	for _, s := range sections {
		if s.id != id {
			out = append(out, s.raw...)
		}
	}
	return out
}

// TestInstrumentCharges checks what a period pays for: a loop is charged
// the instructions it holds, not one per turn, and a bulk memory
// instruction its length, so that a period stays short in time whatever
// the code.
func TestInstrumentCharges(t *testing.T) {
	t.Parallel()
	// loop: local.get 0; i32.const 1; i32.sub; local.tee 0; br_if 0; end
	// (6 instructions) as many times as the argument says.
	countdown := []byte{opLocalGet, 0, opI32Const, 1, opI32Sub, opLocalTee, 0, opBrIf, 0}
	loop := func(inner ...byte) []byte {
		return cat([]byte{opLoop, blockEmpty}, inner, countdown, []byte{opEnd, opI32Const, 0, opEnd})
	}
	fill := []byte{opI32Const, 0, opI32Const, 0, opI32Const, 0x80, 0x80, 0x04, opMiscPrefix, miscMemoryFill, 0} // memory.fill(0, 0, 65536)
	for _, tc := range []struct {
		name     string
		code     []byte
		turns    uint64
		min, max int
	}{
		// 100,000 turns of 6 instructions in periods of 10,000.
		{"loop", loop(), 100_000, 59, 61},
		// 10 turns of 10 instructions and a fill of 64 KiB, charged 8 KiB
		// (8 bytes a unit), in periods of 1,000: each fill calls the host
		// before it runs; without its charge, no call at all.
		{"memory.fill", loop(fill...), 10, 10, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			period := int32(10_000)
			if tc.name == "memory.fill" {
				period = 1000
			}
			r := newMarkerRuntime(t)
			mod := r.instantiate(t, instrumentPeriod(t, rawModule(nil, tc.code), period))
			if _, err := mod.ExportedFunction("f").Call(context.Background(), tc.turns); err != nil {
				t.Fatal(err)
			}
			if r.calls < tc.min || r.calls > tc.max {
				t.Errorf("the host was called %d times, want %d to %d", r.calls, tc.min, tc.max)
			}
		})
	}
}

// BenchmarkFuelPeriod runs the loops that make a fuel period longest in
// time, each stopped after 50 ms, and reports the longest and the mean
// time between two calls to the host (max_period_us, mean_period_us): how
// long a garbage collection may wait for a plugin, and by how much a
// deadline may be overrun. The longest also counts any time the operating
// system took the thread away, which on a busy machine is most of it.
func BenchmarkFuelPeriod(b *testing.B) {
	// A loop whose body is 4,000 loads and stores, straight.
	straight := []byte{opLoop, blockEmpty}
	for i := range 1000 {
		addr := appendS32(nil, int32(i*64))
		straight = append(straight, opI32Const)
		straight = append(straight, addr...)
		straight = append(straight, opI32Const)
		straight = append(straight, addr...)
		straight = append(straight, opI32Load, 2, 0, 0x36 /* i32.store */, 2, 0)
	}
	straight = append(straight, opBr, 0, opEnd, opUnreachable, opEnd)
	for _, tc := range []struct {
		name   string
		wasm   []byte
		export string
		args   []uint64
	}{
		{"tight loop", fixture(b, "spin.wasm"), abi.ExportFilter, []uint64{0, 0}},
		{"recursion", fixture(b, "features.wasm"), "fib", []uint64{60}},
		{"straight loop body", rawModule(nil, straight), "f", []uint64{0}},
		{"pointer chase", fixture(b, "fuel.wasm"), "chase", nil},
		{"memory.fill 16 MiB", fixture(b, "fuel.wasm"), "fill", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := newMarkerRuntime(b)
			mod := r.instantiate(b, instrumentPeriod(b, tc.wasm, fuelPeriod))
			if setup := mod.ExportedFunction("setup"); setup != nil {
				if _, err := setup.Call(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			var longest, total time.Duration
			periods := 0
			for b.Loop() {
				last := time.Now()
				stop := last.Add(50 * time.Millisecond)
				r.onCall = func(context.Context) {
					now := time.Now()
					longest = max(longest, now.Sub(last))
					total += now.Sub(last)
					periods++
					last = now
					if now.After(stop) {
						panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
					}
				}
				_, err := mod.ExportedFunction(tc.export).Call(context.Background(), tc.args...)
				var exit *sys.ExitError
				if !errors.As(err, &exit) {
					b.Fatalf("call ended with %v", err)
				}
			}
			b.ReportMetric(float64(longest.Microseconds()), "max_period_us")
			b.ReportMetric(float64(total.Microseconds())/float64(max(periods, 1)), "mean_period_us")
		})
	}
}
