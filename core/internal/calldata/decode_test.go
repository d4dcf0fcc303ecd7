package calldata

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/govgate/govgate/core"
)

func mustMethod(t testing.TB, sig string) *method {
	t.Helper()
	name, params, err := parseSignature(sig)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMethod(name, params, "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// pack encodes a call to sig with selector.
func pack(t testing.TB, sig string, args ...any) []byte {
	t.Helper()
	m := mustMethod(t, sig)
	b, err := m.args.Pack(args...)
	if err != nil {
		t.Fatalf("pack %s: %v", sig, err)
	}
	return append(m.selector[:len(m.selector):len(m.selector)], b...)
}

func newDecoder(t testing.TB, c Config) *Decoder {
	t.Helper()
	d, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var (
	alice = common.HexToAddress("0x00000000000000000000000000000000000a11ce")
	usdc  = common.HexToAddress("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48")
	safe  = common.HexToAddress("0x5afe5afe5afe5afe5afe5afe5afe5afe5afe5afe")
)

// TestShapesRoundTrip decodes random calls of types the curated set has
// few of: static and dynamic arrays of every depth, static and dynamic
// tuples inside arrays, small integers, fixed bytes, functions.
func TestShapesRoundTrip(t *testing.T) {
	d := newDecoder(t, Config{})
	r := rand.New(rand.NewPCG(7, 7))
	for _, sig := range []string{
		"f1(uint256[2][] a,bytes b)",
		"f2((uint8 x,bytes y)[3] t)",
		"f3((bool ok,(string s,bytes32[] h)[] inner)[] outer,int24 tick)",
		"f4(bytes[] calls,string[2] names,address[] who)",
		"f5((uint16,address)[2][] pairs,function cb,bytes7 tag)",
		"f6(int8 a,int64 b,uint40 c,int256 d,bool e)",
		"f7((uint256 a,(uint256 b,bytes c) d) nested,uint256[][] m)",
	} {
		m := mustMethod(t, sig)
		reg := newRegistry()
		reg.add(m)
		d.ops.Load().sigs = reg
		for i := range 20 {
			data, want := encodeCall(t, r, m)
			a := d.Decode(1, Call{Target: alice, Data: data})
			if !a.Decoded || a.Signature != m.sig {
				t.Fatalf("%s #%d: not decoded (%q)", sig, i, a.Signature)
			}
			if !sameJSON(t, a.Args, want) {
				got, _ := json.Marshal(a.Args)
				t.Fatalf("%s #%d: args %s", sig, i, got)
			}
		}
	}
}

// TestRawNeverMisdecoded: calldata that no candidate reproduces byte for
// byte is served raw, with its calldata as given.
func TestRawNeverMisdecoded(t *testing.T) {
	sigs := filepath.Join(t.TempDir(), "sigs.txt")
	// collate_propagate_storage(bytes16) and burn(uint256) share the
	// selector 0x42966c68; the first, listed first, is a spam signature
	// whose argument cannot reproduce a burn of an amount below 2^128.
	if err := os.WriteFile(sigs, []byte("collate_propagate_storage(bytes16)\nburn(uint256 amount)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDecoder(t, Config{SignaturesFile: sigs})
	transfer := pack(t, "transfer(address,uint256)", alice, big.NewInt(2_500_000_000_000))
	burn := pack(t, "burn(uint256)", big.NewInt(1000))
	if !bytes.Equal(burn[:4], mustMethod(t, "collate_propagate_storage(bytes16)").selector[:]) {
		t.Fatal("the colliding selectors differ: the test lost its point")
	}
	dirty := bytes.Clone(transfer)
	dirty[4] = 1 // a non-zero byte in the address's padding
	offset := pack(t, "multiSend(bytes)", []byte{1, 2, 3})
	offset[4+31] = 0x40 // the bytes' offset skips a word
	offset = append(offset, make([]byte, 32)...)
	// A bytes[] of 1,000 elements whose offsets all point at one element:
	// decodable, never written by an encoder, and a memory bomb when nested.
	bomb := append([]byte{}, mustMethod(t, "f(bytes[])").selector[:]...)
	bomb = append(bomb, common.LeftPadBytes([]byte{0x20}, 32)...)
	bomb = append(bomb, common.LeftPadBytes(big.NewInt(1000).Bytes(), 32)...)
	for range 1000 {
		bomb = append(bomb, common.LeftPadBytes(big.NewInt(32000).Bytes(), 32)...)
	}
	bomb = append(bomb, common.LeftPadBytes([]byte{1}, 32)...)
	bomb = append(bomb, make([]byte, 32)...)
	reg := newRegistry()
	reg.add(mustMethod(t, "f(bytes[])"))
	for _, tc := range []struct {
		name string
		data []byte
		sig  string
		dec  *Decoder
	}{
		{"unknown selector", append([]byte{0xde, 0xad, 0xbe, 0xef}, transfer[4:]...), "", d},
		{"trailing byte", append(bytes.Clone(transfer), 0), "", d},
		{"trailing word", append(bytes.Clone(transfer), make([]byte, 32)...), "", d},
		{"short by a byte", transfer[:len(transfer)-1], "", d},
		{"selector only", transfer[:4], "", d},
		{"three bytes", transfer[:3], "", d},
		{"dirty address padding", dirty, "", d},
		{"offset not canonical", offset, "", d},
		{"offsets sharing data", bomb, "", bare(reg)},
		{"bravo signature, arguments of another shape", pack(t, "f(address,uint256,uint256)", alice, big.NewInt(1), big.NewInt(2))[4:], "transfer(address,uint256)", d},
		{"bravo signature not canonical", transfer[4:], "transfer(address, uint256)", d},
		{"bravo signature that does not parse", transfer[4:], "transfer(address,uint256", d},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.dec.Decode(1, Call{Target: usdc, Signature: tc.sig, Data: tc.data})
			if a.Decoded || a.Name != "" || len(a.Args) != 0 || len(a.Calls) != 0 || a.Source != "" {
				t.Fatalf("decoded as %s from %s: %+v", a.Signature, a.Source, a.Args)
			}
			if a.Calldata != "0x"+hex.EncodeToString(tc.data) || a.Signature != tc.sig {
				t.Fatalf("raw action changed the call: %+v", a)
			}
		})
	}
	t.Run("colliding selector, the function that reproduces the calldata", func(t *testing.T) {
		a := d.Decode(1, Call{Target: usdc, Data: burn})
		if !a.Decoded || a.Signature != "burn(uint256)" || a.Source != SourceSignatures || a.Args[0].Name != "amount" || string(a.Args[0].Value) != `"1000"` {
			t.Fatalf("got %+v", a)
		}
	})
	t.Run("plain value transfer", func(t *testing.T) {
		a := d.Decode(1, Call{Target: alice, Value: big.NewInt(5)})
		if !a.Decoded || a.Signature != "" || a.Calldata != "0x" || a.Value != "5" || a.Selector != "" {
			t.Fatalf("got %+v", a)
		}
	})
}

// TestNestedCalls decodes each kind of call that carries calls, nested in
// one another, and checks the tree: every level's function, arguments,
// value and operation.
func TestNestedCalls(t *testing.T) {
	d := newDecoder(t, Config{})
	amount := big.NewInt(2_500_000_000_000)
	transfer := pack(t, "transfer(address,uint256)", alice, amount)
	grant := pack(t, "grantRole(bytes32,address)", crypto.Keccak256Hash([]byte("PROPOSER_ROLE")), alice)
	multicall := pack(t, "aggregate3((address,bool,bytes)[])", []struct {
		F0 common.Address
		F1 bool
		F2 []byte
	}{{usdc, false, transfer}, {safe, true, grant}})
	// MultiSend's packed transactions: a call and a delegatecall.
	var packed []byte
	for _, tx := range []struct {
		op   byte
		to   common.Address
		data []byte
	}{{0, usdc, transfer}, {1, safe, multicall}} {
		packed = append(packed, tx.op)
		packed = append(packed, tx.to[:]...)
		packed = append(packed, common.LeftPadBytes(big.NewInt(int64(tx.op)).Bytes(), 32)...)
		packed = append(packed, common.LeftPadBytes(big.NewInt(int64(len(tx.data))).Bytes(), 32)...)
		packed = append(packed, tx.data...)
	}
	multiSend := pack(t, "multiSend(bytes)", packed)
	execTx := pack(t, "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)",
		safe, big.NewInt(0), multiSend, uint8(1), big.NewInt(0), big.NewInt(0), big.NewInt(0), common.Address{}, common.Address{}, []byte{0xaa})
	var salt [32]byte
	scheduleBatch := pack(t, "scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)",
		[]common.Address{safe, usdc}, []*big.Int{big.NewInt(0), big.NewInt(7)}, [][]byte{execTx, transfer}, [32]byte{}, salt, big.NewInt(3600))

	a := d.Decode(1, Call{Target: alice, Data: scheduleBatch})
	want := []struct {
		path, sig string
		delegate  bool
		value     string
	}{
		{"", "scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)", false, "0"},
		{"0", "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)", false, "0"},
		{"0.0", "multiSend(bytes)", true, "0"},
		{"0.0.0", "transfer(address,uint256)", false, "0"},
		{"0.0.1", "aggregate3((address,bool,bytes)[])", true, "1"},
		{"0.0.1.0", "transfer(address,uint256)", false, "0"}, // depth 4: decoded, not expanded further
		{"0.0.1.1", "grantRole(bytes32,address)", false, "0"},
		{"1", "transfer(address,uint256)", false, "7"},
	}
	for _, w := range want {
		got := a
		if w.path != "" {
			for _, i := range strings.Split(w.path, ".") {
				got = got.Calls[int(i[0]-'0')]
			}
		}
		if !got.Decoded || got.Signature != w.sig || got.DelegateCall != w.delegate || got.Value != w.value {
			t.Errorf("call %q: %s decoded %v delegate %v value %s, want %s", w.path, got.Signature, got.Decoded, got.DelegateCall, got.Value, w.sig)
		}
	}
	leaf := a.Calls[0].Calls[0].Calls[0]
	if leaf.Target != usdc.Hex() || string(leaf.Args[0].Value) != `"`+alice.Hex()+`"` || string(leaf.Args[1].Value) != `"2500000000000"` || leaf.Args[1].Name != "value" {
		t.Errorf("transfer in the MultiSend: %+v", leaf)
	}
	if n := len(a.Calls[0].Calls[0].Calls[1].Calls); n != 2 {
		t.Errorf("aggregate3 at depth 3 carries %d calls, want 2", n)
	}
	// One level deeper than the bound: the call is decoded, its calls are not.
	deep := d.Decode(1, Call{Target: alice, Data: pack(t, "relay(address,uint256,bytes)", alice, big.NewInt(0), scheduleBatch)})
	bounded := deep.Calls[0].Calls[0].Calls[0].Calls[1]
	if bounded.Signature != "aggregate3((address,bool,bytes)[])" || !bounded.Truncated || len(bounded.Calls) != 0 {
		t.Errorf("aggregate3 at depth %d: truncated %v, %d calls", core.MaxCallDepth, bounded.Truncated, len(bounded.Calls))
	}

	t.Run("compound timelock", func(t *testing.T) {
		// queueTransaction with a signature: the data is the arguments.
		q := pack(t, "queueTransaction(address,uint256,string,bytes,uint256)", usdc, big.NewInt(0), "transfer(address,uint256)", transfer[4:], big.NewInt(1e9))
		a := d.Decode(1, Call{Target: safe, Data: q})
		if len(a.Calls) != 1 || a.Calls[0].Signature != "transfer(address,uint256)" || !a.Calls[0].Decoded || a.Calls[0].Source != SourceProposal {
			t.Fatalf("got %+v", a.Calls)
		}
		// Without a signature: the data is the whole calldata.
		e := pack(t, "executeTransaction(address,uint256,string,bytes,uint256)", usdc, big.NewInt(0), "", transfer, big.NewInt(1e9))
		a = d.Decode(1, Call{Target: safe, Data: e})
		if len(a.Calls) != 1 || a.Calls[0].Signature != "transfer(address,uint256)" || a.Calls[0].Source != SourceCurated {
			t.Fatalf("got %+v", a.Calls)
		}
	})
	t.Run("upgrade with an initializer", func(t *testing.T) {
		impl := common.HexToAddress("0x1111111111111111111111111111111111111111")
		u := pack(t, "upgradeToAndCall(address,bytes)", impl, pack(t, "transferOwnership(address)", alice))
		a := d.Decode(1, Call{Target: safe, Data: u})
		if len(a.Calls) != 1 || !a.Calls[0].DelegateCall || a.Calls[0].Target != impl.Hex() || a.Calls[0].Name != "transferOwnership" {
			t.Fatalf("got %+v", a.Calls)
		}
		a = d.Decode(1, Call{Target: safe, Data: pack(t, "upgradeToAndCall(address,bytes)", impl, []byte{})})
		if len(a.Calls) != 0 {
			t.Fatalf("an upgrade without data carries %d calls", len(a.Calls))
		}
		// ProxyAdmin.upgradeAndCall(proxy, implementation, data).
		proxy := common.HexToAddress("0x2222222222222222222222222222222222222222")
		pa := pack(t, "upgradeAndCall(address,address,bytes)", proxy, impl, pack(t, "transferOwnership(address)", alice))
		a = d.Decode(1, Call{Target: safe, Data: pa})
		if len(a.Calls) != 1 || !a.Calls[0].DelegateCall || a.Calls[0].Target != impl.Hex() || a.Calls[0].Name != "transferOwnership" || !a.Calls[0].Decoded {
			t.Fatalf("upgradeAndCall: got %+v", a.Calls)
		}
		if a = d.Decode(1, Call{Target: safe, Data: pack(t, "upgradeAndCall(address,address,bytes)", proxy, impl, []byte{})}); len(a.Calls) != 0 {
			t.Fatalf("upgradeAndCall without data carries %d calls", len(a.Calls))
		}
	})
	t.Run("malformed multiSend carries no call", func(t *testing.T) {
		a := d.Decode(1, Call{Target: safe, Data: pack(t, "multiSend(bytes)", packed[:len(packed)-1])})
		if !a.Decoded || len(a.Calls) != 0 {
			t.Fatalf("got %+v", a)
		}
	})
}

// TestOperatorSources: an operator's ABI for the target comes before the
// signatures file and the curated set, names the arguments of a function
// that another source decoded, and applies per chain when filed so.
func TestOperatorSources(t *testing.T) {
	dir := t.TempDir()
	abiJSON := `[{"type":"function","name":"store","inputs":[{"name":"newValue","type":"uint256"}],"outputs":[]},
	 {"type":"function","name":"transfer","inputs":[{"name":"recipient","type":"address"},{"name":"amount","type":"uint256"}]},
	 {"type":"event","name":"ValueChanged","inputs":[{"name":"value","type":"uint256"}]}]`
	box := common.HexToAddress("0x00000000000000000000000000000000000b0c5e")
	if err := os.WriteFile(filepath.Join(dir, strings.ToLower(box.Hex())+".json"), []byte(abiJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "10"), 0o755); err != nil {
		t.Fatal(err)
	}
	artifact := `{"contractName":"Other","abi":[{"type":"function","name":"ping","inputs":[{"name":"","type":"tuple[]","components":[{"name":"","type":"uint8"},{"name":"to","type":"address"}]}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "10", box.Hex()+".json"), []byte(artifact), 0o644); err != nil {
		t.Fatal(err)
	}
	sigs := filepath.Join(t.TempDir(), "sigs")
	if err := os.WriteFile(sigs, []byte("# ours\nstore(uint256)\nsetFee(uint24 fee)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDecoder(t, Config{ABIDir: dir, SignaturesFile: sigs})

	a := d.Decode(1, Call{Target: box, Data: pack(t, "store(uint256)", big.NewInt(42))})
	if a.Source != SourceABI || a.Args[0].Name != "newValue" {
		t.Errorf("store on the box: %+v", a)
	}
	a = d.Decode(1, Call{Target: usdc, Data: pack(t, "store(uint256)", big.NewInt(42))})
	if a.Source != SourceSignatures || a.Args[0].Name != "" {
		t.Errorf("store elsewhere: %+v", a)
	}
	a = d.Decode(1, Call{Target: box, Data: pack(t, "transfer(address,uint256)", alice, big.NewInt(1))})
	if a.Source != SourceABI || a.Args[0].Name != "recipient" {
		t.Errorf("transfer on the box: %+v", a)
	}
	a = d.Decode(1, Call{Target: box, Signature: "store(uint256)", Data: pack(t, "store(uint256)", big.NewInt(1))[4:]})
	if a.Source != SourceProposal || a.Args[0].Name != "newValue" {
		t.Errorf("Bravo store on the box: names from the ABI, got %+v", a)
	}
	ping := pack(t, "ping((uint8,address)[])", []struct {
		F0 uint8
		F1 common.Address
	}{{3, alice}})
	if a := d.Decode(10, Call{Target: box, Data: ping}); a.Source != SourceABI || !strings.Contains(string(a.Args[0].Value), `"name":"to"`) {
		t.Errorf("ping on chain 10: %+v", a)
	}
	if a := d.Decode(1, Call{Target: box, Data: ping}); a.Decoded {
		t.Errorf("ping on chain 1, where no ABI has it: %+v", a)
	}
}

// bare is a decoder whose only source is reg.
func bare(reg *registry) *Decoder {
	d := &Decoder{curated: reg, bravo: map[string]*method{}}
	d.ops.Store(&operatorSources{sigs: newRegistry(), cache: newCache(cacheBytes)})
	return d
}

// TestReloadOperatorSources: the operator's files are read again on
// Reload; what they now say decodes at once, a cached decoding made
// without them is not served again, and a file that no longer parses
// leaves the decoder as it was.
func TestReloadOperatorSources(t *testing.T) {
	dir := t.TempDir()
	sigs := filepath.Join(t.TempDir(), "sigs")
	if err := os.WriteFile(sigs, []byte("# nothing yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{ABIDir: dir, SignaturesFile: sigs}
	d := newDecoder(t, cfg)
	box := common.HexToAddress("0x00000000000000000000000000000000000b0c5e")
	p := core.Proposal{ChainID: 1, Targets: []string{box.Hex(), usdc.Hex()}, Values: []string{"0", "0"},
		Calldatas: []string{hexutil.Encode(pack(t, "store(uint256)", big.NewInt(42))), hexutil.Encode(pack(t, "setFee(uint24)", big.NewInt(500)))}}
	if as := d.Actions(p); as[0].Decoded || as[1].Decoded {
		t.Fatalf("decoded before the operator named the functions: %+v", as)
	}

	abiJSON := `[{"type":"function","name":"store","inputs":[{"name":"newValue","type":"uint256"}]}]`
	if err := os.WriteFile(filepath.Join(dir, strings.ToLower(box.Hex())+".json"), []byte(abiJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sigs, []byte("setFee(uint24 fee)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if as := d.Actions(p); as[0].Decoded {
		t.Fatalf("the files changed but were not reloaded, yet the action decoded: %+v", as[0])
	}
	if err := d.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	as := d.Actions(p)
	if !as[0].Decoded || as[0].Source != SourceABI || as[0].Args[0].Name != "newValue" {
		t.Errorf("store after the reload: %+v", as[0])
	}
	if !as[1].Decoded || as[1].Source != SourceSignatures || as[1].Args[0].Name != "fee" {
		t.Errorf("setFee after the reload: %+v", as[1])
	}

	if err := os.WriteFile(sigs, []byte("setFee(uint24 fee\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(cfg); err == nil || !strings.Contains(err.Error(), "decode.signatures_file") {
		t.Fatalf("a signatures file that does not parse reloaded with %v", err)
	}
	if as := d.Actions(p); !as[0].Decoded || !as[1].Decoded {
		t.Errorf("a failed reload changed what decodes: %+v", as)
	}
}

// TestConfigNamesTheField: a bad operator source fails at start with the
// field and the file.
func TestConfigNamesTheField(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badName := filepath.Join(dir, "a")
	write("a/box.json", "[]")
	badJSON := filepath.Join(dir, "b")
	write("b/0x00000000000000000000000000000000000b0c5e.json", "{")
	badType := filepath.Join(dir, "c")
	write("c/0x00000000000000000000000000000000000b0c5e.json", `[{"type":"function","name":"f","inputs":[{"type":"uint7"}]}]`)
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"missing folder", Config{ABIDir: filepath.Join(dir, "nope")}, "decode.abi_dir"},
		{"a file, not a folder", Config{ABIDir: write("f.txt", "")}, "decode.abi_dir: not a folder"},
		{"file not named by an address", Config{ABIDir: badName}, "want a file named <0x address>.json"},
		{"not JSON", Config{ABIDir: badJSON}, "decode.abi_dir"},
		{"unknown type", Config{ABIDir: badType}, "uint7"},
		{"missing signatures file", Config{SignaturesFile: filepath.Join(dir, "nope.txt")}, "decode.signatures_file"},
		{"bad signature", Config{SignaturesFile: write("s.txt", "ok(uint256)\nbad(uint256\n")}, "decode.signatures_file: " + filepath.Join(dir, "s.txt") + ": line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestActionsOfAProposal decodes a proposal's calls, Bravo-style and
// OpenZeppelin-style, and serves them again from the cache.
func TestActionsOfAProposal(t *testing.T) {
	d := newDecoder(t, Config{})
	transfer := pack(t, "transfer(address,uint256)", alice, big.NewInt(9))
	p := core.Proposal{
		ChainID:    1,
		Targets:    []string{usdc.Hex(), usdc.Hex(), alice.Hex()},
		Values:     []string{"0", "0", "1000"},
		Signatures: []string{"", "transfer(address,uint256)", ""},
		Calldatas:  []string{"0x" + hex.EncodeToString(transfer), "0x" + hex.EncodeToString(transfer[4:]), "0x"},
	}
	for range 2 {
		as := d.Actions(p)
		if len(as) != 3 || as[0].Signature != "transfer(address,uint256)" || as[1].Source != SourceProposal ||
			as[1].Calldata != p.Calldatas[1] || !as[2].Decoded || as[2].Value != "1000" {
			t.Fatalf("got %+v", as)
		}
	}
	if d.ops.Load().cache.order.Len() != 3 {
		t.Fatalf("cache holds %d actions", d.ops.Load().cache.order.Len())
	}
}
