package calldata

import "encoding/binary"

// The ABI encoding leaves room for data that decodes but that no encoder
// writes: offsets that point anywhere, even several at the same bytes. A
// decoder that follows them (go-ethereum's does) turns a few kilobytes into
// millions of values: bytes[] whose every offset points at one long array,
// nested. canonicalLen walks the encoding without building anything and
// accepts only what the encoder would have written, offset for offset, so
// the decoding that follows costs in proportion to the calldata. The byte
// for byte comparison after re-encoding stays the judge of a decoding; this
// walk only refuses early, and cheaply, what could not pass it.

// canonicalLen is the length of the canonical encoding of the tuple of
// params that starts data, or ok false where data cannot be one.
func canonicalLen(params []param, data []byte) (n int, ok bool) {
	return tupleLen(len(params), func(i int) param { return params[i] }, data)
}

// tupleLen walks a tuple (or the elements of an array, which encode as a
// tuple) of k members, member(i) giving each: a head of static members and
// offsets, then each dynamic member's tail at exactly the offset that
// follows the previous tail.
func tupleLen(k int, member func(i int) param, data []byte) (int, bool) {
	head := 0
	for i := range k {
		p := member(i)
		if isDynamic(p) {
			head += 32
		} else {
			s, ok := staticSize(p)
			if !ok {
				return 0, false
			}
			head += s
		}
		if head > len(data) {
			return 0, false
		}
	}
	next, at := head, 0
	for i := range k {
		p := member(i)
		if !isDynamic(p) {
			s, _ := staticSize(p)
			at += s
			continue
		}
		off, ok := word(data, at)
		if !ok || off != next {
			return 0, false
		}
		n, ok := dynamicLen(p, data[off:])
		if !ok {
			return 0, false
		}
		next += n
		at += 32
	}
	return next, true
}

// dynamicLen is the length of the canonical encoding of dynamic p at the
// start of data.
func dynamicLen(p param, data []byte) (int, bool) {
	if len(p.Dims) > 0 {
		e := p.elem()
		d := p.Dims[len(p.Dims)-1]
		prefix := 0
		if d < 0 {
			k, ok := word(data, 0)
			if !ok {
				return 0, false
			}
			d, prefix = k, 32
		}
		// Every element takes at least a word: more of them than words
		// left cannot be there.
		if d > (len(data)-prefix)/32 {
			return 0, false
		}
		n, ok := tupleLen(d, func(int) param { return e }, data[prefix:])
		return prefix + n, ok
	}
	switch p.Base {
	case "bytes", "string":
		l, ok := word(data, 0)
		if !ok {
			return 0, false
		}
		n := 32 + (l+31)/32*32
		return n, n <= len(data)
	case "tuple":
		return canonicalLen(p.Comps, data)
	}
	return 0, false // a static type is never asked for here
}

// word reads the 32-byte big-endian unsigned integer at data[at:] as a
// length or offset: ok is false when it is not there or exceeds the data,
// which no length or offset of a valid encoding does.
func word(data []byte, at int) (int, bool) {
	if at < 0 || at+32 > len(data) {
		return 0, false
	}
	w := data[at : at+32]
	for _, b := range w[:24] {
		if b != 0 {
			return 0, false
		}
	}
	v := binary.BigEndian.Uint64(w[24:])
	if v > uint64(len(data)) {
		return 0, false
	}
	return int(v), true
}
