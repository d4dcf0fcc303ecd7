// Package signing signs webhook deliveries. The dispatcher calls Sign (or
// SignHeader) on every attempt; the registration handler calls NewSecret.
//
// A delivery carries two signatures over the same body and second:
//
//   - govgate's own, from section 5 of the delivery contract:
//     X-Webhook-Timestamp and X-Webhook-Signature-V2, the lowercase hex
//     HMAC-SHA256 of "{timestamp}.{body}" keyed with the whole secret string,
//     which sdk/receiver verifies;
//   - Standard Webhooks (https://www.standardwebhooks.com): webhook-id,
//     webhook-timestamp and webhook-signature "v1,<base64 HMAC-SHA256 of
//     "{id}.{timestamp}.{body}">" keyed with the base64-decoded part of the
//     secret after "whsec_", so receivers may use that specification's
//     libraries instead.
package signing

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header names, in canonical form, set by Sign.
const (
	HeaderID          = "X-Webhook-Id"
	HeaderTimestamp   = "X-Webhook-Timestamp"
	HeaderSignatureV2 = "X-Webhook-Signature-V2"

	HeaderStandardID        = "Webhook-Id"
	HeaderStandardTimestamp = "Webhook-Timestamp"
	HeaderStandardSignature = "Webhook-Signature"
)

// SecretPrefix begins every secret that NewSecret returns.
const SecretPrefix = "whsec_"

// secretKeySize is the number of random bytes behind a secret.
const secretKeySize = 32

// NewSecret returns a fresh registration secret: SecretPrefix followed by
// the standard base64 of 32 random bytes.
func NewSecret() (string, error) {
	var key [secretKeySize]byte
	if _, err := rand.Read(key[:]); err != nil {
		return "", fmt.Errorf("new webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key[:]), nil
}

// ValidSecret reports whether s has the form NewSecret returns: the prefix
// and the canonical standard base64 of exactly 32 bytes.
func ValidSecret(s string) bool {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok || len(rest) != base64.StdEncoding.EncodedLen(secretKeySize) {
		return false
	}
	var key [secretKeySize + 1]byte // DecodedLen of 44 characters is 33
	n, err := base64.StdEncoding.Strict().Decode(key[:], []byte(rest))
	return err == nil && n == secretKeySize
}

// Sign returns the signature headers of one delivery attempt: msgID is the
// delivery's stable identifier (the same on every retry, so receivers can
// drop duplicates), ts the attempt's time, truncated to Unix seconds, and
// body the exact bytes that will be sent.
//
// The Standard Webhooks headers are left out when the part of secret after
// "whsec_" is not standard base64, since that scheme has no key then; every
// secret from NewSecret has both.
func Sign(secret, msgID string, ts time.Time, body []byte) http.Header {
	h := make(http.Header, 6)
	SignHeader(h, secret, msgID, ts, body)
	return h
}

// SignHeader is Sign writing into h, typically an outgoing request's Header,
// replacing any values the signature headers had.
func SignHeader(h http.Header, secret, msgID string, ts time.Time, body []byte) {
	var keyBuf [64]byte
	key, ok := standardKey(secret, keyBuf[:])
	var std hash.Hash
	if ok {
		std = hmac.New(sha256.New, key)
	}
	signHeader(h, hmac.New(sha256.New, []byte(secret)), std, msgID, ts, body)
}

// Signer signs with one secret, as SignHeader does. Keying an HMAC
// allocates two SHA-256 states and hashes two key blocks, and a delivery
// needs two HMACs: a Signer keys each once and reuses the keyed states. It
// is safe for concurrent use.
type Signer struct {
	v2, std sync.Pool // of keyed hash.Hash
	hasStd  bool
}

// NewSigner returns a Signer for secret.
func NewSigner(secret string) *Signer {
	var keyBuf [64]byte
	key, ok := standardKey(secret, keyBuf[:])
	key = bytes.Clone(key)
	s := &Signer{hasStd: ok}
	s.v2.New = func() any { return hmac.New(sha256.New, []byte(secret)) }
	s.std.New = func() any { return hmac.New(sha256.New, key) }
	return s
}

// SignHeader is the package's SignHeader with the Signer's secret.
func (s *Signer) SignHeader(h http.Header, msgID string, ts time.Time, body []byte) {
	v2 := s.v2.Get().(hash.Hash)
	defer s.v2.Put(v2)
	var std hash.Hash
	if s.hasStd {
		std = s.std.Get().(hash.Hash)
		defer s.std.Put(std)
	}
	signHeader(h, v2, std, msgID, ts, body)
}

// signHeader signs with v2, keyed with the secret string, and std, keyed
// with the Standard Webhooks key (nil when the secret has none). Both are
// reset first.
func signHeader(h http.Header, v2, std hash.Hash, msgID string, ts time.Time, body []byte) {
	var tsBuf [20]byte
	tsText := strconv.AppendInt(tsBuf[:0], ts.Unix(), 10)

	var sum [sha256.Size]byte
	v2.Reset()
	v2.Write(tsText)
	v2.Write(dot)
	v2.Write(body)
	var hexSig [2 * sha256.Size]byte
	hex.Encode(hexSig[:], v2.Sum(sum[:0]))

	// One backing array for every value; each header gets a slice of it
	// with capacity 1, so an Add on one header cannot write into another.
	vals := make([]string, 6)
	vals[0], vals[1], vals[2] = msgID, string(tsText), string(hexSig[:])
	h[HeaderID] = vals[0:1:1]
	h[HeaderTimestamp] = vals[1:2:2]
	h[HeaderSignatureV2] = vals[2:3:3]

	if std == nil {
		delete(h, HeaderStandardID)
		delete(h, HeaderStandardTimestamp)
		delete(h, HeaderStandardSignature)
		return
	}
	std.Reset()
	_, _ = io.WriteString(std, msgID) // a hash.Hash never fails a write
	std.Write(dot)
	std.Write(tsText)
	std.Write(dot)
	std.Write(body)
	var v1 [len("v1,") + 44]byte // 44 = base64 length of a SHA-256 sum
	copy(v1[:], "v1,")
	base64.StdEncoding.Encode(v1[len("v1,"):], std.Sum(sum[:0]))
	vals[3], vals[4], vals[5] = msgID, vals[1], string(v1[:])
	h[HeaderStandardID] = vals[3:4:4]
	h[HeaderStandardTimestamp] = vals[4:5:5]
	h[HeaderStandardSignature] = vals[5:6:6]
}

var dot = []byte{'.'}

// standardKey returns the Standard Webhooks key of secret: the standard
// base64 decoding of what follows "whsec_". It decodes into buf when the
// key fits, which it does for every secret from NewSecret.
func standardKey(secret string, buf []byte) ([]byte, bool) {
	enc := strings.TrimPrefix(secret, SecretPrefix)
	if enc == "" {
		return nil, false
	}
	if n := base64.StdEncoding.DecodedLen(len(enc)); n > len(buf) {
		buf = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(buf, []byte(enc))
	if err != nil || n == 0 {
		return nil, false
	}
	return buf[:n], true
}

// HeaderSignatureV2Next carries, during a rotation's overlap, the
// X-Webhook-Signature-V2 digest under the new secret.
//
// X-Webhook-Signature-V2 holds one digest, and the delivery contract tells
// receivers to compare it with their secret's: were it to switch to the new
// secret at the rotation, every receiver not yet updated would refuse every
// delivery until its owner deployed the new secret. So during the overlap
// it keeps the previous secret's digest, the new secret's goes here, and
// webhook-signature carries both (the Standard Webhooks form of several
// signatures). After the overlap, X-Webhook-Signature-V2 is the new
// secret's and this header is absent. sdk/receiver, given both secrets,
// checks both headers.
const HeaderSignatureV2Next = "X-Webhook-Signature-V2-Next"

// SignRotated signs as SignHeader with cur, and, when prev is not nil (a
// rotation's overlap), with both: X-Webhook-Signature-V2 under prev,
// X-Webhook-Signature-V2-Next under cur, and webhook-signature
// "v1,<cur> v1,<prev>".
func SignRotated(h http.Header, cur, prev *Signer, msgID string, ts time.Time, body []byte) {
	if prev == nil {
		cur.SignHeader(h, msgID, ts, body)
		delete(h, HeaderSignatureV2Next)
		return
	}
	prev.SignHeader(h, msgID, ts, body)
	oldV2, oldStd := h.Get(HeaderSignatureV2), h.Get(HeaderStandardSignature)
	cur.SignHeader(h, msgID, ts, body)
	newV2, newStd := h.Get(HeaderSignatureV2), h.Get(HeaderStandardSignature)
	h[HeaderSignatureV2] = []string{oldV2}
	h[HeaderSignatureV2Next] = []string{newV2}
	switch {
	case newStd != "" && oldStd != "":
		h[HeaderStandardSignature] = []string{newStd + " " + oldStd}
	case oldStd != "":
		h[HeaderStandardSignature] = []string{oldStd}
	}
}
