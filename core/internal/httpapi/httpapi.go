// Package httpapi serves govgate's three HTTP surfaces, each on its own
// listener: the REST API (DAOs and their health), the webhook service
// (registration and deactivation) and the admin API. Every error leaves in
// one JSON shape, {"success": false, "error": {"code", "message"}}, with a
// stable code mapped to one status here; internal detail goes to the log.
package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// statusOf maps a stable error code to its HTTP status.
var statusOf = map[string]int{
	core.ECodeInvalidJSON:          http.StatusBadRequest,
	core.ECodeInvalidRequest:       http.StatusUnprocessableEntity,
	core.ECodeInvalidURL:           http.StatusUnprocessableEntity,
	core.ECodeForbiddenURL:         http.StatusUnprocessableEntity,
	core.ECodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	core.ECodeBodyTooLarge:         http.StatusRequestEntityTooLarge,
	core.ECodeNotFound:             http.StatusNotFound,
	core.ECodeUnknownDAO:           http.StatusNotFound,
	core.ECodeConflict:             http.StatusConflict,
	core.ECodeUnauthorized:         http.StatusUnauthorized,
	core.ECodeRateLimited:          http.StatusTooManyRequests,
	core.ECodeUnavailable:          http.StatusServiceUnavailable,
	core.ECodeInternal:             http.StatusInternalServerError,
	core.ECodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	core.ECodeSignatureRequired:    http.StatusUnauthorized,
	core.ECodeStaleTimestamp:       http.StatusUnauthorized,
	core.ECodeInvalidSignature:     http.StatusUnauthorized,
	core.ECodeReplayedRequest:      http.StatusUnauthorized,
}

// ErrorBody is the JSON shape of every error response.
type ErrorBody struct {
	Success bool        `json:"success"`
	Error   ErrorDetail `json:"error"`
}

// ErrorDetail is the error object inside ErrorBody.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the input field at fault, where one is (the admin
	// page shows the message under it).
	Field string `json:"field,omitempty"`
}

// writeError answers err in the error format. Errors that are not a
// *core.Error are internal: logged in full, answered without detail.
func writeError(c *gin.Context, log *slog.Logger, err error) {
	code, msg := core.ErrorCode(err), core.ErrorMessage(err)
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	var ce *core.Error
	if !errors.As(err, &ce) || status >= 500 {
		log.Error("request failed", "method", c.Request.Method, "path", c.FullPath(), "err", err)
	}
	detail := ErrorDetail{Code: code, Message: msg}
	var fe *core.FieldError
	if errors.As(err, &fe) && status < 500 {
		detail.Field = fe.Field
	}
	c.AbortWithStatusJSON(status, ErrorBody{Error: detail})
}

// newEngine returns a gin engine with govgate's common behaviour: panics
// recovered into a JSON 500, unknown routes and methods answered in the
// error format, and one log line per request without bodies or headers
// (which may carry secrets).
func newEngine(log *slog.Logger) *gin.Engine {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RemoveExtraSlash = true
	// No proxy is trusted unless configured: ClientIP is the peer address.
	_ = e.SetTrustedProxies(nil)
	e.Use(func(c *gin.Context) {
		start := time.Now()
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in handler", "path", c.Request.URL.Path, "panic", r)
				c.AbortWithStatusJSON(http.StatusInternalServerError, ErrorBody{Error: ErrorDetail{Code: core.ECodeInternal, Message: "internal error"}})
			}
			log.Debug("http", "method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status(), "ms", time.Since(start).Milliseconds())
		}()
		c.Next()
	})
	e.NoRoute(func(c *gin.Context) {
		writeError(c, log, core.Errorf(core.ECodeNotFound, "no route for %s %s", c.Request.Method, c.Request.URL.Path))
	})
	e.NoMethod(func(c *gin.Context) {
		writeError(c, log, core.Errorf(core.ECodeMethodNotAllowed, "method %s is not allowed here", c.Request.Method))
	})
	return e
}

// requireJSON refuses a request whose Content-Type is not application/json.
func requireJSON(c *gin.Context) error {
	ct := c.GetHeader("Content-Type")
	mt, _, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		if ct == "" {
			return core.Errorf(core.ECodeUnsupportedMediaType, "Content-Type must be application/json")
		}
		return core.Errorf(core.ECodeUnsupportedMediaType, "Content-Type must be application/json, got %q", ct)
	}
	return nil
}
