//go:build race

package wasmhost

// raceEnabled: the race detector makes wazero's compiler, written in Go,
// about ten times slower; the long tests then do fewer rounds.
const raceEnabled = true
