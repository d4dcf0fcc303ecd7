package calldata

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/govgate/govgate/core"
)

// FuzzDecode decodes arbitrary calldata, with or without a Bravo
// signature, and checks that decoding never panics, that the action
// encodes to JSON, and that every call marked decoded, nested ones
// included, round-trips: its signature's selector is the call's, and its
// arguments, decoded and encoded again, are its calldata byte for byte.
func FuzzDecode(f *testing.F) {
	transfer := pack(f, "transfer(address,uint256)", alice, big.NewInt(7))
	multi := pack(f, "aggregate((address,bytes)[])", []struct {
		F0 common.Address
		F1 []byte
	}{{usdc, transfer}, {alice, []byte{1, 2, 3, 4, 5}}})
	sched := pack(f, "schedule(address,uint256,bytes,bytes32,bytes32,uint256)", usdc, big.NewInt(0), multi, [32]byte{}, [32]byte{1}, big.NewInt(60))
	f.Add(transfer, "")
	f.Add(transfer[4:], "transfer(address,uint256)")
	f.Add(multi, "")
	f.Add(sched, "")
	f.Add(pack(f, "multiSend(bytes)", append(append([]byte{0}, usdc[:]...), make([]byte, 64)...)), "")
	f.Add([]byte{0x42, 0x96, 0x6c, 0x68}, "")
	f.Add([]byte{}, "f((uint8,bytes)[2][],string)")
	f.Add([]byte{1, 2}, "")
	d, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, sig string) {
		a := d.Decode(1, Call{Target: usdc, Signature: sig, Data: data})
		if _, err := json.Marshal(a); err != nil {
			t.Fatal(err)
		}
		checkRoundTrip(t, a, sig != "")
	})
}

// checkRoundTrip checks a and its calls; bravo says that a's calldata is
// the arguments alone, its selector being its signature's.
func checkRoundTrip(t *testing.T, a core.Action, bravo bool) {
	t.Helper()
	data, err := hexutil.Decode(a.Calldata)
	if err != nil {
		t.Fatalf("calldata %q: %v", a.Calldata, err)
	}
	if a.Decoded && len(data) > 0 {
		name, params, err := parseSignature(a.Signature)
		if err != nil {
			t.Fatalf("decoded as %q, which does not parse: %v", a.Signature, err)
		}
		m, err := newMethod(name, params, "")
		if err != nil {
			t.Fatal(err)
		}
		argData := data
		if bravo {
			if a.Selector != hexutil.Encode(m.selector[:]) {
				t.Fatalf("decoded as %s, selector %s", a.Signature, a.Selector)
			}
		} else {
			if !bytes.Equal(data[:4], m.selector[:]) {
				t.Fatalf("decoded as %s, selector %x, calldata %x", a.Signature, m.selector, data[:4])
			}
			argData = data[4:]
		}
		vals, err := m.args.UnpackValues(argData)
		if err != nil {
			t.Fatalf("decoded as %s, which does not unpack: %v", a.Signature, err)
		}
		again, err := m.args.Pack(vals...)
		if err != nil || !bytes.Equal(again, argData) {
			t.Fatalf("decoded as %s, which does not round-trip: %v", a.Signature, err)
		}
		if len(a.Args) != len(m.args) {
			t.Fatalf("decoded as %s with %d args", a.Signature, len(a.Args))
		}
	}
	// Compound's Timelock carries a signature and its arguments.
	inner := strings.HasSuffix(a.Signature, "Transaction(address,uint256,string,bytes,uint256)") && string(a.Args[2].Value) != `""`
	for _, c := range a.Calls {
		checkRoundTrip(t, c, inner)
	}
}
