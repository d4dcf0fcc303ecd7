package receiver_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/govgate/govgate/sdk/receiver"
)

func signedRequest(ts time.Time, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	text := strconv.FormatInt(ts.Unix(), 10)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(receiver.HeaderTimestamp, text)
	r.Header.Set(receiver.HeaderSignature, sign(testSecret, text, body))
	return r
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	clock := receiver.WithClock(func() time.Time { return testNow })
	body := []byte("{\"type\":\"test\",\"text\":\"提案 🗳️\"}\n")
	big := bytes.Repeat([]byte("x"), 2048)

	tests := []struct {
		name     string
		req      func() *http.Request
		opts     []receiver.Option
		status   int
		wantBody string // prefix of the refusal text; "" when next answers
	}{
		{
			name:   "verified",
			req:    func() *http.Request { return signedRequest(testNow, body) },
			status: 200,
		},
		{
			name: "missing signature header",
			req: func() *http.Request {
				r := signedRequest(testNow, body)
				r.Header.Del(receiver.HeaderSignature)
				return r
			},
			status: 400, wantBody: "missing signature header",
		},
		{
			name: "missing timestamp header",
			req: func() *http.Request {
				r := signedRequest(testNow, body)
				r.Header.Del(receiver.HeaderTimestamp)
				return r
			},
			status: 400, wantBody: "missing signature header",
		},
		{
			name: "invalid timestamp",
			req: func() *http.Request {
				r := signedRequest(testNow, body)
				r.Header.Set(receiver.HeaderTimestamp, "NaN")
				return r
			},
			status: 400, wantBody: "timestamp is not a decimal integer",
		},
		{
			name:   "stale",
			req:    func() *http.Request { return signedRequest(testNow.Add(-301*time.Second), body) },
			status: 400, wantBody: "timestamp outside the accepted window",
		},
		{
			name: "tampered body",
			req: func() *http.Request {
				r := signedRequest(testNow, body)
				r.Body = io.NopCloser(strings.NewReader(`{"type":"test","text":"forged"}`))
				return r
			},
			status: 401, wantBody: "signature mismatch",
		},
		{
			name:   "body over the limit by content length",
			req:    func() *http.Request { return signedRequest(testNow, big) },
			opts:   []receiver.Option{receiver.WithMaxBodyBytes(1024)},
			status: 413, wantBody: "request body too large",
		},
		{
			name: "body over the limit, length unknown",
			req: func() *http.Request {
				r := signedRequest(testNow, big)
				r.ContentLength = -1
				return r
			},
			opts:   []receiver.Option{receiver.WithMaxBodyBytes(1024)},
			status: 413, wantBody: "request body too large",
		},
		{
			name:   "body exactly at the limit",
			req:    func() *http.Request { return signedRequest(testNow, big) },
			opts:   []receiver.Option{receiver.WithMaxBodyBytes(int64(len(big)))},
			status: 200,
		},
		{
			name: "unreadable body",
			req: func() *http.Request {
				r := signedRequest(testNow, body)
				r.Body = io.NopCloser(iotest.ErrReader(errors.New("connection reset")))
				return r
			},
			status: 400, wantBody: "cannot read request body",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			called := false
			var got []byte
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called = true
				var err error
				if got, err = io.ReadAll(r.Body); err != nil {
					t.Errorf("read body in next: %v", err)
				}
				if r.ContentLength != int64(len(got)) {
					t.Errorf("ContentLength = %d, body has %d bytes", r.ContentLength, len(got))
				}
				w.WriteHeader(http.StatusOK)
			})
			req := tt.req()
			want, _ := io.ReadAll(req.Body) // what was signed, replaced below for the handler
			req = tt.req()
			rec := httptest.NewRecorder()
			receiver.Middleware(testSecret, next, append(tt.opts, clock)...).ServeHTTP(rec, req)

			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d (body %q)", rec.Code, tt.status, rec.Body)
			}
			if tt.status != http.StatusOK {
				if called {
					t.Fatal("next was called for a refused request")
				}
				if !strings.HasPrefix(rec.Body.String(), tt.wantBody) {
					t.Errorf("body = %q, want %q", rec.Body, tt.wantBody)
				}
				if strings.Contains(rec.Body.String(), testSecret) {
					t.Error("response contains the secret")
				}
				return
			}
			if !called {
				t.Fatal("next was not called for a verified request")
			}
			if !bytes.Equal(got, want) {
				t.Errorf("next got body %q, want the exact raw body %q", got, want)
			}
		})
	}
}

func TestMiddlewareDefaultLimit(t *testing.T) {
	t.Parallel()
	clock := receiver.WithClock(func() time.Time { return testNow })
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, tt := range []struct {
		size int
		want int
	}{
		{receiver.DefaultMaxBodyBytes, 200},
		{receiver.DefaultMaxBodyBytes + 1, 413},
	} {
		rec := httptest.NewRecorder()
		req := signedRequest(testNow, bytes.Repeat([]byte("a"), tt.size))
		receiver.Middleware(testSecret, next, clock, receiver.WithMaxBodyBytes(0)).ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%d-byte body: status = %d, want %d", tt.size, rec.Code, tt.want)
		}
	}
}

func TestMiddlewareEmptySecret(t *testing.T) {
	t.Parallel()
	called := false
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true })
	// Signed with an empty key: must not pass a receiver whose secret is unset.
	r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader("{}"))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	r.Header.Set(receiver.HeaderTimestamp, ts)
	r.Header.Set(receiver.HeaderSignature, sign("", ts, []byte("{}")))
	rec := httptest.NewRecorder()
	receiver.Middleware("", next).ServeHTTP(rec, r)
	if rec.Code != http.StatusInternalServerError || called {
		t.Errorf("status = %d, next called = %v; want 500 and not called", rec.Code, called)
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"ntf_1"}`)
	var got, fromReader []byte
	h := receiver.Handler(testSecret, func(w http.ResponseWriter, r *http.Request, b []byte) {
		got = b
		fromReader, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusNoContent)
	}, receiver.WithClock(func() time.Time { return testNow }))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, signedRequest(testNow, body))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("status = %d, want 204", rec.Code)
	}
	if !bytes.Equal(got, body) || !bytes.Equal(fromReader, body) {
		t.Errorf("body = %q, r.Body = %q, want %q", got, fromReader, body)
	}
}

// TestMiddlewareOverHTTP runs the middleware behind a real server, where the
// body arrives as a stream rather than from memory.
func TestMiddlewareOverHTTP(t *testing.T) {
	t.Parallel()
	received := make(chan []byte, 1)
	srv := httptest.NewServer(receiver.Middleware(testSecret, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		received <- b
	})))
	defer srv.Close()

	body := []byte("{\"type\":\"test\"}\n")
	for _, tt := range []struct {
		name string
		sig  func(ts string) string
		want int
	}{
		{"valid", func(ts string) string { return sign(testSecret, ts, body) }, 200},
		{"wrong key", func(ts string) string { return sign("whsec_wrong", ts, body) }, 401},
	} {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(receiver.HeaderTimestamp, ts)
		req.Header.Set(receiver.HeaderSignature, tt.sig(ts))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status = %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
	select {
	case got := <-received:
		if !bytes.Equal(got, body) {
			t.Errorf("handler got %q, want %q", got, body)
		}
	default:
		t.Error("handler never ran for the valid delivery")
	}
	select {
	case <-received:
		t.Error("handler ran for the badly signed delivery")
	default:
	}
}
