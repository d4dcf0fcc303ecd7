;; features uses an instruction of every kind that wazero enables by default
;; (wasm 2.0: multi-value, sign extension, saturating conversions, bulk
;; memory, reference types, SIMD), in loops, so that a test can check that
;; the instrumentation reads each one and leaves what the code computes
;; unchanged. Each export takes an i32 and returns an i32 or an i64.
;;
;; Build: wat2wasm features.wat -o features.wasm (go generate ./core/wasmhost/)
(module
  (import "govgate" "abi_v1" (func $abi_v1))
  (type $binop (func (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table $refs 1 externref)
  (table $funcs 2 funcref)
  (global $count (mut i32) (i32.const 0))
  (global $seed i64 (i64.const 0x1234567890))
  (elem (table $funcs) (i32.const 0) func $add $sub)
  (elem $passive func $sub)
  (data $bytes "\01\02\03\04\05\06\07\08\09\0a\0b\0c\0d\0e\0f\10")

  (func $add (type $binop) (i32.add (local.get 0) (local.get 1)))
  (func $sub (type $binop) (i32.sub (local.get 0) (local.get 1)))

  ;; A loop with parameters and results (multi-value): the sum 1..n, then
  ;; the same in a plain loop.
  (func (export "multivalue") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (local.get $n) (i32.const 0)
    (loop $l (param i32 i32) (result i32 i32)
      (local.set $acc) (local.set $i)
      (local.get $i)
      (block $b (param i32) (result i32)
        (i32.sub (i32.const 1)))
      (i32.add (local.get $acc) (local.get $i))
      (global.set $count (i32.add (global.get $count) (i32.const 1)))
      (br_if $l (i32.gt_u (local.get $i) (i32.const 1))))
    (local.set $acc) (drop)
    (i32.add (local.get $acc) (call $sum (local.get $n))))

  (func $sum (param $n i32) (result i32)
    (local $acc i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $acc (i32.add (local.get $acc) (local.get $n)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (local.get $acc))

  ;; br_table, if/else, select, sign extension, saturating conversions.
  (func (export "control") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (loop $l
      (block $c (block $b (block $a
        (br_table $a $b $c (i32.rem_u (local.get $i) (i32.const 3))))
        (local.set $acc (i32.add (local.get $acc) (i32.extend8_s (i32.const 0xff))))
        (br $c))
        (local.set $acc (i32.add (local.get $acc)
          (i32.trunc_sat_f64_s (f64.const 1e100)))))
      (local.set $acc (select (local.get $acc) (i32.const 7)
        (if (result i32) (i32.and (local.get $i) (i32.const 1))
          (then (i32.const 1)) (else (i32.const 0)))))
      (local.set $acc (i32.add (local.get $acc)
        (i32.wrap_i64 (i64.extend32_s (i64.const 0x80000000)))))
      (local.set $acc (i32.add (local.get $acc)
        (i32.trunc_sat_f32_u (f32.const -5))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (local.get $acc))

  ;; Bulk memory: fill, copy, init and drop, in a loop.
  (func (export "bulk") (param $n i32) (result i32)
    (local $i i32)
    (loop $l
      (memory.fill (i32.const 100) (local.get $i) (i32.const 64))
      (memory.copy (i32.const 200) (i32.const 96) (i32.const 32))
      (memory.init $bytes (i32.const 300) (i32.const 0) (i32.const 16))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (data.drop $bytes)
    (i32.add (i32.load (i32.const 204)) (i32.load (i32.const 304))))

  ;; Reference types: tables of funcref and externref, typed select,
  ;; call_indirect, table.get/set/size/grow/fill/copy/init, elem.drop.
  (func (export "refs") (param $n i32) (result i32)
    (local $acc i32)
    (local.set $acc (call_indirect $funcs (type $binop)
      (local.get $n) (i32.const 3) (i32.rem_u (local.get $n) (i32.const 2))))
    (table.set $refs (i32.const 0) (ref.null extern))
    (local.set $acc (i32.add (local.get $acc) (ref.is_null (table.get $refs (i32.const 0)))))
    (drop (table.grow $funcs (ref.func $add) (i32.const 2)))
    (table.fill $funcs (i32.const 2) (ref.func $sub) (i32.const 2))
    (table.copy $funcs $funcs (i32.const 0) (i32.const 2) (i32.const 1))
    (table.init $funcs $passive (i32.const 1) (i32.const 0) (i32.const 1))
    (elem.drop $passive)
    (local.set $acc (i32.add (local.get $acc) (table.size $funcs)))
    (local.set $acc (i32.add (local.get $acc)
      (select (result i32) (i32.const 10) (i32.const 20) (local.get $n))))
    (i32.add (local.get $acc) (call_indirect $funcs (type $binop)
      (i32.const 100) (i32.const 1) (i32.const 0))))

  ;; SIMD: constants, shuffles, lanes, loads and stores with lanes, and
  ;; opcodes of two bytes (0x80 and up) such as i16x8.abs.
  (func (export "simd") (param $n i32) (result i64)
    (local $v v128) (local $i i32)
    (local.set $v (v128.const i32x4 1 -2 3 -4))
    (loop $l
      (local.set $v (i32x4.add (local.get $v) (i32x4.splat (local.get $n))))
      (local.set $v (i16x8.abs (local.get $v)))
      (local.set $v (i8x16.shuffle 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 (local.get $v) (local.get $v)))
      (local.set $v (i32x4.replace_lane 2 (local.get $v) (i32.const 9)))
      (v128.store offset=16 (i32.const 0) (local.get $v))
      (local.set $v (v128.load32_lane 1 (i32.const 16) (local.get $v)))
      (v128.store64_lane 1 (i32.const 48) (local.get $v))
      (local.set $v (i32x4.dot_i16x8_s (local.get $v) (v128.load32_zero (i32.const 48))))
      (local.set $v (f64x2.convert_low_i32x4_u (local.get $v)))
      (local.set $v (i64x2.extend_low_i32x4_s (i32x4.trunc_sat_f64x2_u_zero (local.get $v))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (i64.add (i64x2.extract_lane 0 (local.get $v))
      (i64.extend_i32_u (i8x16.bitmask (local.get $v)))))

  ;; Recursion without a loop.
  (func $fib (export "fib") (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add
        (call $fib (i32.sub (local.get $n) (i32.const 1)))
        (call $fib (i32.sub (local.get $n) (i32.const 2))))))))
