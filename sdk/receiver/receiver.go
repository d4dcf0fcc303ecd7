// Package receiver verifies govgate's signed webhook deliveries. A webhook
// receiver imports it to check the X-Webhook-Timestamp and
// X-Webhook-Signature-V2 headers against the secret returned at registration
// before it trusts, or even parses, a delivery's body.
//
// It uses the standard library only, so it also builds for
// GOOS=wasip1 GOARCH=wasm.
package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Header names of a signed delivery.
const (
	HeaderTimestamp = "X-Webhook-Timestamp"
	HeaderSignature = "X-Webhook-Signature-V2"
	// HeaderSignatureNext is present during a secret rotation's overlap:
	// HeaderSignature then keeps the previous secret's digest, so receivers
	// not yet updated go on verifying, and this header carries the new
	// secret's.
	HeaderSignatureNext = "X-Webhook-Signature-V2-Next"
)

// Tolerance is the largest accepted difference, either way, between the
// receiver's clock and a delivery's timestamp. Older deliveries are refused
// as possible replays.
const Tolerance = 300 * time.Second

// Verification failures. StatusCode maps each to the status a receiver
// answers with.
var (
	// ErrMissingHeader means X-Webhook-Timestamp or X-Webhook-Signature-V2
	// is absent (400).
	ErrMissingHeader = errors.New("missing signature header")
	// ErrInvalidTimestamp means the timestamp is not a decimal integer of
	// Unix seconds (400).
	ErrInvalidTimestamp = errors.New("timestamp is not a decimal integer")
	// ErrTimestampOutOfRange means the timestamp is more than Tolerance away
	// from the receiver's clock (400).
	ErrTimestampOutOfRange = errors.New("timestamp outside the accepted window")
	// ErrSignatureMismatch means the signature is not the HMAC of the
	// delivery under the receiver's secret (401).
	ErrSignatureMismatch = errors.New("signature mismatch")
	// ErrNoSecret means the receiver was given an empty secret: every
	// delivery is refused rather than checked against an empty key (500).
	ErrNoSecret = errors.New("no webhook secret configured")
	// ErrBodyTooLarge means Middleware refused a body above its limit (413).
	ErrBodyTooLarge = errors.New("request body too large")
)

// Verify checks a delivery against secret, the whole "whsec_..." string
// returned at registration, as section 5 of the delivery contract says:
// both headers present, a decimal timestamp within Tolerance of now, and a
// hex HMAC-SHA256 of "{timestamp}.{body}" that matches in constant time.
// body must be the raw request body, unparsed. It returns nil or an error
// that wraps one of the Err variables; StatusCode gives the answer to send.
//
// During a rotation's overlap the digest may also be in
// X-Webhook-Signature-V2-Next (the new secret's); Verify accepts it there
// too, so a receiver switched to the new secret verifies from the start.
//
// The timestamp is checked before the signature, so a stale delivery is
// refused with 400 without computing an HMAC.
func Verify(secret string, header http.Header, body []byte, now time.Time) error {
	return VerifyAny([]string{secret}, header, body, now)
}

// VerifyAny is Verify with several secrets, as a receiver holds them
// during a rotation (the previous and the new): the delivery passes when
// any secret's digest is in X-Webhook-Signature-V2 or
// X-Webhook-Signature-V2-Next. Every comparison is made, in constant time
// each, whichever matches.
func VerifyAny(secrets []string, header http.Header, body []byte, now time.Time) error {
	if len(secrets) == 0 {
		return fmt.Errorf("verify webhook: %w", ErrNoSecret)
	}
	for _, s := range secrets {
		if s == "" {
			return fmt.Errorf("verify webhook: %w", ErrNoSecret)
		}
	}
	// A header sent with an empty value is present: an empty timestamp is
	// invalid and an empty signature mismatches.
	tsValues := header.Values(HeaderTimestamp)
	if len(tsValues) == 0 {
		return fmt.Errorf("verify webhook: %s: %w", HeaderTimestamp, ErrMissingHeader)
	}
	sigValues := header.Values(HeaderSignature)
	if len(sigValues) == 0 {
		return fmt.Errorf("verify webhook: %s: %w", HeaderSignature, ErrMissingHeader)
	}
	ts := tsValues[0]
	sec, ok := parseUnixSeconds(ts)
	if !ok {
		return fmt.Errorf("verify webhook: %s: %w", HeaderTimestamp, ErrInvalidTimestamp)
	}
	if !withinTolerance(now, sec) {
		return fmt.Errorf("verify webhook: %s: %w", HeaderTimestamp, ErrTimestampOutOfRange)
	}
	var buf [2][]byte
	got := append(buf[:0], lowerASCII(sigValues[0]))
	if next := header.Values(HeaderSignatureNext); len(next) > 0 {
		got = append(got, lowerASCII(next[0]))
	}
	match := false
	for _, secret := range secrets {
		want := digest(secret, ts, body)
		for _, g := range got {
			// hmac.Equal is constant-time for equal lengths and false otherwise.
			if hmac.Equal(want, g) {
				match = true
			}
		}
	}
	if !match {
		return fmt.Errorf("verify webhook: %s: %w", HeaderSignature, ErrSignatureMismatch)
	}
	return nil
}

// digest is the hex HMAC-SHA256 of "{ts}.{body}" keyed with secret.
func digest(secret, ts string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	_, _ = io.WriteString(mac, ts) // the header's own text, not a re-formatted number; a hash never fails a write
	mac.Write([]byte{'.'})
	mac.Write(body)
	var sum [sha256.Size]byte
	want := make([]byte, hex.EncodedLen(sha256.Size))
	hex.Encode(want, mac.Sum(sum[:0]))
	return want
}

// StatusCode returns the status a receiver answers with after Verify (or
// Middleware) returned err: 200 for nil, 400 for a missing header or a bad
// or stale timestamp, 401 for a signature mismatch, 413 for a body over the
// limit and 500 for anything else, such as a missing secret.
func StatusCode(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrMissingHeader),
		errors.Is(err, ErrInvalidTimestamp),
		errors.Is(err, ErrTimestampOutOfRange):
		return http.StatusBadRequest
	case errors.Is(err, ErrSignatureMismatch):
		return http.StatusUnauthorized
	case errors.Is(err, ErrBodyTooLarge):
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusInternalServerError
	}
}

// parseUnixSeconds accepts ASCII digits only. strconv.ParseInt alone would
// also take a sign, and ParseFloat would take "1e3", "NaN" and "Infinity";
// the contract's timestamp is a decimal integer.
func parseUnixSeconds(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// withinTolerance reports whether |now - sec| <= Tolerance, counting now's
// fraction of a second. It works on integer seconds so that no timestamp,
// however large, can overflow time arithmetic into the window.
func withinTolerance(now time.Time, sec int64) bool {
	const limit = int64(Tolerance / time.Second)
	diff := now.Unix() - sec // now.Unix() floors, so now = diff + frac with frac in [0, 1)
	switch {
	case diff > limit, diff == limit && now.Nanosecond() > 0:
		return false // too old
	case diff < -limit:
		return false // too far in the future
	}
	return true
}

// lowerASCII returns s as bytes with A-Z lowered, so that an upper-case hex
// digest from the header compares equal to the lower-case one computed here.
func lowerASCII(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return b
}
