package wasmhost

import (
	"errors"
	"fmt"
)

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
