//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/govgate/govgate/sdk/abi"
	"github.com/govgate/govgate/sdk/internal/guest"
)

// The imports and exports of ABI version 1 (sdk/ABI.md). The host calls
// govgate_alloc, writes the input into the returned buffer, then calls a hook
// with the same pointer; the output stays referenced here, safe from the
// garbage collector, until the next call replaces it.

//go:wasmimport govgate abi_v1
func abiV1()

//go:wasmimport govgate log
func hostLog(level uint32, msg string)

var (
	input  []byte // allocated by govgate_alloc for the next call
	output []byte // the last call's output, read by the host after it returns
)

func init() {
	// Calling the marker keeps it among the module's imports: a host that
	// does not speak ABI v1 cannot link the plugin.
	abiV1()
	guest.SetLogSink(func(level abi.Level, msg string) { hostLog(uint32(level), msg) })
}

//go:wasmexport govgate_alloc
func govgateAlloc(size uint32) *byte {
	input = make([]byte, max(size, 1))
	return &input[0]
}

//go:wasmexport govgate_meta
func govgateMeta() uint64 { return ret(guest.MetaJSON()) }

//go:wasmexport govgate_filter
func govgateFilter(ptr *byte, size uint32) uint64 { return call(abi.HookFilter, ptr, size) }

//go:wasmexport govgate_transform
func govgateTransform(ptr *byte, size uint32) uint64 { return call(abi.HookTransform, ptr, size) }

func call(h abi.Hook, ptr *byte, size uint32) uint64 {
	in := input
	input = nil
	if len(in) == 0 || ptr != &in[0] || int(size) > len(in) {
		return ret(abi.AppendResult(nil, abi.Result{Status: abi.StatusError, Message: "input was not allocated with govgate_alloc"}))
	}
	return ret(guest.Handle(h, in[:size]))
}

func ret(b []byte) uint64 {
	output = b
	if len(b) == 0 {
		return 0
	}
	return abi.Pack(uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(len(b)))
}
