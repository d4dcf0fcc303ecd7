package receiver_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/govgate/govgate/sdk/receiver"
)

// A receiver wraps its handler in Middleware with the secret it was given at
// registration. The handler runs only for deliveries whose signature and
// timestamp check out, and may then parse the body.
func ExampleMiddleware() {
	const secret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	now := time.Unix(1767225600, 0) // a fixed clock keeps the example's output stable

	notifications := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n struct {
			Type string `json:"type"`
			DAO  string `json:"dao"`
		}
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		fmt.Printf("received %s for %s\n", n.Type, n.DAO)
	})
	h := receiver.Middleware(secret, notifications,
		receiver.WithClock(func() time.Time { return now }))

	// What govgate sends: the timestamp, and the hex HMAC-SHA256 of
	// "{timestamp}.{body}" keyed with the whole secret string.
	body := `{"type":"proposal.created","dao":"uniswap"}`
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + body))
	signature := hex.EncodeToString(mac.Sum(nil))

	deliver := func(signature string) {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/govgate", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(receiver.HeaderTimestamp, ts)
		req.Header.Set(receiver.HeaderSignature, signature)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(strings.TrimSpace(fmt.Sprint(rec.Code, " ", rec.Body.String())))
	}
	deliver(signature)
	deliver(strings.Repeat("0", 64))
	// Output:
	// received proposal.created for uniswap
	// 200
	// 401 signature mismatch
}

// Verify suits frameworks that hand over the headers and the raw body
// themselves; StatusCode gives the status to answer with.
func ExampleVerify() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	header := http.Header{}
	header.Set(receiver.HeaderTimestamp, "1614265330")
	header.Set(receiver.HeaderSignature, "2e37df5d4a028c51a7f3133d64ae1e300d2c2c900f1b1d49d4369ad2530f8964")

	err := receiver.Verify(secret, header, body, time.Unix(1614265330, 0))
	fmt.Println(receiver.StatusCode(err), err)

	err = receiver.Verify(secret, header, body, time.Unix(1614265330, 0).Add(time.Hour))
	fmt.Println(receiver.StatusCode(err), err)
	// Output:
	// 200 <nil>
	// 400 verify webhook: X-Webhook-Timestamp: timestamp outside the accepted window
}
