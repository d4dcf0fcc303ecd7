package receiver_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"go/build"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/sdk/receiver"
)

// vector is one entry of testdata/vectors.json, which
// testdata/genvectors writes and core/internal/signing's tests also load.
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
	data, err := os.ReadFile("testdata/vectors.json")
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

func TestVerifyVectors(t *testing.T) {
	t.Parallel()
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			now := time.Unix(v.Timestamp, 0)
			for _, sig := range []string{v.SignatureV2, strings.ToUpper(v.SignatureV2)} {
				h := headers(strconv.FormatInt(v.Timestamp, 10), sig)
				if err := receiver.Verify(v.Secret, h, []byte(v.Body), now); err != nil {
					t.Errorf("Verify(%s) = %v, want nil", sig, err)
				}
			}
		})
	}
}

const testSecret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

var (
	testNow  = time.Unix(1767225600, 0)
	testBody = []byte(`{"type":"test","data":{}}`)
)

// sign computes the V2 signature the way section 5 of the delivery contract
// describes it, independently of the package under test.
func sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func headers(ts, sig string) http.Header {
	h := http.Header{}
	h.Set(receiver.HeaderTimestamp, ts)
	h.Set(receiver.HeaderSignature, sig)
	return h
}

func TestVerify(t *testing.T) {
	t.Parallel()
	nowText := strconv.FormatInt(testNow.Unix(), 10)
	signed := func(ts string) http.Header { return headers(ts, sign(testSecret, ts, testBody)) }
	at := func(d time.Duration) string { return strconv.FormatInt(testNow.Add(d).Unix(), 10) }
	good := sign(testSecret, nowText, testBody)

	tests := []struct {
		name   string
		secret string
		header http.Header
		body   []byte
		now    time.Time
		want   error
		status int
	}{
		{name: "valid", header: signed(nowText), status: 200},
		{name: "upper-case hex", header: headers(nowText, strings.ToUpper(good)), status: 200},
		{name: "mixed-case hex", header: headers(nowText, strings.ToUpper(good[:10])+good[10:]), status: 200},
		{name: "300 s old", header: signed(at(-300 * time.Second)), status: 200},
		{name: "300 s in future", header: signed(at(300 * time.Second)), status: 200},
		{name: "timestamp with leading zeros", header: signed("0" + nowText), status: 200},

		{name: "missing timestamp", header: http.Header{receiver.HeaderSignature: {good}}, want: receiver.ErrMissingHeader, status: 400},
		{name: "missing signature", header: http.Header{receiver.HeaderTimestamp: {nowText}}, want: receiver.ErrMissingHeader, status: 400},
		{name: "missing both", header: http.Header{}, want: receiver.ErrMissingHeader, status: 400},
		{name: "nil header", header: nil, want: receiver.ErrMissingHeader, status: 400},

		{name: "timestamp abc", header: signed("abc"), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp 1e3", header: signed("1e3"), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp NaN", header: signed("NaN"), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp Infinity", header: signed("Infinity"), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp -Infinity", header: signed("-Infinity"), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp empty", header: signed(""), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp leading space", header: signed(" 1"), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp trailing space", header: signed(nowText + " "), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp fraction", header: signed(nowText + ".0"), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp plus sign", header: signed("+" + nowText), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp negative", header: signed("-1"), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp hex", header: signed("0x6955b900"), want: receiver.ErrInvalidTimestamp, status: 400},
		{name: "timestamp overflows int64", header: signed("99999999999999999999"), want: receiver.ErrInvalidTimestamp, status: 400},

		{name: "301 s old", header: signed(at(-301 * time.Second)), want: receiver.ErrTimestampOutOfRange, status: 400},
		{name: "301 s in future", header: signed(at(301 * time.Second)), want: receiver.ErrTimestampOutOfRange, status: 400},
		{name: "300.5 s old", header: signed(nowText), now: testNow.Add(300*time.Second + 500*time.Millisecond), want: receiver.ErrTimestampOutOfRange, status: 400},
		{name: "zero timestamp", header: signed("0"), want: receiver.ErrTimestampOutOfRange, status: 400},
		{name: "max int64 timestamp", header: signed("9223372036854775807"), want: receiver.ErrTimestampOutOfRange, status: 400},
		{name: "stale and badly signed is 400", header: headers(at(-time.Hour), "00"), want: receiver.ErrTimestampOutOfRange, status: 400},

		{name: "wrong signature", header: headers(nowText, sign("whsec_other", nowText, testBody)), want: receiver.ErrSignatureMismatch, status: 401},
		{name: "shorter signature", header: headers(nowText, good[:63]), want: receiver.ErrSignatureMismatch, status: 401},
		{name: "longer signature", header: headers(nowText, good+"0"), want: receiver.ErrSignatureMismatch, status: 401},
		{name: "empty signature", header: headers(nowText, ""), want: receiver.ErrSignatureMismatch, status: 401},
		{name: "tampered body", header: signed(nowText), body: []byte(`{"type":"test","data":{"x":1}}`), want: receiver.ErrSignatureMismatch, status: 401},
		{name: "body with extra newline", header: signed(nowText), body: append(append([]byte{}, testBody...), '\n'), want: receiver.ErrSignatureMismatch, status: 401},
		{name: "signature over other timestamp", header: headers(at(time.Second), good), want: receiver.ErrSignatureMismatch, status: 401},
		{name: "key without whsec_ prefix", secret: strings.TrimPrefix(testSecret, "whsec_"), header: signed(nowText), want: receiver.ErrSignatureMismatch, status: 401},
		{name: "base64 signature", header: headers(nowText, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="), want: receiver.ErrSignatureMismatch, status: 401},

		{name: "empty secret", secret: "-", header: signed(nowText), want: receiver.ErrNoSecret, status: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secret, body, now := testSecret, testBody, testNow
			switch tt.secret {
			case "":
			case "-":
				secret = ""
			default:
				secret = tt.secret
			}
			if tt.body != nil {
				body = tt.body
			}
			if !tt.now.IsZero() {
				now = tt.now
			}
			err := receiver.Verify(secret, tt.header, body, now)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
			if got := receiver.StatusCode(err); got != tt.status {
				t.Errorf("StatusCode(%v) = %d, want %d", err, got, tt.status)
			}
			if err != nil && strings.Contains(err.Error(), secret) && secret != "" {
				t.Errorf("error %q contains the secret", err)
			}
		})
	}
}

func TestStatusCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{nil, 200},
		{receiver.ErrMissingHeader, 400},
		{receiver.ErrInvalidTimestamp, 400},
		{receiver.ErrTimestampOutOfRange, 400},
		{receiver.ErrSignatureMismatch, 401},
		{receiver.ErrBodyTooLarge, 413},
		{receiver.ErrNoSecret, 500},
		{errors.New("something else"), 500},
	}
	for _, tt := range tests {
		if got := receiver.StatusCode(tt.err); got != tt.want {
			t.Errorf("StatusCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestStandardLibraryOnly keeps the promise of the sdk: a receiver, and the
// example receiver, import nothing outside the standard library and the sdk.
func TestStandardLibraryOnly(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".", "cmd/example-receiver"} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range append(pkg.Imports, pkg.TestImports...) {
			first, _, _ := strings.Cut(imp, "/")
			if strings.Contains(first, ".") && !strings.HasPrefix(imp, "github.com/govgate/govgate/sdk/") {
				t.Errorf("%s imports %s, outside the standard library", dir, imp)
			}
		}
	}
}
