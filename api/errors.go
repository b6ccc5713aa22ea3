package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
)

// errorBody is the one error shape of every route.
type errorBody struct {
	Error *apperr.Error `json:"error"`
}

// unreachableRetryAfter is the Retry-After (seconds) of a 503 answered
// because the database could not be reached: connections are redialed at
// once, so a short wait is enough.
const unreachableRetryAfter = "1"

// fail renders err as the JSON error body and aborts the request. Errors
// that are not *apperr.Error are logged and answered as a generic 500, so
// internals never reach the client.
func fail(c *gin.Context, err error) {
	e, ok := apperr.As(err)
	if !ok {
		switch {
		case models.IsNotFound(err):
			e = apperr.New(apperr.NotFound, "not found")
		case models.IsDuplicate(err):
			e = apperr.New(apperr.Conflict, "a record with the same unique value already exists")
		case models.IsUnreachable(err):
			// The database is unreachable for now: the client may retry,
			// and the operator reads the cause here.
			slog.WarnContext(c.Request.Context(), "request failed: database unreachable", "method", c.Request.Method,
				"path", c.Request.URL.Path, "err", err)
			c.Header("Retry-After", unreachableRetryAfter)
			e = apperr.New(apperr.Unavailable, "the database is unreachable; retry shortly")
		default:
			slog.ErrorContext(c.Request.Context(), "request failed", "method", c.Request.Method,
				"path", c.Request.URL.Path, "err", err)
			e = apperr.New(apperr.Internal, "internal error")
		}
	}
	status := e.Code.Status()
	if status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", `Basic realm="ontoflow", charset="UTF-8"`)
	}
	c.AbortWithStatusJSON(status, errorBody{Error: e})
}

// decodeJSON strictly decodes the request body into v: unknown fields,
// trailing data, wrong types and oversize bodies are refused with a clear
// 400 (or 413) naming what was wrong.
func decodeJSON(c *gin.Context, v any) error {
	if ct := c.ContentType(); ct != "" && ct != "application/json" {
		return apperr.New(apperr.InvalidJSON, "Content-Type must be application/json, got %q", ct)
	}
	body, err := io.ReadAll(c.Request.Body) // bounded by limitBody
	if err != nil {
		return jsonError(err)
	}
	if hasNULEscape(body) {
		// Neither Postgres text nor jsonb can hold U+0000: refused here
		// rather than failing as a 500 when it reaches the database.
		return apperr.New(apperr.InvalidJSON, `request body holds the character \u0000, which cannot be stored`)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return apperr.New(apperr.InvalidJSON, "request body must hold a single JSON value")
	}
	return nil
}

// hasNULEscape reports whether JSON text b holds a \u0000 escape (a raw
// NUL byte is not valid JSON and the decoder refuses it).
func hasNULEscape(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) && string(b[i+2:i+6]) == "0000" {
			return true
		}
		i++ // skip the escaped character, so "\\u0000" is text
	}
	return false
}

func jsonError(err error) error {
	var (
		maxErr    *http.MaxBytesError
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &maxErr):
		return apperr.New(apperr.RequestTooLarge, "request body exceeds %d bytes", maxErr.Limit)
	case errors.Is(err, io.EOF):
		return apperr.New(apperr.InvalidJSON, "request body is empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.New(apperr.InvalidJSON, "request body is truncated JSON")
	case errors.As(err, &syntaxErr):
		return apperr.New(apperr.InvalidJSON, "malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "(body)"
		}
		want := jsonKind(typeErr.Type)
		return apperr.New(apperr.InvalidJSON, "field %q: expected %s, got %s", field, want, jsonValueKind(typeErr.Value)).
			WithDetails(apperr.Detail{Field: field, Reason: "type", Message: "expected " + want})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return apperr.New(apperr.InvalidJSON, "unknown field %q", f).
			WithDetails(apperr.Detail{Field: f, Reason: "unknown", Message: "unknown field"})
	default:
		return apperr.New(apperr.InvalidJSON, "invalid JSON body: %v", err)
	}
}

// jsonKind names what JSON a Go type decodes from, in the words of a
// JSON document rather than Go's (a message said "expected
// map[string]interface {}").
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(json.Number("")) {
		return "a number"
	}
	switch t.Kind() {
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a JSON value"
}

// jsonValueKind is the JSON the decoder met ("string", "number 3.5",
// "object", ...), with its article.
func jsonValueKind(v string) string {
	switch {
	case v == "":
		return "another JSON value"
	case strings.HasPrefix(v, "number"), v == "bool":
		if v == "bool" {
			return "true or false"
		}
		return "a " + v
	case v == "object", v == "array":
		return "an " + v
	}
	return "a " + v
}
