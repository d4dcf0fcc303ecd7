package calldata

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
)

// randomValue returns a random value of type t (whose raw names p keeps)
// as go-ethereum packs it, and the JSON value an action must show for it,
// written here without the package's renderer: an integer's decimal
// string, an address's EIP-55 form, bytes as 0x-hex, arrays and tuples
// nested.
func randomValue(r *rand.Rand, t abi.Type, p param) (reflect.Value, any) {
	switch t.T {
	case abi.SliceTy, abi.ArrayTy:
		n := t.Size
		if t.T == abi.SliceTy {
			n = r.IntN(4)
		}
		v := reflect.New(t.GetType()).Elem()
		if t.T == abi.SliceTy {
			v = reflect.MakeSlice(t.GetType(), n, n)
		}
		want := make([]any, n)
		for i := range n {
			ev, ew := randomValue(r, *t.Elem, p.elem())
			v.Index(i).Set(ev)
			want[i] = ew
		}
		return v, want
	case abi.TupleTy:
		v := reflect.New(t.TupleType).Elem()
		want := make([]any, len(t.TupleElems))
		for i, et := range t.TupleElems {
			ev, ew := randomValue(r, *et, p.Comps[i])
			v.Field(i).Set(ev)
			arg := map[string]any{"type": p.Comps[i].canonical(), "value": ew}
			if p.Comps[i].Name != "" {
				arg["name"] = p.Comps[i].Name
			}
			want[i] = arg
		}
		return v, want
	case abi.UintTy, abi.IntTy:
		b := make([]byte, t.Size/8)
		fill(r, b)
		n := new(big.Int).SetBytes(b)
		if t.T == abi.IntTy {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(t.Size-1)))
		}
		if r.IntN(4) == 0 {
			n.SetInt64(int64(r.IntN(3))) // small values are the common case
		}
		want := n.String()
		goType := t.GetType()
		if goType.Kind() == reflect.Pointer {
			return reflect.ValueOf(n), want
		}
		v := reflect.New(goType).Elem()
		if t.T == abi.IntTy {
			v.SetInt(n.Int64())
		} else {
			v.SetUint(n.Uint64())
		}
		return v, want
	case abi.BoolTy:
		b := r.IntN(2) == 1
		return reflect.ValueOf(b), b
	case abi.StringTy:
		s := fmt.Sprintf("proposal %d «%d»", r.IntN(1000), r.IntN(1000))
		return reflect.ValueOf(s), s
	case abi.AddressTy:
		var a common.Address
		fill(r, a[:])
		return reflect.ValueOf(a), a.Hex()
	case abi.BytesTy:
		b := make([]byte, r.IntN(70))
		fill(r, b)
		return reflect.ValueOf(b), "0x" + hex.EncodeToString(b)
	case abi.FixedBytesTy, abi.FunctionTy:
		v := reflect.New(t.GetType()).Elem()
		b := make([]byte, v.Len())
		fill(r, b)
		reflect.Copy(v, reflect.ValueOf(b))
		return v, "0x" + hex.EncodeToString(b)
	}
	panic("no random value for " + t.String())
}

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
}

// encodeCall encodes a call to m with random arguments and returns the
// calldata and the args an action must show.
func encodeCall(t testing.TB, r *rand.Rand, m *method) ([]byte, []any) {
	t.Helper()
	vals := make([]any, len(m.args))
	want := make([]any, len(m.args))
	for i, a := range m.args {
		v, w := randomValue(r, a.Type, m.params[i])
		vals[i] = v.Interface()
		arg := map[string]any{"type": m.params[i].canonical(), "value": w}
		if m.params[i].Name != "" {
			arg["name"] = m.params[i].Name
		}
		want[i] = arg
	}
	packed, err := m.args.Pack(vals...)
	if err != nil {
		t.Fatalf("%s: pack: %v", m.sig, err)
	}
	return append(m.selector[:len(m.selector):len(m.selector)], packed...), want
}

// sameJSON compares two values by meaning, as JSON.
func sameJSON(t testing.TB, got, want any) bool {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var gv, wv any
	if err := json.Unmarshal(g, &gv); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(w, &wv); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(gv, wv)
}

// curatedMethods lists the curated set's functions in a fixed order.
func curatedMethods(t testing.TB) []*method {
	t.Helper()
	reg, err := curatedRegistry()
	if err != nil {
		t.Fatal(err)
	}
	var out []*method
	for _, ms := range reg.bySelector {
		out = append(out, ms...)
	}
	sortMethods(out)
	return out
}

func sortMethods(ms []*method) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && ms[j].sig < ms[j-1].sig; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// TestCuratedCorpusRoundTrip encodes calls to every function of the
// curated set with random arguments (seeded: the same corpus every run),
// three per function, and checks that each decodes to that function and
// those arguments, byte for byte: decoding re-encodes and compares, and
// the calldata served is the calldata given.
func TestCuratedCorpusRoundTrip(t *testing.T) {
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(23, 1))
	calls := 0
	for _, m := range curatedMethods(t) {
		for i := range 3 {
			data, want := encodeCall(t, r, m)
			target := common.BigToAddress(big.NewInt(int64(calls + 1)))
			a := d.Decode(1, Call{Target: target, Value: big.NewInt(int64(i)), Data: data})
			calls++
			if !a.Decoded || a.Signature != m.sig || a.Name != m.name || a.Source != SourceCurated {
				t.Fatalf("%s call %d: decoded %v as %q from %q", m.sig, i, a.Decoded, a.Signature, a.Source)
			}
			if !sameJSON(t, a.Args, want) {
				got, _ := json.Marshal(a.Args)
				w, _ := json.Marshal(want)
				t.Fatalf("%s call %d: args\n got %s\nwant %s", m.sig, i, got, w)
			}
			if a.Calldata != "0x"+hex.EncodeToString(data) || a.Target != target.Hex() || a.Value != strconv.Itoa(i) || a.Selector != "0x"+hex.EncodeToString(data[:4]) {
				t.Fatalf("%s: call fields %+v", m.sig, a)
			}
		}
	}
	if calls < 200 {
		t.Fatalf("corpus of %d calls, want at least 200", calls)
	}
	t.Logf("%d calls over %d functions decoded and re-encoded byte for byte", calls, calls/3)
}

// TestCuratedSetHasNoCollisions keeps the curated set unambiguous: no two
// of its functions share a selector, so which one decodes a call never
// depends on the order they are tried in.
func TestCuratedSetHasNoCollisions(t *testing.T) {
	reg, err := curatedRegistry()
	if err != nil {
		t.Fatal(err)
	}
	for sel, ms := range reg.bySelector {
		if len(ms) > 1 {
			t.Errorf("selector %x: %s and %s", sel, ms[0].sig, ms[1].sig)
		}
	}
	if reg.n < 100 {
		t.Errorf("curated set of %d functions", reg.n)
	}
}

var _ = core.MaxCallDepth
