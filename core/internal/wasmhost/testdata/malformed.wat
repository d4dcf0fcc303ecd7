;; malformed is a plugin that speaks ABI v1 but answers out of protocol:
;; its filter returns a record with an unknown status, its transform a
;; pointer outside its memory.
;;
;; Build: wat2wasm malformed.wat -o malformed.wasm (go generate ./core/wasmhost/)
(module
  (import "govgate" "abi_v1" (func $abi_v1))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":1,\"name\":\"malformed\",\"version\":\"1.0.0\",\"hooks\":[\"filter\",\"transform\"]}")
  ;; status 9, payload length 0
  (data (i32.const 2048) "\09\00\00\00\00")
  (func (export "govgate_alloc") (param $size i32) (result i32)
    (i32.const 4096))
  (func (export "govgate_meta") (result i64)
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 77)))
  (func (export "govgate_filter") (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.const 2048) (i64.const 32)) (i64.const 5)))
  (func (export "govgate_transform") (param $ptr i32) (param $len i32) (result i64)
    ;; ptr 0xffff0000, len 100
    (i64.const 0xffff000000000064)))
