;; spin is a plugin whose filter loops forever in one instruction and calls
;; nothing: the tightest loop a plugin can run. The host must stop it at its
;; deadline, and the gateway's garbage collector must not wait for it.
;;
;; Build: wat2wasm spin.wat -o spin.wasm (go generate ./core/wasmhost/)
(module
  (import "govgate" "abi_v1" (func $abi_v1))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":1,\"name\":\"spin\",\"version\":\"1.0.0\",\"hooks\":[\"filter\"]}")
  (func (export "govgate_alloc") (param $size i32) (result i32)
    (i32.const 4096))
  (func (export "govgate_meta") (result i64)
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 60)))
  (func (export "govgate_filter") (param $ptr i32) (param $len i32) (result i64)
    (loop $forever (br $forever))
    (unreachable)))
