// Package schemas holds the JSON Schema of govgate notifications and checks,
// in its tests, that the documented examples and the bodies govgate builds
// satisfy it.
package schemas
