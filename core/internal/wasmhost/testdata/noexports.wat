;; noexports declares ABI v1 but exports none of its functions.
;;
;; Build: wat2wasm noexports.wat -o noexports.wasm (go generate ./core/wasmhost/)
(module
  (import "govgate" "abi_v1" (func $abi_v1))
  (memory (export "memory") 1))
