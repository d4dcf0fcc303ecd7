package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
)

// readJSONObject reads a JSON object of at most limit bytes from the request
// into a map of raw fields, so each handler can tell a missing field from one
// of the wrong type.
func readJSONObject(c *gin.Context, limit int64) (map[string]json.RawMessage, error) {
	obj, _, err := readJSONObjectRaw(c, limit)
	return obj, err
}

// readJSONObjectRaw is readJSONObject that also returns the body's exact
// bytes, which an owner's signature covers.
func readJSONObjectRaw(c *gin.Context, limit int64) (map[string]json.RawMessage, []byte, error) {
	if err := requireJSON(c); err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, nil, core.Errorf(core.ECodeBodyTooLarge, "request body is larger than %d bytes", limit)
		}
		return nil, nil, core.Errorf(core.ECodeInvalidJSON, "could not read the request body")
	}
	obj, err := parseJSONObject(body)
	return obj, body, err
}

func parseJSONObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, core.Errorf(core.ECodeInvalidJSON, "request body is empty; want a JSON object")
		}
		return nil, core.Errorf(core.ECodeInvalidJSON, "request body is not a JSON object: %s", jsonErrorText(err))
	}
	if obj == nil {
		return nil, core.Errorf(core.ECodeInvalidJSON, "request body is null; want a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, core.Errorf(core.ECodeInvalidJSON, "request body has data after the JSON object")
	}
	return obj, nil
}

func jsonErrorText(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return "syntax error at byte " + strconv.FormatInt(syn.Offset, 10)
	case errors.As(err, &typ):
		return "want an object, got " + typ.Value
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	return "malformed JSON"
}

// stringField returns obj[name] as a non-empty string.
func stringField(obj map[string]json.RawMessage, name string) (string, error) {
	raw, ok := obj[name]
	if !ok {
		return "", core.Errorf(core.ECodeInvalidRequest, "%s is required", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", core.Errorf(core.ECodeInvalidRequest, "%s must be a string", name)
	}
	if s == "" {
		return "", core.Errorf(core.ECodeInvalidRequest, "%s must not be empty", name)
	}
	return s, nil
}
