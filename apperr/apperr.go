// Package apperr holds Ontoflow's typed application errors: one error value
// carries a stable code, a human message and structured details, and maps to
// one HTTP status. The API renders it as {"error":{...}}, activities turn it
// into a non-retryable Temporal application error of the same type, so a
// refusal keeps its code from the activity to the HTTP client.
package apperr

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a stable, documented error code (Foundry-style PascalCase).
type Code string

const (
	InvalidArgument        Code = "InvalidArgument"
	InvalidJSON            Code = "InvalidJSON"
	Unauthorized           Code = "Unauthorized"
	PermissionDenied       Code = "PermissionDenied"
	NotFound               Code = "NotFound"
	Conflict               Code = "Conflict"
	RequestTooLarge        Code = "RequestEntityTooLarge"
	Unprocessable          Code = "Unprocessable"
	TooManyRequests        Code = "TooManyRequests"
	Internal               Code = "Internal"
	Unavailable            Code = "Unavailable"
	UserNotFound           Code = "UserNotFound"
	TokenNotFound          Code = "TokenNotFound"
	ObjectTypeNotFound     Code = "ObjectTypeNotFound"
	PropertyNotFound       Code = "PropertyNotFound"
	ObjectNotFound         Code = "ObjectNotFound"
	LinkTypeNotFound       Code = "LinkTypeNotFound"
	LinkNotFound           Code = "LinkNotFound"
	ActionTypeNotFound     Code = "ActionTypeNotFound"
	ExecutionNotFound      Code = "ExecutionNotFound"
	NotificationNotFound   Code = "NotificationNotFound"
	SecretNotFound         Code = "SecretNotFound"
	BranchNotFound         Code = "BranchNotFound"
	InvalidDefinition      Code = "InvalidActionTypeDefinition"
	InvalidProperty        Code = "InvalidPropertyValue"
	ActionValidationFailed Code = "ActionValidationFailed"
	JustificationRequired  Code = "JustificationRequired"
	InlineEditNotAllowed   Code = "InlineEditNotConfigured"
	CardinalityViolation   Code = "LinkCardinalityViolation"
	UniqueViolation        Code = "UniquePropertyViolation"
	DependentsExist        Code = "DependentsExist"
	IdempotencyConflict    Code = "IdempotencyKeyConflict"
	BatchTooLarge          Code = "BatchTooLarge"
	// InvalidOntology refuses an inconsistent object type, property or link
	// type definition (400), as InvalidDefinition does for action types.
	InvalidOntology Code = "InvalidOntologyDefinition"
	// OperationNotSupported refuses an operation kind this release cannot
	// run (invoke_function and invoke_webhook arrive with their runtimes).
	OperationNotSupported Code = "OperationNotSupported"
	// WebhookFailed: an invoke_webhook's call failed for good (a non-2xx
	// answer once retries are spent, a refused address).
	WebhookFailed Code = "WebhookFailed"
	// FunctionFailed: an invoke_function's function threw or hit a limit
	// (details name the reason: timeout, memory_limit, ...).
	FunctionFailed Code = "FunctionFailed"
	// FunctionEditRefused: an edit a function returned is malformed or
	// names something the actor may not write; details name the edit.
	FunctionEditRefused Code = "FunctionEditRefused"
	// FunctionNotFound: no function package or version of that name.
	FunctionNotFound Code = "FunctionNotFound"
	// FunctionResultInvalid: a function's return value is not in a shape
	// the engine knows (not an object, an unknown member, an edit of an
	// unknown type); details name the member or edits[i].
	FunctionResultInvalid Code = "FunctionResultInvalid"
)

var statusByCode = map[Code]int{
	WebhookFailed:          http.StatusBadGateway,
	FunctionFailed:         http.StatusUnprocessableEntity,
	FunctionEditRefused:    http.StatusUnprocessableEntity,
	FunctionNotFound:       http.StatusNotFound,
	FunctionResultInvalid:  http.StatusUnprocessableEntity,
	InvalidArgument:        http.StatusBadRequest,
	InvalidJSON:            http.StatusBadRequest,
	Unauthorized:           http.StatusUnauthorized,
	PermissionDenied:       http.StatusForbidden,
	NotFound:               http.StatusNotFound,
	Conflict:               http.StatusConflict,
	RequestTooLarge:        http.StatusRequestEntityTooLarge,
	Unprocessable:          http.StatusUnprocessableEntity,
	TooManyRequests:        http.StatusTooManyRequests,
	Internal:               http.StatusInternalServerError,
	Unavailable:            http.StatusServiceUnavailable,
	UserNotFound:           http.StatusNotFound,
	TokenNotFound:          http.StatusNotFound,
	ObjectTypeNotFound:     http.StatusNotFound,
	PropertyNotFound:       http.StatusNotFound,
	ObjectNotFound:         http.StatusNotFound,
	LinkTypeNotFound:       http.StatusNotFound,
	LinkNotFound:           http.StatusNotFound,
	ActionTypeNotFound:     http.StatusNotFound,
	ExecutionNotFound:      http.StatusNotFound,
	NotificationNotFound:   http.StatusNotFound,
	SecretNotFound:         http.StatusNotFound,
	BranchNotFound:         http.StatusNotFound,
	InvalidDefinition:      http.StatusBadRequest,
	InvalidProperty:        http.StatusBadRequest,
	ActionValidationFailed: http.StatusBadRequest,
	JustificationRequired:  http.StatusBadRequest,
	InlineEditNotAllowed:   http.StatusBadRequest,
	CardinalityViolation:   http.StatusConflict,
	UniqueViolation:        http.StatusConflict,
	DependentsExist:        http.StatusConflict,
	IdempotencyConflict:    http.StatusConflict,
	BatchTooLarge:          http.StatusRequestEntityTooLarge,
	InvalidOntology:        http.StatusBadRequest,
	OperationNotSupported:  http.StatusUnprocessableEntity,
}

// Known reports whether c is one of this package's codes.
func (c Code) Known() bool {
	_, ok := statusByCode[c]
	return ok
}

// Status is the HTTP status for a code; unknown codes are 500.
func (c Code) Status() int {
	if s, ok := statusByCode[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Detail is one structured item of an error: which field failed and why.
type Detail struct {
	Field   string `json:"field,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

// Error is an application error with a code, a message and details.
type Error struct {
	Code    Code     `json:"code"`
	Message string   `json:"message"`
	Details []Detail `json:"details,omitempty"`
	// Data carries a structured payload for codes that need more than
	// details, e.g. the per-parameter validation result.
	Data any `json:"data,omitempty"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// New builds an error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData sets e's structured payload.
func (e *Error) WithData(v any) *Error {
	e.Data = v
	return e
}

// WithDetails returns e with details appended.
func (e *Error) WithDetails(d ...Detail) *Error {
	e.Details = append(e.Details, d...)
	return e
}

// As extracts an *Error from err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// CodeOf is the code of err, Internal when err carries none.
func CodeOf(err error) Code {
	if e, ok := As(err); ok {
		return e.Code
	}
	return Internal
}

// MessageOf is err's message without its code: an *Error's Message, or
// err's text (for outcomes that carry the code in a field of their own).
func MessageOf(err error) string {
	if e, ok := As(err); ok {
		return e.Message
	}
	return err.Error()
}

// Is reports whether err carries code.
func Is(err error, code Code) bool { return CodeOf(err) == code }

// OverLimit refuses a request parameter beyond its cap (400
// InvalidArgument): param is the query parameter as the client spelled
// it, what its unit ("filters", "bytes"), got what the request sent. The
// message and the detail name both the parameter and the cap, so a
// client can fix the request without reading the documentation.
func OverLimit(param string, limit int, what string, got int) *Error {
	msg := fmt.Sprintf("%s: at most %d %s (got %d)", param, limit, what, got)
	return New(InvalidArgument, "%s", msg).
		WithDetails(Detail{Field: param, Reason: "over_limit", Message: msg})
}
