// Command genvectors writes the delivery-signing test vectors that the
// receiver (sdk/receiver) and the signer (core/internal/signing) tests both load. It
// computes every signature with crypto/hmac directly, independent of either
// package, and checks the Standard Webhooks specification's published
// example before writing anything.
//
// Run it from the repository root when a vector is added:
//
//	go run ./sdk/receiver/testdata/genvectors > sdk/receiver/testdata/vectors.json
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
)

type vector struct {
	Name             string           `json:"name"`
	Secret           string           `json:"secret"`
	Timestamp        int64            `json:"timestamp"`
	Body             string           `json:"body"`
	SignatureV2      string           `json:"signature_v2"`
	StandardWebhooks standardWebhooks `json:"standard_webhooks"`
}

type standardWebhooks struct {
	ID        string `json:"id"`
	Signature string `json:"signature"`
}

// secret32 is "whsec_" + base64 of the bytes 0x00..0x1f: the registration
// form, whose base64 part decodes to 32 bytes.
const secret32 = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

var inputs = []vector{
	{
		// https://www.standardwebhooks.com: the specification's own example,
		// whose key decodes to 24 bytes.
		Name:             "standard-webhooks-spec-example",
		Secret:           "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		Timestamp:        1614265330,
		Body:             `{"test": 2432232314}`,
		StandardWebhooks: standardWebhooks{ID: "msg_p5jXN8AQM9LWM0D4loKWxJek"},
	},
	{
		Name:             "secret-32-bytes-notification",
		Secret:           secret32,
		Timestamp:        1767225600,
		Body:             `{"id":"ntf_01","type":"proposal.created","dao":"uniswap","occurredAt":"2026-01-01T00:00:00Z","data":{"proposalId":"42"}}`,
		StandardWebhooks: standardWebhooks{ID: "ntf_01"},
	},
	{
		Name:             "empty-object-body",
		Secret:           secret32,
		Timestamp:        1700000000,
		Body:             `{}`,
		StandardWebhooks: standardWebhooks{ID: "msg_empty_object"},
	},
	{
		Name:             "unicode-body",
		Secret:           "whsec_dW5pY29kZS10ZXN0LXNlY3JldC0zMi1ieXRlcyEhISE=",
		Timestamp:        1767225601,
		Body:             `{"title":"Proposition n°7 — «financement» 提案 🗳️","voter":"Zoë"}`,
		StandardWebhooks: standardWebhooks{ID: "msg_unicode"},
	},
	{
		Name:             "body-with-trailing-newline",
		Secret:           secret32,
		Timestamp:        1767225602,
		Body:             "{\"type\":\"test\"}\n",
		StandardWebhooks: standardWebhooks{ID: "msg_trailing_newline"},
	},
	{
		Name:             "empty-body",
		Secret:           secret32,
		Timestamp:        1767225603,
		Body:             "",
		StandardWebhooks: standardWebhooks{ID: "msg_empty"},
	},
	{
		// Dots and a timestamp-like prefix in the body must not confuse the
		// "{timestamp}.{body}" framing.
		Name:             "body-with-dots-and-whitespace",
		Secret:           "whsec_/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+8=",
		Timestamp:        1767225604,
		Body:             "1767225604.{\n  \"a\": \"b.c\",\t\"n\": 1.5\r\n}",
		StandardWebhooks: standardWebhooks{ID: "msg.with.dots"},
	},
}

func main() {
	out := make([]vector, 0, len(inputs))
	for _, v := range inputs {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(v.Secret, "whsec_"))
		if err != nil {
			log.Fatalf("vector %s: decode secret: %v", v.Name, err)
		}
		ts := strconv.FormatInt(v.Timestamp, 10)
		v.SignatureV2 = hex.EncodeToString(mac([]byte(v.Secret), ts+"."+v.Body))
		v.StandardWebhooks.Signature = "v1," + base64.StdEncoding.EncodeToString(
			mac(key, v.StandardWebhooks.ID+"."+ts+"."+v.Body))
		out = append(out, v)
	}
	// The specification's published answer for its example.
	if got, want := out[0].StandardWebhooks.Signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		log.Fatalf("standard webhooks example: got %s, want %s", got, want)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		log.Fatal(fmt.Errorf("write vectors: %w", err))
	}
}

func mac(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
