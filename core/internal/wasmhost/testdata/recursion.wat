;; recursion is a plugin whose filter computes the 60th Fibonacci number the
;; naive way: about 2^42 calls and no loop anywhere, so a check at loop
;; heads alone would never stop it. The host must stop it at its deadline.
;;
;; Build: wat2wasm recursion.wat -o recursion.wasm (go generate ./core/wasmhost/)
(module
  (import "govgate" "abi_v1" (func $abi_v1))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":1,\"name\":\"recursion\",\"version\":\"1.0.0\",\"hooks\":[\"filter\"]}")
  (func $fib (param $n i64) (result i64)
    (if (result i64) (i64.lt_u (local.get $n) (i64.const 2))
      (then (local.get $n))
      (else (i64.add
        (call $fib (i64.sub (local.get $n) (i64.const 1)))
        (call $fib (i64.sub (local.get $n) (i64.const 2)))))))
  (func (export "govgate_alloc") (param $size i32) (result i32)
    (i32.const 4096))
  (func (export "govgate_meta") (result i64)
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 65)))
  ;; Keeps the delivery (status 0 at 2048) once fib(60) is known, never.
  (func (export "govgate_filter") (param $ptr i32) (param $len i32) (result i64)
    (drop (call $fib (i64.const 60)))
    (i64.or (i64.shl (i64.const 2048) (i64.const 32)) (i64.const 5))))
