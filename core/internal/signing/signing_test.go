package signing_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/signing"
	"github.com/govgate/govgate/sdk/receiver"
)

// vectorsFile is shared with sdk/receiver's tests, so the signer and the
// verifier cannot drift apart.
const vectorsFile = "../../../sdk/receiver/testdata/vectors.json"

type vector struct {
	Name             string `json:"name"`
	Secret           string `json:"secret"`
	Timestamp        int64  `json:"timestamp"`
	Body             string `json:"body"`
	SignatureV2      string `json:"signature_v2"`
	StandardWebhooks struct {
		ID        string `json:"id"`
		Signature string `json:"signature"`
	} `json:"standard_webhooks"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	data, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(data, &vs); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	if len(vs) < 6 {
		t.Fatalf("got %d vectors, want at least 6", len(vs))
	}
	return vs
}

func TestSignVectors(t *testing.T) {
	t.Parallel()
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			ts := strconv.FormatInt(v.Timestamp, 10)
			// Sign, and a Signer twice over (the second time from its reused,
			// already keyed states) must all give the vector's headers.
			signer := signing.NewSigner(v.Secret)
			for _, via := range []string{"Sign", "Signer", "Signer again"} {
				h := signing.Sign(v.Secret, v.StandardWebhooks.ID, time.Unix(v.Timestamp, 0), []byte(v.Body))
				if via != "Sign" {
					h = http.Header{}
					signer.SignHeader(h, v.StandardWebhooks.ID, time.Unix(v.Timestamp, 0), []byte(v.Body))
				}
				checkHeaders(t, via, h, v, ts)
			}
		})
	}
}

func checkHeaders(t *testing.T, via string, h http.Header, v vector, ts string) {
	t.Helper()
	want := map[string]string{
		"X-Webhook-Id":           v.StandardWebhooks.ID,
		"X-Webhook-Timestamp":    ts,
		"X-Webhook-Signature-V2": v.SignatureV2,
		"Webhook-Id":             v.StandardWebhooks.ID,
		"Webhook-Timestamp":      ts,
		"Webhook-Signature":      v.StandardWebhooks.Signature,
	}
	if len(h) != len(want) {
		t.Errorf("%s set %d headers, want %d: %v", via, len(h), len(want), h)
	}
	for name, value := range want {
		if got := h.Values(name); len(got) != 1 || got[0] != value {
			t.Errorf("%s: %s = %q, want [%q]", via, name, got, value)
		}
	}
}

// A Signer shared by many goroutines signs each body as Sign does.
func TestSignerConcurrent(t *testing.T) {
	t.Parallel()
	secret := mustSecret(t)
	signer := signing.NewSigner(secret)
	ts := time.Unix(1767225600, 0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				body := []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))
				h := http.Header{}
				signer.SignHeader(h, "msg_1", ts, body)
				want := signing.Sign(secret, "msg_1", ts, body)
				for _, name := range []string{signing.HeaderSignatureV2, signing.HeaderStandardSignature} {
					if h.Get(name) != want.Get(name) {
						t.Errorf("goroutine %d body %d: %s = %q, want %q", g, i, name, h.Get(name), want.Get(name))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestSignSubSecondTimestamp(t *testing.T) {
	t.Parallel()
	ts := time.Unix(1767225600, 999_999_999)
	h := signing.Sign(mustSecret(t), "msg_1", ts, []byte("{}"))
	if got := h.Get(signing.HeaderTimestamp); got != "1767225600" {
		t.Errorf("timestamp = %q, want truncated seconds", got)
	}
}

func mustSecret(t testing.TB) string {
	t.Helper()
	s, err := signing.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRoundTrip signs with this package and verifies with the sdk a
// receiver imports, over the vectors' bodies and fresh secrets.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Now()
	bodies := []string{"", "{}", "{\"a\":1}\n", `{"title":"提案 🗳️"}`}
	for _, v := range loadVectors(t) {
		bodies = append(bodies, v.Body)
	}
	for _, body := range bodies {
		secret := mustSecret(t)
		h := signing.Sign(secret, "msg_rt", now, []byte(body))
		if err := receiver.Verify(secret, h, []byte(body), now); err != nil {
			t.Errorf("Verify(body %q) = %v", body, err)
		}
		if err := receiver.Verify(secret, h, []byte(body+" "), now); !errors.Is(err, receiver.ErrSignatureMismatch) {
			t.Errorf("Verify(tampered body %q) = %v, want mismatch", body, err)
		}
		if err := receiver.Verify(mustSecret(t), h, []byte(body), now); !errors.Is(err, receiver.ErrSignatureMismatch) {
			t.Errorf("Verify(other secret) = %v, want mismatch", err)
		}
	}
	if signing.HeaderTimestamp != receiver.HeaderTimestamp || signing.HeaderSignatureV2 != receiver.HeaderSignature {
		t.Error("header names differ between signer and receiver")
	}
}

// verifyStandardWebhooks follows the Standard Webhooks specification's
// verification steps written out here, not through Sign: strip "whsec_",
// base64-decode the key, HMAC-SHA256 "{id}.{timestamp}.{body}", and accept
// when any space-separated "v1,<base64>" entry matches in constant time and
// the timestamp is within five minutes.
func verifyStandardWebhooks(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, tsText, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || tsText == "" || sigs == "" {
		return errors.New("missing headers")
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return err
	}
	if d := now.Sub(time.Unix(ts, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp out of tolerance")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + tsText + "." + string(body)))
	expected := mac.Sum(nil)
	for _, entry := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, expected) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

func TestStandardWebhooks(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, body := range []string{"", "{}", `{"type":"proposal.created","dao":"uniswap"}`, "x\n"} {
		secret := mustSecret(t)
		h := signing.Sign(secret, "msg_2ZQ", now, []byte(body))
		if err := verifyStandardWebhooks(secret, h, []byte(body), now); err != nil {
			t.Errorf("body %q: %v", body, err)
		}
		if err := verifyStandardWebhooks(secret, h, []byte(body+"!"), now); err == nil {
			t.Errorf("body %q: tampered body verified", body)
		}
		h.Set("Webhook-Id", "msg_other")
		if err := verifyStandardWebhooks(secret, h, []byte(body), now); err == nil {
			t.Errorf("body %q: changed id verified", body)
		}
	}
	// The specification's published example, through the same verifier.
	for _, v := range loadVectors(t) {
		h := signing.Sign(v.Secret, v.StandardWebhooks.ID, time.Unix(v.Timestamp, 0), []byte(v.Body))
		if err := verifyStandardWebhooks(v.Secret, h, []byte(v.Body), time.Unix(v.Timestamp, 0)); err != nil {
			t.Errorf("%s: %v", v.Name, err)
		}
	}
}

func TestSignNonBase64Secret(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{"whsec_", "whsec_not base64!", "plain-shared-secret"} {
		h := signing.Sign(secret, "msg_1", time.Unix(1767225600, 0), []byte("{}"))
		fromSigner := http.Header{signing.HeaderStandardSignature: {"v1,stale"}}
		signing.NewSigner(secret).SignHeader(fromSigner, "msg_1", time.Unix(1767225600, 0), []byte("{}"))
		for via, h := range map[string]http.Header{"Sign": h, "Signer": fromSigner} {
			if h.Get(signing.HeaderSignatureV2) == "" {
				t.Errorf("%s %q: no V2 signature", via, secret)
			}
			for _, name := range []string{signing.HeaderStandardID, signing.HeaderStandardTimestamp, signing.HeaderStandardSignature} {
				if _, ok := h[name]; ok {
					t.Errorf("%s %q: %s set without a Standard Webhooks key", via, secret, name)
				}
			}
		}
		if h.Get(signing.HeaderSignatureV2) != fromSigner.Get(signing.HeaderSignatureV2) {
			t.Errorf("%q: Sign and Signer disagree", secret)
		}
	}
}

func TestSignHeaderReplaces(t *testing.T) {
	t.Parallel()
	secret := mustSecret(t)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Add(signing.HeaderSignatureV2, "stale")
	h.Add(signing.HeaderStandardSignature, "v1,stale")
	signing.SignHeader(h, secret, "msg_1", time.Unix(1767225600, 0), []byte("{}"))
	if got := h.Values(signing.HeaderSignatureV2); len(got) != 1 || got[0] == "stale" {
		t.Errorf("V2 signature = %q, want one fresh value", got)
	}
	if got := h.Values(signing.HeaderStandardSignature); len(got) != 1 || got[0] == "v1,stale" {
		t.Errorf("standard signature = %q, want one fresh value", got)
	}
	if h.Get("Content-Type") != "application/json" {
		t.Error("SignHeader dropped an unrelated header")
	}
	// Values share one backing array; adding to one header must not
	// overwrite the next.
	h.Add(signing.HeaderID, "extra")
	if got := h.Get(signing.HeaderTimestamp); got != "1767225600" {
		t.Errorf("timestamp = %q after Add to another header", got)
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		s := mustSecret(t)
		if !signing.ValidSecret(s) {
			t.Fatalf("NewSecret() = %q, not ValidSecret", s)
		}
		if seen[s] {
			t.Fatalf("NewSecret repeated %q", s)
		}
		seen[s] = true
	}
}

func TestValidSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret string
		want   bool
	}{
		{"32 bytes", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", true},
		{"32 bytes with + and /", "whsec_/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+8=", true},
		{"empty", "", false},
		{"prefix only", "whsec_", false},
		{"no prefix", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", false},
		{"upper-case prefix", "WHSEC_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", false},
		{"24 bytes (spec example)", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},
		{"33 bytes", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g", false},
		{"missing padding", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", false},
		{"non-canonical padding bits", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=", false},
		{"url-safe alphabet", "whsec_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-8=", false},
		{"trailing newline", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n", false},
		{"inner newline", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd\nHh8=", false},
	}
	for _, tt := range tests {
		if got := signing.ValidSecret(tt.secret); got != tt.want {
			t.Errorf("%s: ValidSecret(%q) = %v, want %v", tt.name, tt.secret, got, tt.want)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	secret := mustSecret(b)
	ts := time.Unix(1767225600, 0)
	for _, size := range []int{256, 4 << 10, 64 << 10} {
		body := []byte(strings.Repeat("x", size))
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				signing.Sign(secret, "msg_2ZQxPz0123456789", ts, body)
			}
		})
	}
}

// BenchmarkSignHeader compares keying both HMACs on every call (SignHeader)
// with a Signer's reused, already keyed states.
func BenchmarkSignHeader(b *testing.B) {
	secret := mustSecret(b)
	signer := signing.NewSigner(secret)
	ts := time.Unix(1767225600, 0)
	body := []byte(strings.Repeat("x", 4<<10))
	for name, sign := range map[string]func(h http.Header){
		"fresh":  func(h http.Header) { signing.SignHeader(h, secret, "msg_2ZQxPz0123456789", ts, body) },
		"signer": func(h http.Header) { signer.SignHeader(h, "msg_2ZQxPz0123456789", ts, body) },
	} {
		b.Run(name, func(b *testing.B) {
			h := http.Header{"Content-Type": {"application/json"}}
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				sign(h)
			}
		})
	}
}
