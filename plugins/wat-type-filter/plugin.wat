;; wat-type-filter is a govgate plugin written by hand in WebAssembly text,
;; without the Go SDK, to show that the plugin ABI (sdk/ABI.md) is
;; language-neutral. It keeps a notification when its type is listed in the
;; config: {"types": ["proposal.created", "vote.cast"]}; a config without a
;; list keeps every type.
;;
;; It does not parse JSON: it looks for the type, quoted, after the first
;; '[' of the config. Notification types are dotted lowercase names
;; ([a-z0-9_.]), which JSON never escapes, so the quoted form is exact.
;;
;; Build (Debian: apt-get install wabt):
;;   wat2wasm plugin.wat -o plugin.wasm
;;
;; Memory: the metadata at 16, the output at 8192 (5 bytes per config, at
;; most 4096 configs), the input from 65536 on, growing memory as needed.
(module
  ;; Declares ABI version 1: a host without it refuses the module at load.
  (import "govgate" "abi_v1" (func $abi_v1))

  (memory (export "memory") 2)

  (global $meta_ptr i32 (i32.const 16))
  (global $meta_len i32 (i32.const 914))
  (global $out_base i32 (i32.const 8192))
  (global $in_base i32 (i32.const 65536))

  (data (i32.const 16) "{\"abi\":1,\"name\":\"wat-type-filter\",\"version\":\"1.0.0\",\"hooks\":[\"filter\"],\"configSchema\":{\"type\":\"object\",\"properties\":{\"types\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},\"samples\":[{\"name\":\"listed type\",\"input\":{\"id\":\"n1\",\"type\":\"vote.cast\",\"dao\":\"uniswap\",\"occurredAt\":\"2025-03-01T12:00:00Z\",\"data\":{}},\"config\":{\"types\":[\"proposal.created\",\"vote.cast\"]},\"expectKeep\":true},{\"name\":\"other type\",\"input\":{\"id\":\"n2\",\"type\":\"proposal.queued\",\"dao\":\"uniswap\",\"occurredAt\":\"2025-03-01T12:00:00Z\",\"data\":{}},\"config\":{\"types\":[\"proposal.created\",\"vote.cast\"]},\"expectKeep\":false},{\"name\":\"prefix of a listed type\",\"input\":{\"id\":\"n3\",\"type\":\"vote\",\"dao\":\"uniswap\",\"occurredAt\":\"2025-03-01T12:00:00Z\",\"data\":{}},\"config\":{\"types\":[\"vote.cast\"]},\"expectKeep\":false},{\"name\":\"no list keeps all\",\"input\":{\"id\":\"n4\",\"type\":\"test\",\"dao\":\"uniswap\",\"occurredAt\":\"2025-03-01T12:00:00Z\",\"data\":{}},\"config\":{},\"expectKeep\":true}]}")

  ;; govgate_alloc(size) -> ptr: one input at a time, always at $in_base.
  (func (export "govgate_alloc") (param $size i32) (result i32)
    (local $need i32)
    ;; pages needed to hold [0, in_base + size)
    (local.set $need
      (i32.shr_u (i32.add (i32.add (global.get $in_base) (local.get $size)) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (unreachable)))))
    (global.get $in_base))

  (func $pack (param $ptr i32) (param $len i32) (result i64)
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
      (i64.extend_i32_u (local.get $len))))

  (func (export "govgate_meta") (result i64)
    (call $pack (global.get $meta_ptr) (global.get $meta_len)))

  ;; skip(p) -> p past one field (u32 length, bytes)
  (func $skip (param $p i32) (result i32)
    (i32.add (i32.add (local.get $p) (i32.const 4)) (i32.load (local.get $p))))

  ;; listed(cfg, cfg_len, type, type_len) -> 1 if "type" appears after the
  ;; first '[' of cfg, or if cfg has no '['.
  (func $listed (param $cfg i32) (param $clen i32) (param $t i32) (param $tlen i32) (result i32)
    (local $i i32) (local $end i32) (local $k i32) (local $ok i32)
    (local.set $end (i32.add (local.get $cfg) (local.get $clen)))
    ;; find '['
    (local.set $i (local.get $cfg))
    (block $found
      (loop $scan
        (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (i32.const 1))))
        (br_if $found (i32.eq (i32.load8_u (local.get $i)) (i32.const 91))) ;; '['
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $scan)))
    ;; look for '"' type '"' at every position after it
    (block $done
      (loop $try
        (br_if $done (i32.gt_u (i32.add (i32.add (local.get $i) (local.get $tlen)) (i32.const 2)) (local.get $end)))
        (if (i32.and
              (i32.eq (i32.load8_u (local.get $i)) (i32.const 34))
              (i32.eq (i32.load8_u (i32.add (i32.add (local.get $i) (local.get $tlen)) (i32.const 1))) (i32.const 34)))
          (then
            (local.set $ok (i32.const 1))
            (local.set $k (i32.const 0))
            (block $cmp_done
              (loop $cmp
                (br_if $cmp_done (i32.ge_u (local.get $k) (local.get $tlen)))
                (if (i32.ne
                      (i32.load8_u (i32.add (i32.add (local.get $i) (i32.const 1)) (local.get $k)))
                      (i32.load8_u (i32.add (local.get $t) (local.get $k))))
                  (then (local.set $ok (i32.const 0)) (br $cmp_done)))
                (local.set $k (i32.add (local.get $k) (i32.const 1)))
                (br $cmp)))
            (if (local.get $ok) (then (return (i32.const 1))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $try)))
    (i32.const 0))

  ;; govgate_filter(ptr, len) -> packed output: one record per config,
  ;; status 1 (keep) or 0 (drop), no payload.
  (func (export "govgate_filter") (param $ptr i32) (param $len i32) (result i64)
    (local $p i32) (local $t i32) (local $tlen i32) (local $n i32) (local $out i32) (local $clen i32)
    (local.set $p (call $skip (local.get $ptr)))            ;; id
    (local.set $tlen (i32.load (local.get $p)))             ;; type
    (local.set $t (i32.add (local.get $p) (i32.const 4)))
    (local.set $p (call $skip (local.get $p)))
    (local.set $p (call $skip (local.get $p)))              ;; dao
    (local.set $p (call $skip (local.get $p)))              ;; occurredAt
    (local.set $p (call $skip (local.get $p)))              ;; data
    (local.set $p (call $skip (local.get $p)))              ;; body
    (local.set $p (call $skip (local.get $p)))              ;; contentType
    (local.set $n (i32.load (local.get $p)))                ;; config count
    (local.set $p (i32.add (local.get $p) (i32.const 4)))
    (if (i32.gt_u (local.get $n) (i32.const 4096)) (then (unreachable)))
    (local.set $out (global.get $out_base))
    (block $done
      (loop $each
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $clen (i32.load (local.get $p)))
        (i32.store8 (local.get $out)
          (call $listed (i32.add (local.get $p) (i32.const 4)) (local.get $clen) (local.get $t) (local.get $tlen)))
        (i32.store (i32.add (local.get $out) (i32.const 1)) (i32.const 0))
        (local.set $out (i32.add (local.get $out) (i32.const 5)))
        (local.set $p (call $skip (local.get $p)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $each)))
    (call $pack (global.get $out_base) (i32.sub (local.get $out) (global.get $out_base))))
)
