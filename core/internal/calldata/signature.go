package calldata

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/crypto"
)

// Limits on a function's shape. A Bravo proposal's signatures come from the
// chain, so the parser meets untrusted text: these keep a hostile signature
// from costing more than a real one.
const (
	maxSignatureLen = 4096
	maxParams       = 64      // parameters or components of one tuple
	maxNesting      = 16      // tuples and arrays within one another
	maxArrayLen     = 1 << 16 // length of a fixed-size array
	maxStaticBytes  = 1 << 22 // encoded size of a static type
)

// param is one parameter of a function as its ABI or signature gives it:
// its name (possibly empty), its type, and the components of a tuple, with
// their own names, which go-ethereum's types do not keep when anonymous.
type param struct {
	Name string
	// Base is the elementary type in canonical form (uint256, bytes32,
	// address …) or "tuple".
	Base string
	// Dims are the array dimensions as written, left to right: -1 for [],
	// n for [n]. uint256[2][] is Base uint256, Dims [2, -1].
	Dims  []int
	Comps []param
}

// canonical is the type as a function selector spells it.
func (p param) canonical() string {
	var b strings.Builder
	p.writeCanonical(&b)
	return b.String()
}

func (p param) writeCanonical(b *strings.Builder) {
	if p.Base == "tuple" {
		b.WriteByte('(')
		for i, c := range p.Comps {
			if i > 0 {
				b.WriteByte(',')
			}
			c.writeCanonical(b)
		}
		b.WriteByte(')')
	} else {
		b.WriteString(p.Base)
	}
	for _, d := range p.Dims {
		if d < 0 {
			b.WriteString("[]")
		} else {
			b.WriteString("[" + strconv.Itoa(d) + "]")
		}
	}
}

// elem is the type of p's elements; p must have dimensions.
func (p param) elem() param {
	e := p
	e.Name = ""
	e.Dims = p.Dims[:len(p.Dims)-1]
	return e
}

// marshaling is p for go-ethereum's NewType. Tuple components get the
// names F0, F1, … there: go-ethereum builds a Go struct of them and refuses
// anonymous or clashing names, which real ABIs have; the real names stay
// in p.
func (p param) marshaling() abi.ArgumentMarshaling {
	m := abi.ArgumentMarshaling{Type: p.Base}
	if p.Base == "tuple" {
		m.Components = make([]abi.ArgumentMarshaling, len(p.Comps))
		for i, c := range p.Comps {
			m.Components[i] = c.marshaling()
			m.Components[i].Name = "F" + strconv.Itoa(i)
		}
	}
	for _, d := range p.Dims {
		if d < 0 {
			m.Type += "[]"
		} else {
			m.Type += "[" + strconv.Itoa(d) + "]"
		}
	}
	return m
}

// method is a function govgate can decode calls to.
type method struct {
	name     string
	sig      string // canonical signature, e.g. transfer(address,uint256)
	selector [4]byte
	params   []param
	args     abi.Arguments
	named    bool // some parameter has a name
	source   string
}

// newMethod builds the method name(params), checking that every type is
// one the ABI defines and that the shape stays within the limits.
func newMethod(name string, params []param, source string) (*method, error) {
	if !validIdent(name) {
		return nil, fmt.Errorf("invalid function name %q", name)
	}
	if len(params) > maxParams {
		return nil, fmt.Errorf("%s: more than %d parameters", name, maxParams)
	}
	m := &method{name: name, params: params, source: source}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('(')
	for i, p := range params {
		if err := checkParam(p, 0); err != nil {
			return nil, fmt.Errorf("%s: parameter %d: %w", name, i, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		p.writeCanonical(&b)
		if hasNames(p) {
			m.named = true
		}
		t, err := newType(p)
		if err != nil {
			return nil, fmt.Errorf("%s: parameter %d: %w", name, i, err)
		}
		m.args = append(m.args, abi.Argument{Type: t})
	}
	b.WriteByte(')')
	m.sig = b.String()
	copy(m.selector[:], crypto.Keccak256([]byte(m.sig))[:4])
	return m, nil
}

// newType is go-ethereum's type for p. NewType can panic on shapes its
// reflection does not expect; such a type is refused like any other.
func newType(p param) (t abi.Type, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unsupported type %s", p.canonical())
		}
	}()
	m := p.marshaling()
	return abi.NewType(m.Type, "", m.Components)
}

func hasNames(p param) bool {
	if p.Name != "" {
		return true
	}
	for _, c := range p.Comps {
		if hasNames(c) {
			return true
		}
	}
	return false
}

// checkParam refuses what the ABI does not define and shapes beyond the
// limits: an empty tuple or a zero-length array (which encode to nothing,
// so a length prefix could claim any number of them), arrays too long,
// nesting too deep, static types too large.
func checkParam(p param, depth int) error {
	if depth+len(p.Dims) > maxNesting {
		return errors.New("nested too deeply")
	}
	for _, d := range p.Dims {
		if d == 0 || d > maxArrayLen {
			return fmt.Errorf("array length %d out of range", d)
		}
	}
	if p.Base == "tuple" {
		if len(p.Comps) == 0 {
			return errors.New("empty tuple")
		}
		if len(p.Comps) > maxParams {
			return fmt.Errorf("tuple of more than %d components", maxParams)
		}
		for _, c := range p.Comps {
			if err := checkParam(c, depth+len(p.Dims)+1); err != nil {
				return err
			}
		}
	} else if !elementary(p.Base) {
		return fmt.Errorf("unknown type %q", p.Base)
	}
	if _, ok := staticSize(p); !ok {
		return errors.New("static type too large")
	}
	return nil
}

// staticSize is the encoded size of p if p is static (0 if dynamic); ok
// is false when it exceeds maxStaticBytes.
func staticSize(p param) (size int, ok bool) {
	if isDynamic(p) {
		return 0, true
	}
	size = 32
	if p.Base == "tuple" {
		size = 0
		for _, c := range p.Comps {
			s, ok := staticSize(c)
			if !ok {
				return 0, false
			}
			size += s
		}
	}
	for _, d := range p.Dims {
		if size > maxStaticBytes/d {
			return 0, false
		}
		size *= d
	}
	return size, size <= maxStaticBytes
}

func isDynamic(p param) bool {
	for _, d := range p.Dims {
		if d < 0 {
			return true
		}
	}
	if p.Base == "string" || p.Base == "bytes" {
		return true
	}
	for _, c := range p.Comps {
		if isDynamic(c) {
			return true
		}
	}
	return false
}

// elementary reports whether t is a canonical elementary type that
// go-ethereum encodes: address, bool, string, bytes, function, bytes1 to
// bytes32, and uint or int of 8 to 256 bits in steps of 8.
func elementary(t string) bool {
	switch t {
	case "address", "bool", "string", "bytes", "function":
		return true
	}
	for _, pre := range []string{"uint", "int", "bytes"} {
		n, ok := strings.CutPrefix(t, pre)
		if !ok || n == "" || n[0] == '0' {
			continue
		}
		v, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if pre == "bytes" {
			return v >= 1 && v <= 32
		}
		return v >= 8 && v <= 256 && v%8 == 0
	}
	return false
}

// canonicalBase maps the aliases Solidity accepts to the canonical name.
func canonicalBase(t string) string {
	switch t {
	case "uint":
		return "uint256"
	case "int":
		return "int256"
	case "byte":
		return "bytes1"
	}
	return t
}

func validIdent(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// parseSignature parses a function signature as a signatures file or a
// Bravo proposal writes it: transfer(address,uint256), or with names,
// data locations and tuples, such as
// aggregate3((address target, bool allowFailure, bytes callData)[] calls).
// A leading "function " is allowed, as is anything after the closing
// parenthesis (visibility, "returns (…)"), which is ignored.
func parseSignature(s string) (name string, params []param, err error) {
	if len(s) > maxSignatureLen {
		return "", nil, fmt.Errorf("signature longer than %d bytes", maxSignatureLen)
	}
	p := &sigParser{s: strings.TrimSpace(s)}
	if rest, ok := strings.CutPrefix(p.s, "function "); ok {
		p.s = strings.TrimSpace(rest)
	}
	name = p.ident()
	if name == "" {
		return "", nil, fmt.Errorf("signature %q: no function name", s)
	}
	p.space()
	if !p.eat('(') {
		return "", nil, fmt.Errorf("signature %q: want ( after the name", s)
	}
	params, err = p.params(0)
	if err != nil {
		return "", nil, fmt.Errorf("signature %q: %w", s, err)
	}
	return name, params, nil
}

type sigParser struct {
	s   string
	pos int
}

func (p *sigParser) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *sigParser) eat(c byte) bool {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *sigParser) ident() string {
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (p.pos > start && c >= '0' && c <= '9') {
			p.pos++
			continue
		}
		break
	}
	return p.s[start:p.pos]
}

// params parses a parameter list after its "(", through its ")".
func (p *sigParser) params(depth int) ([]param, error) {
	if depth > maxNesting {
		return nil, errors.New("nested too deeply")
	}
	var out []param
	p.space()
	if p.eat(')') {
		return out, nil
	}
	for {
		if len(out) == maxParams {
			return nil, fmt.Errorf("more than %d parameters", maxParams)
		}
		q, err := p.param(depth)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
		p.space()
		if p.eat(')') {
			return out, nil
		}
		if !p.eat(',') {
			return nil, fmt.Errorf("want , or ) at byte %d", p.pos)
		}
		p.space()
	}
}

// param parses a type, array dimensions, and an optional data location
// and name.
func (p *sigParser) param(depth int) (param, error) {
	var q param
	p.space()
	if strings.HasPrefix(p.s[p.pos:], "tuple(") {
		p.pos += len("tuple")
	}
	if p.eat('(') {
		comps, err := p.params(depth + 1)
		if err != nil {
			return q, err
		}
		q.Base, q.Comps = "tuple", comps
	} else {
		t := p.ident()
		if t == "" {
			return q, fmt.Errorf("want a type at byte %d", p.pos)
		}
		q.Base = canonicalBase(t)
	}
	for p.eat('[') {
		start := p.pos
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
		d := -1
		if p.pos > start {
			n, err := strconv.Atoi(p.s[start:p.pos])
			if err != nil || n > maxArrayLen {
				return q, fmt.Errorf("array length %q out of range", p.s[start:p.pos])
			}
			d = n
		}
		if !p.eat(']') {
			return q, fmt.Errorf("want ] at byte %d", p.pos)
		}
		q.Dims = append(q.Dims, d)
		if len(q.Dims) > maxNesting {
			return q, errors.New("nested too deeply")
		}
	}
	for {
		p.space()
		save := p.pos
		w := p.ident()
		switch w {
		case "":
			return q, nil
		case "memory", "calldata", "storage", "indexed", "payable":
			continue
		default:
			if q.Name != "" {
				p.pos = save
				return q, fmt.Errorf("unexpected %q at byte %d", w, save)
			}
			q.Name = w
		}
	}
}
