package signing_test

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/signing"
	"github.com/govgate/govgate/sdk/receiver"
)

// FuzzSignThenVerify: what the gateway signs, the SDK's receiver verifies,
// for any key, delivery id, time and body; and it refuses the same headers
// over a body changed in one byte. The two are separate implementations of
// the delivery contract, so this is a differential check of both.
func FuzzSignThenVerify(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef"), "msg_1", uint32(1_700_000_000), []byte(`{"type":"vote.cast"}`), uint16(3))
	f.Add([]byte{}, "", uint32(0), []byte{}, uint16(0))
	f.Add([]byte{0xff, 0x00}, "id with spaces\n", uint32(1<<32-1), []byte{0, 1, 2}, uint16(2))
	f.Fuzz(func(t *testing.T, key []byte, msgID string, unix uint32, body []byte, flip uint16) {
		secret := signing.SecretPrefix + base64.StdEncoding.EncodeToString(key)
		// Attempts are signed at their time, after 1970: the contract's
		// timestamp is unsigned.
		at := time.Unix(int64(unix), 0)
		h := signing.Sign(secret, msgID, at, body)
		if err := receiver.Verify(secret, h, body, at); err != nil {
			t.Fatalf("a signed delivery does not verify: %v (headers %v)", err, h)
		}
		// The Signer gives the same headers as Sign.
		h2 := signing.Sign(secret, msgID, at, body)
		signing.NewSigner(secret).SignHeader(h2, msgID, at, body)
		for k := range h {
			if h.Get(k) != h2.Get(k) {
				t.Fatalf("header %s: Sign %q, Signer %q", k, h.Get(k), h2.Get(k))
			}
		}
		if len(body) == 0 {
			return
		}
		changed := append([]byte(nil), body...)
		changed[int(flip)%len(changed)] ^= 1
		if err := receiver.Verify(secret, h, changed, at); !errors.Is(err, receiver.ErrSignatureMismatch) {
			t.Fatalf("a changed body: %v, want a signature mismatch", err)
		}
	})
}
