package receiver

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// SignRequest signs a request to govgate's webhook service as the
// endpoint's owner (PATCH /webhooks, POST /webhooks/rotate, GET
// /webhooks/settings, GET /webhooks/deliveries, POST /webhooks/replay),
// with the endpoint's current secret, exactly as govgate signs deliveries:
// X-Webhook-Timestamp is now in Unix seconds and X-Webhook-Signature-V2
// the hex HMAC-SHA256 of "{timestamp}.{body}". A request without a body
// (GET) signs "{timestamp}.GET {target}" instead, target being its path
// and query as sent (req.URL.RequestURI()). The body is read and put back.
// Sign each request anew: govgate accepts a signature once.
func SignRequest(secret string, req *http.Request, now time.Time) error {
	if secret == "" {
		return fmt.Errorf("sign request: %w", ErrNoSecret)
	}
	var signed []byte
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return fmt.Errorf("sign request: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		signed = body
	} else {
		signed = []byte(req.Method + " " + req.URL.RequestURI())
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	_, _ = io.WriteString(mac, ts) // a hash never fails a write
	mac.Write([]byte{'.'})
	mac.Write(signed)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, hex.EncodeToString(mac.Sum(nil)))
	return nil
}
