package wasmhost

import (
	"strings"
	"testing"
)

// splitSections cuts a module into its sections, whole, and refuses what
// would make the new global section's place a guess.
func TestSplitSections(t *testing.T) {
	mod := rawModule(nil, []byte{opI32Const, 0, opEnd}, customSection("name", "x"))
	ss, err := splitSections(mod)
	if err != nil {
		t.Fatal(err)
	}
	var ids []byte
	total := len(wasmHeader)
	for _, s := range ss {
		ids = append(ids, s.id)
		total += len(s.raw)
		if string(s.raw[len(s.raw)-len(s.payload):]) != string(s.payload) {
			t.Errorf("section %d: payload is not the end of raw", s.id)
		}
	}
	if string(ids) != string([]byte{secType, secImport, secFunction, secMemory, secGlobal, secExport, secCode, secCustom}) || total != len(mod) {
		t.Fatalf("sections %v covering %d of %d bytes", ids, total, len(mod))
	}
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"size past the end", cat(wasmHeader, []byte{secType, 5, 0}), "past the end"},
		{"repeated", cat(wasmHeader, wasmSection(secType, []byte{0}), wasmSection(secType, []byte{0})), "out of order or repeated"},
		{"out of order", cat(wasmHeader, wasmSection(secCode, []byte{0}), wasmSection(secType, []byte{0})), "out of order"},
		{"unknown id", cat(wasmHeader, wasmSection(13, []byte{0})), "unknown section id 13"},
		{"size cut short", cat(wasmHeader, []byte{secType, 0x80}), "unexpected end"},
	} {
		if _, err := splitSections(tc.wasm); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
