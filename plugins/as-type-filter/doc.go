// Package astypefilter is a plugin written in AssemblyScript
// (assembly/index.ts) with the @govgate/sdk library in sdk/assemblyscript.
// This file only documents the folder; plugin_test.go builds the module
// with npm and checks it in the gateway's host, beside the Go event-filter.
package astypefilter
