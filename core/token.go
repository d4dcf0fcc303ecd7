package core

import (
	"crypto/sha256"
	"crypto/subtle"
)

// TokenMatches compares a presented token with the configured one in
// constant time (hashing first hides the length too).
func TokenMatches(presented, want string) bool {
	if want == "" || presented == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(presented)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
