// Package schemas checks, in its tests, that the JSON Schema of govgate
// notifications published in docs/schemas, and the documented examples beside
// it, agree with each other and with the bodies govgate builds.
package schemas
