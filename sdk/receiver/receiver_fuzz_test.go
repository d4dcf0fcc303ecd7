package receiver_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/sdk/receiver"
)

// FuzzVerify gives Verify any headers and body: it must not panic, must
// answer with one of its errors, and may accept only when the signature
// header is the HMAC of "{timestamp}.{body}", computed here on its own, and
// the timestamp is within the tolerance.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_700_000_000, 0)
	secret := "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	good := func(ts string, body string) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(ts + "." + body))
		return hex.EncodeToString(m.Sum(nil))
	}
	f.Add("1700000000", good("1700000000", "{}"), []byte("{}"))
	f.Add("1700000000", strings.ToUpper(good("1700000000", "{}")), []byte("{}"))
	f.Add("+1700000000", good("+1700000000", "{}"), []byte("{}"))
	f.Add("1e9", "", []byte(nil))
	f.Add("", "00", []byte("x"))
	f.Add("99999999999999999999", "zz", []byte("body"))
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(receiver.HeaderTimestamp, ts)
		h.Set(receiver.HeaderSignature, sig)
		err := receiver.Verify(secret, h, body, now)
		if err != nil {
			for _, known := range []error{receiver.ErrInvalidTimestamp, receiver.ErrTimestampOutOfRange, receiver.ErrSignatureMismatch, receiver.ErrMissingHeader} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("Verify(%q, %q) = %v, none of its errors", ts, sig, err)
		}
		// Accepted: the signature is the HMAC, and the time is an integer
		// of seconds within the tolerance.
		if !strings.EqualFold(sig, good(ts, string(body))) {
			t.Fatalf("accepted %q over %q with signature %q", ts, body, sig)
		}
		if ts == "" || strings.Trim(ts, "0123456789") != "" {
			t.Fatalf("accepted the timestamp %q", ts)
		}
		if sec, err := time.ParseDuration(ts + "s"); err != nil || now.Sub(time.Unix(int64(sec.Seconds()), 0)).Abs() > receiver.Tolerance {
			t.Fatalf("accepted the timestamp %q, %v away", ts, err)
		}
	})
}
