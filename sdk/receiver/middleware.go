package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultMaxBodyBytes is the largest body Middleware reads unless
// WithMaxBodyBytes says otherwise.
const DefaultMaxBodyBytes = 1 << 20

// An Option changes how Middleware and Handler read and verify a request.
type Option func(*config)

type config struct {
	maxBody int64
	now     func() time.Time
	more    []string
}

// WithSecrets adds secrets that also verify: during a rotation's overlap,
// pass the new secret to Middleware and the previous one here (or the other
// way round), and drop the previous one once the overlap has ended.
func WithSecrets(secrets ...string) Option {
	return func(c *config) { c.more = append(c.more, secrets...) }
}

// WithMaxBodyBytes sets the largest body accepted; a larger one is answered
// with 413 before it is verified. n <= 0 keeps DefaultMaxBodyBytes.
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.maxBody = n
		}
	}
}

// WithClock sets the clock that timestamps are checked against, for tests
// and for receivers with their own time source. nil keeps time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// Middleware verifies every request before it reaches next. It reads the raw
// body (at most the configured limit, 413 beyond it), calls Verify with
// secret, and on failure answers 400 or 401 with a short plain-text reason
// and never calls next. On success next sees r.Body replaced by the exact
// bytes that were verified, so it may parse them as it likes.
func Middleware(secret string, next http.Handler, opts ...Option) http.Handler {
	return Handler(secret, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		next.ServeHTTP(w, r)
	}, opts...)
}

// Handler is Middleware for a handler that wants the verified body as a
// slice: fn gets it as body, and r.Body reads the same bytes.
func Handler(secret string, fn func(w http.ResponseWriter, r *http.Request, body []byte), opts ...Option) http.Handler {
	c := config{maxBody: DefaultMaxBodyBytes, now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	secrets := append([]string{secret}, c.more...) // once, not per request
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(w, r, c.maxBody)
		if err == nil {
			err = VerifyAny(secrets, r.Header, body, c.now())
		}
		if err != nil {
			code := StatusCode(err)
			if errors.Is(err, errUnreadableBody) {
				code = http.StatusBadRequest
			}
			http.Error(w, publicReason(err), code)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(body)), nil
		}
		fn(w, r, body)
	})
}

var errUnreadableBody = errors.New("cannot read request body")

func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, fmt.Errorf("read body: %w", ErrBodyTooLarge)
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fmt.Errorf("read body: %w", ErrBodyTooLarge)
		}
		return nil, fmt.Errorf("read body: %w: %w", errUnreadableBody, err)
	}
	return body, nil
}

// maxFirstRead bounds the buffer that readAll starts with.
const maxFirstRead = 64 << 10

// readAll is io.ReadAll with a first buffer of the body's declared length
// and one byte more, which sees its end: a body the transport holds whole
// is read in one call. io.ReadAll starts at 512 bytes and grows, and on
// HTTP/2 each read of a body is a round trip to the connection's goroutine
// (which keeps the flow-control window): a delivery of a few kilobytes
// would take several. A declared length is the client's word, so the first
// buffer is at most maxFirstRead; a longer body grows it as io.ReadAll does.
func readAll(r io.Reader, declared int64) ([]byte, error) {
	b := make([]byte, 0, min(max(declared+1, 512), maxFirstRead))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// publicReason is the text sent with a refusal: which rule failed, never the
// expected signature or anything derived from the secret.
func publicReason(err error) string {
	for _, known := range []error{
		ErrMissingHeader, ErrInvalidTimestamp, ErrTimestampOutOfRange,
		ErrSignatureMismatch, ErrBodyTooLarge, errUnreadableBody,
	} {
		if errors.Is(err, known) {
			return known.Error()
		}
	}
	return "webhook receiver misconfigured"
}
