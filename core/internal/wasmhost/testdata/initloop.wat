;; initloop never finishes starting: its _initialize loops forever. The host
;; must give up at its start deadline and refuse the plugin.
;;
;; Build: wat2wasm initloop.wat -o initloop.wasm (go generate ./core/wasmhost/)
(module
  (import "govgate" "abi_v1" (func $abi_v1))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":1,\"name\":\"initloop\",\"version\":\"1.0.0\",\"hooks\":[\"filter\"]}")
  (func (export "_initialize")
    (loop $forever (br $forever)))
  (func (export "govgate_alloc") (param $size i32) (result i32)
    (i32.const 4096))
  (func (export "govgate_meta") (result i64)
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 64)))
  (func (export "govgate_filter") (param $ptr i32) (param $len i32) (result i64)
    (i64.const 0)))
