// Package calldata decodes what a proposal's calls do: for each call
// (target, value, calldata, and the signature of a Bravo-style proposal) it
// finds the function and its arguments, and inside calls that carry calls of
// their own (Safe, MultiSend, Multicall3, TimelockController, Compound's
// Timelock, a governor's relay, a proxy upgrade's initializer) the nested
// calls, to core.MaxCallDepth levels. It looks nothing up on the network:
// the functions come, in this order, from the proposal's own Bravo
// signature, the operator's ABIs and signatures file, and a small curated
// set embedded in the binary. A decoding counts only when the decoded
// arguments, encoded again, give back the calldata byte for byte; a call
// that no candidate function reproduces is served raw.
package calldata

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"os"
	"sync"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/govgate/govgate/core"
)

// Sources of a decoding, as core.Action.Source names them.
const (
	SourceProposal   = "proposal"
	SourceABI        = "abi"
	SourceSignatures = "signatures"
	SourceCurated    = "curated"
)

// Config names the operator's own functions, beyond the curated set. A
// running govgate reads both files again on SIGHUP.
type Config struct {
	// ABIDir is a folder of JSON ABIs: 0xADDRESS.json applies to that
	// contract on every chain, CHAINID/0xADDRESS.json on one chain only.
	ABIDir string `yaml:"abi_dir" env:"GOVGATE_DECODE_ABI_DIR"`
	// SignaturesFile lists function signatures, one a line, such as
	// "setFee(uint24 fee)" (names optional; # starts a comment line).
	SignaturesFile string `yaml:"signatures_file" env:"GOVGATE_DECODE_SIGNATURES_FILE"`
}

// Validate loads what c names and says which field is wrong and why.
func (c Config) Validate() error {
	_, err := New(c)
	return err
}

// Decoder decodes calls. It is safe for concurrent use.
type Decoder struct {
	curated *registry
	// ops are the operator's sources with the decodings made from them;
	// Reload replaces both at once.
	ops atomic.Pointer[operatorSources]

	mu    sync.Mutex
	bravo map[string]*method // parsed Bravo signatures; nil value: unparsable
}

// operatorSources are what the operator's files say, and the decodings
// cached while they were in force.
type operatorSources struct {
	abis  map[abiKey]*registry
	sigs  *registry
	cache *cache
}

// New loads the operator's ABIs and signatures and the curated set.
func New(c Config) (*Decoder, error) {
	cur, err := curatedRegistry()
	if err != nil {
		return nil, fmt.Errorf("decode: curated set: %w", err)
	}
	d := &Decoder{curated: cur, bravo: map[string]*method{}}
	if err := d.Reload(c); err != nil {
		return nil, err
	}
	return d, nil
}

// Reload reads the operator's ABIs and signatures file again. When one
// cannot be read or parsed, it says which and why and the decoder keeps
// what it had; otherwise the new sources take effect at once, with the
// decodings made from the old ones forgotten. A proposal.created already
// sent keeps the actions it carried: reloading changes what is served.
func (d *Decoder) Reload(c Config) error {
	ops := &operatorSources{abis: map[abiKey]*registry{}, sigs: newRegistry(), cache: newCache(cacheBytes)}
	if c.ABIDir != "" {
		st, err := os.Stat(c.ABIDir)
		if err == nil && !st.IsDir() {
			err = errors.New("not a folder")
		}
		if err != nil {
			return fmt.Errorf("decode.abi_dir: %w", err)
		}
		if ops.abis, err = loadABIDir(c.ABIDir); err != nil {
			return fmt.Errorf("decode.abi_dir: %w", err)
		}
	}
	if c.SignaturesFile != "" {
		raw, err := os.ReadFile(c.SignaturesFile)
		if err != nil {
			return fmt.Errorf("decode.signatures_file: %w", err)
		}
		if ops.sigs, err = parseSignatures(string(raw), SourceSignatures); err != nil {
			return fmt.Errorf("decode.signatures_file: %s: %w", c.SignaturesFile, err)
		}
	}
	d.ops.Store(ops)
	return nil
}

// Call is one call to decode.
type Call struct {
	Target common.Address
	Value  *big.Int // nil for 0
	// Signature is a Bravo-style signature, such as "transfer(address,uint256)",
	// with Data the arguments alone; "" when Data starts with the selector.
	Signature string
	Data      []byte
}

// Actions decodes a proposal's calls, one action per target. The
// decodings are cached: a proposal's calls never change, and a reorg that
// replaces a proposal changes its calls and so the cache's key.
func (d *Decoder) Actions(p core.Proposal) []core.Action {
	ops := d.ops.Load()
	out := make([]core.Action, len(p.Targets))
	for i, t := range p.Targets {
		var value, sig, data string
		if i < len(p.Values) {
			value = p.Values[i]
		}
		if i < len(p.Signatures) {
			sig = p.Signatures[i]
		}
		if i < len(p.Calldatas) {
			data = p.Calldatas[i]
		}
		key := cacheKey(p.ChainID, t, value, sig, data)
		if a, ok := ops.cache.get(key); ok {
			out[i] = a
			continue
		}
		c := Call{Target: common.HexToAddress(t), Signature: sig}
		v, okV := new(big.Int).SetString(value, 10)
		raw, err := hexutil.Decode(data)
		if !okV || err != nil || !common.IsHexAddress(t) {
			// Not what the indexer stores: served as it is, undecoded.
			out[i] = core.Action{Target: t, Value: value, Signature: sig, Calldata: data, Args: []core.Arg{}, Calls: []core.Action{}}
			continue
		}
		c.Value, c.Data = v, raw
		out[i] = d.decode(ops, p.ChainID, c, 0)
		ops.cache.put(key, out[i], len(raw))
	}
	return out
}

// Decode decodes one call on a chain.
func (d *Decoder) Decode(chainID uint64, c Call) core.Action {
	return d.decode(d.ops.Load(), chainID, c, 0)
}

func (d *Decoder) decode(ops *operatorSources, chainID uint64, c Call, depth int) core.Action {
	a := core.Action{
		Target: c.Target.Hex(), Value: "0", Signature: c.Signature,
		Args: []core.Arg{}, Calls: []core.Action{}, Calldata: hexutil.Encode(c.Data),
	}
	if c.Value != nil {
		a.Value = c.Value.String()
	}
	var data []byte
	var sel [4]byte
	var cands []*method
	switch {
	case c.Signature != "":
		copy(sel[:], crypto.Keccak256([]byte(c.Signature))[:4])
		data = append(sel[:], c.Data...)
		if m := d.bravoMethod(c.Signature); m != nil {
			cands = append(cands, m)
		}
	case len(c.Data) == 0:
		// A plain transfer of value: nothing to decode.
		a.Decoded = true
		return a
	case len(c.Data) < 4:
		return a
	default:
		copy(sel[:], c.Data)
		data = c.Data
	}
	a.Selector = hexutil.Encode(sel[:])
	cands = append(cands, d.lookup(ops, chainID, c.Target, sel)...)
	for _, m := range cands {
		vals, ok := m.decode(data[4:])
		if !ok {
			continue
		}
		a.Signature, a.Name, a.Decoded, a.Source = m.sig, m.name, true, m.source
		params := m.params
		if !m.named {
			if n := d.namedMethod(ops, chainID, c.Target, m.sig); n != nil {
				params = n.params
			}
		}
		a.Args = args(params, vals)
		if inner := nestedCalls(m.sig, c, vals); inner != nil {
			if depth >= core.MaxCallDepth {
				a.Truncated = true
			} else {
				for _, ic := range inner {
					na := d.decode(ops, chainID, ic.Call, depth+1)
					na.DelegateCall = ic.delegate
					a.Calls = append(a.Calls, na)
				}
			}
		}
		return a
	}
	return a
}

// lookup returns the candidate functions for a selector, in the order of
// the sources: the target's ABI on this chain, on every chain, the
// signatures file, the curated set.
func (d *Decoder) lookup(ops *operatorSources, chainID uint64, target common.Address, sel [4]byte) []*method {
	var out []*method
	for _, r := range d.registries(ops, chainID, target) {
		if r != nil {
			out = append(out, r.bySelector[sel]...)
		}
	}
	return out
}

// registries are the sources for a target, in order: its ABI on this chain,
// on every chain, the signatures file, the curated set.
func (d *Decoder) registries(ops *operatorSources, chainID uint64, target common.Address) [4]*registry {
	return [4]*registry{ops.abis[abiKey{chainID, target}], ops.abis[abiKey{0, target}], ops.sigs, d.curated}
}

// namedMethod finds sig with parameter names in the sources, to name the
// arguments of a function found without them.
func (d *Decoder) namedMethod(ops *operatorSources, chainID uint64, target common.Address, sig string) *method {
	for _, r := range d.registries(ops, chainID, target) {
		if r != nil {
			if m := r.named[sig]; m != nil {
				return m
			}
		}
	}
	return nil
}

// maxBravo bounds the parsed Bravo signatures kept; past it the map
// starts again (proposals reuse few signatures).
const maxBravo = 1024

// bravoMethod parses a Bravo-style signature, nil if it is not a canonical
// one: the governor hashes the text as given, so a signature written
// otherwise (a space, uint for uint256) calls another selector than the
// function it spells.
func (d *Decoder) bravoMethod(sig string) *method {
	d.mu.Lock()
	m, ok := d.bravo[sig]
	d.mu.Unlock()
	if ok {
		return m
	}
	name, params, err := parseSignature(sig)
	if err == nil {
		m, err = newMethod(name, params, SourceProposal)
	}
	if err != nil || m.sig != sig {
		m = nil
	}
	d.mu.Lock()
	if len(d.bravo) >= maxBravo {
		clear(d.bravo)
	}
	d.bravo[sig] = m
	d.mu.Unlock()
	return m
}

// decode decodes the arguments of a call to m: only the canonical
// encoding, which must come back byte for byte when the values are
// encoded again.
func (m *method) decode(argData []byte) (vals []any, ok bool) {
	if n, ok := canonicalLen(m.params, argData); !ok || n != len(argData) {
		return nil, false
	}
	defer func() {
		// go-ethereum's decoder is not meant for hostile input; a panic
		// there is one more way for a candidate not to fit.
		if r := recover(); r != nil {
			vals, ok = nil, false
		}
	}()
	vals, err := m.args.UnpackValues(argData)
	if err != nil {
		return nil, false
	}
	again, err := m.args.Pack(vals...)
	if err != nil || !bytes.Equal(again, argData) {
		return nil, false
	}
	return vals, true
}
