package calldata

import (
	"encoding/hex"
	"encoding/json"
	"math/big"
	"reflect"
	"strconv"

	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
)

// args renders decoded values as core.Args, named from params.
func args(params []param, values []any) []core.Arg {
	out := make([]core.Arg, len(params))
	for i, p := range params {
		out[i] = core.Arg{Name: p.Name, Type: p.canonical(), Value: appendValue(nil, p, reflect.ValueOf(values[i]))}
	}
	return out
}

// appendValue appends v, a value go-ethereum decoded for p, as JSON in the
// notifications' conventions: integers as decimal strings, addresses EIP-55,
// bytes 0x-hex, arrays as arrays, tuples as arrays of {name, type, value}.
func appendValue(buf []byte, p param, v reflect.Value) []byte {
	if len(p.Dims) > 0 {
		e := p.elem()
		buf = append(buf, '[')
		for i := range v.Len() {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendValue(buf, e, v.Index(i))
		}
		return append(buf, ']')
	}
	switch p.Base {
	case "tuple":
		buf = append(buf, '[')
		for i, c := range p.Comps {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '{')
			if c.Name != "" {
				buf = append(buf, `"name":`...)
				buf = appendString(buf, c.Name)
				buf = append(buf, ',')
			}
			buf = append(buf, `"type":`...)
			buf = appendString(buf, c.canonical())
			buf = append(buf, `,"value":`...)
			buf = appendValue(buf, c, v.Field(i))
			buf = append(buf, '}')
		}
		return append(buf, ']')
	case "bool":
		return strconv.AppendBool(buf, v.Bool())
	case "string":
		return appendString(buf, v.String())
	case "address":
		return appendString(buf, v.Interface().(common.Address).Hex())
	case "bytes":
		return appendHex(buf, v.Bytes())
	}
	switch v.Kind() {
	case reflect.Array: // bytesN, function
		b := make([]byte, v.Len())
		reflect.Copy(reflect.ValueOf(b), v)
		return appendHex(buf, b)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		buf = append(buf, '"')
		buf = strconv.AppendInt(buf, v.Int(), 10)
		return append(buf, '"')
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		buf = append(buf, '"')
		buf = strconv.AppendUint(buf, v.Uint(), 10)
		return append(buf, '"')
	case reflect.Pointer:
		if n, ok := v.Interface().(*big.Int); ok {
			buf = append(buf, '"')
			buf = n.Append(buf, 10)
			return append(buf, '"')
		}
	}
	return append(buf, "null"...) // no ABI type lands here
}

func appendHex(buf []byte, b []byte) []byte {
	buf = append(buf, `"0x`...)
	buf = hex.AppendEncode(buf, b)
	return append(buf, '"')
}

func appendString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // cannot fail for a string
	return append(buf, b...)
}
