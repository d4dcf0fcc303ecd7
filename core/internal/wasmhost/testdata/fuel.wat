;; fuel holds the loops that make a fuel period longest in time, for
;; BenchmarkFuelPeriod: a pointer chase through 32 MiB, where every load
;; misses the caches, and a loop of memory.fill over 16 MiB.
;;
;; Build: wat2wasm fuel.wat -o fuel.wasm (go generate ./core/wasmhost/)
(module
  (import "govgate" "abi_v1" (func $abi_v1))
  (memory (export "memory") 513)

  ;; setup links the 2^19 cache lines of the first 32 MiB into one cycle in
  ;; the order of a full-period linear congruential generator, so that the
  ;; next address is known only once the load returns.
  (func (export "setup")
    (local $i i32)
    (loop $l
      (i32.store (i32.shl (local.get $i) (i32.const 6))
        (i32.shl
          (i32.and (i32.add (i32.mul (local.get $i) (i32.const 1664525)) (i32.const 1013904223))
            (i32.const 0x7ffff))
          (i32.const 6)))
      (br_if $l (i32.ne (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 0x80000)))))

  (func (export "chase") (result i32)
    (local $p i32)
    (loop $l
      (local.set $p (i32.load (local.get $p)))
      (br $l))
    (unreachable))

  (func (export "fill") (result i32)
    (loop $l
      (memory.fill (i32.const 0) (i32.const 0) (i32.const 0x1000000))
      (br $l))
    (unreachable)))
