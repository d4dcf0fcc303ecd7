//go:build race

package delivery

// raceDetector is true in a build with the race detector, whose
// instrumentation allocates on its own.
const raceDetector = true
