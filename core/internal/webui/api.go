package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
)

// apiError is a non-2xx answer of the admin API.
type apiError struct {
	Status  int
	Code    string
	Message string
	Field   string // the input field at fault, when the API names one
}

func (e *apiError) Error() string {
	return fmt.Sprintf("admin API: %d %s: %s", e.Status, e.Code, e.Message)
}

// missingRoute reports whether err is the API's answer for a route this
// build does not serve (as opposed to a missing resource).
func missingRoute(err error) bool {
	e, ok := err.(*apiError)
	return ok && e.Status == http.StatusNotFound && strings.HasPrefix(e.Message, "no route for")
}

// userMessage is what to tell an operator about err.
func userMessage(err error, what string) string {
	if err == nil {
		return ""
	}
	if missingRoute(err) {
		return what + " is not available in this govgate build yet."
	}
	if e, ok := err.(*apiError); ok && e.Message != "" {
		return e.Message
	}
	return "Something went wrong on the server; the govgate log has the details."
}

// call sends one request to the admin API in-process, authorized with the
// admin token, and decodes a 2xx JSON answer into out (when not nil).
func (u *UI) call(ctx context.Context, method, path string, body io.Reader, contentType string, out any) (int, error) {
	return u.callOn(ctx, u.cfg.API, method, path, body, contentType, out)
}

// rest reads the public REST API (Config.REST) in-process. Without one it
// answers as the API does for a route it does not serve, so that the page
// says the feature is not available in this build.
func (u *UI) rest(ctx context.Context, path string, out any) error {
	if u.cfg.REST == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "no route for GET " + path}
	}
	_, err := u.callOn(ctx, u.cfg.REST, http.MethodGet, path, nil, "", out)
	return err
}

func (u *UI) callOn(ctx context.Context, h http.Handler, method, path string, body io.Reader, contentType string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, path, body)
	if err != nil {
		return 0, fmt.Errorf("admin API request: %w", err)
	}
	req.RemoteAddr = "127.0.0.1:0"
	req.Header.Set("Authorization", "Bearer "+u.cfg.Token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		var eb struct {
			Error struct{ Code, Message, Field string }
		}
		// A body not in the API's error shape leaves Code and Message empty.
		_ = json.Unmarshal(data, &eb)
		return res.StatusCode, &apiError{Status: res.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message, Field: eb.Error.Field}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			u.log.Error("admin page: decode admin API answer", "method", method, "path", path, "err", err)
			return res.StatusCode, &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: "The admin API answered in an unexpected shape; the govgate log has the details."}
		}
	}
	return res.StatusCode, nil
}

func (u *UI) get(ctx context.Context, path string, out any) error {
	_, err := u.call(ctx, http.MethodGet, path, nil, "", out)
	return err
}

func (u *UI) postJSON(ctx context.Context, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return &apiError{Status: http.StatusUnprocessableEntity, Code: "invalid_json", Message: "The request is not valid JSON."}
		}
		body = bytes.NewReader(b)
	}
	_, err := u.call(ctx, http.MethodPost, path, body, "application/json", out)
	return err
}
