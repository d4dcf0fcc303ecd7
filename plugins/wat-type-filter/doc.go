// Package wattypefilter is a plugin written without the Go SDK, in
// hand-written WebAssembly text (plugin.wat), to show that the plugin ABI is
// language-neutral. This file only documents the folder; plugin_test.go checks
// the module.
package wattypefilter
