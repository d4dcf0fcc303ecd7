;; abi_v2 is a plugin built for a future ABI version 2: it imports the
;; marker govgate.abi_v2, which this host does not provide, so it must be
;; refused when loaded, before any call.
;;
;; Build: wat2wasm abi_v2.wat -o abi_v2.wasm (go generate ./core/wasmhost/)
(module
  (import "govgate" "abi_v2" (func $abi_v2))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":1,\"name\":\"future\",\"version\":\"1.0.0\",\"hooks\":[\"filter\",\"transform\"]}")
  (func (export "govgate_alloc") (param $size i32) (result i32)
    (i32.const 4096))
  (func (export "govgate_meta") (result i64)
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 74)))
  (func (export "govgate_filter") (param $ptr i32) (param $len i32) (result i64)
    (i64.const 0)))
