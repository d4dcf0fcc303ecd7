package wasmhost

import (
	"encoding/binary"
	"errors"
	"testing"
)

// The LEB128 writer and reader agree with each other and with
// encoding/binary's unsigned varint, and the reader keeps the spec's
// bounds: at most five bytes for 32 bits, no bits past the 32nd.
func TestLEB128(t *testing.T) {
	for _, v := range []uint32{0, 1, 63, 64, 127, 128, 300, 1 << 14, 1<<21 - 1, 1 << 28, 1<<32 - 1} {
		enc := appendU32(nil, v)
		if want := binary.AppendUvarint(nil, uint64(v)); string(enc) != string(want) {
			t.Errorf("appendU32(%d) = %x, want %x", v, enc, want)
		}
		d := decoder{b: enc}
		if got, err := d.u32(); err != nil || got != v || d.p != len(enc) {
			t.Errorf("u32 of %x = %d, %v, read %d bytes", enc, got, err, d.p)
		}
	}
	for _, v := range []int32{0, 1, -1, 63, -64, 64, -65, 1 << 20, -(1 << 20), 1<<31 - 1, -1 << 31} {
		enc := appendS32(nil, v)
		d := decoder{b: enc}
		if err := d.signed(32); err != nil || d.p != len(enc) {
			t.Errorf("signed of %x (%d): %v, read %d of %d bytes", enc, v, err, d.p, len(enc))
		}
		// Decode it here, as the spec says, to check the writer.
		var got int64
		var shift uint
		for _, b := range enc {
			got |= int64(b&0x7f) << shift
			shift += 7
		}
		if shift < 64 && enc[len(enc)-1]&0x40 != 0 {
			got |= -1 << shift
		}
		if int32(got) != v {
			t.Errorf("appendS32(%d) = %x, which reads as %d", v, enc, got)
		}
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"cut short", []byte{0x80}},
		{"six bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}},
		{"bits past 32", []byte{0xff, 0xff, 0xff, 0xff, 0x1f}},
	} {
		d := decoder{b: tc.b}
		if _, err := d.u32(); err == nil {
			t.Errorf("%s: u32 of %x succeeded", tc.name, tc.b)
		} else if tc.name == "cut short" && !errors.Is(err, errEOF) {
			t.Errorf("%s: %v, want errEOF", tc.name, err)
		}
	}
}
