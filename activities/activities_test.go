package activities

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ontoflow/ontoflow/apperr"
)

// Only a non-retryable error typed with one of apperr's codes is recorded
// as that refusal; anything else (an untyped error the SDK named after its
// Go type when retries ran out, an unknown type) is an internal failure
// whose message does not leak the error's text into the action log.
func TestFailureOf(t *testing.T) {
	// Errors reach the workflow through Temporal's failure encoding.
	conv := temporal.GetDefaultFailureConverter()
	wire := func(err error) error { return conv.FailureToError(conv.ErrorToFailure(err)) }
	refusal := wire(typed(apperr.New(apperr.PermissionDenied, "role %q is required", "ops")))
	if f := FailureOf(refusal); f.Code != string(apperr.PermissionDenied) || f.Message != `role "ops" is required` {
		t.Errorf("refusal recorded as %+v", f)
	}
	for name, err := range map[string]error{
		"retries exhausted": temporal.NewApplicationError("load execution x: dial tcp 10.0.0.5:5432: connection refused", "wrapError"),
		"unknown type":      temporal.NewNonRetryableApplicationError("boom 10.0.0.5", "SomethingElse", nil),
		"typed internal":    temporal.NewNonRetryableApplicationError("db at 10.0.0.5", string(apperr.Internal), nil),
		"not an app error":  errors.New("deadline 10.0.0.5"),
	} {
		f := FailureOf(wire(err))
		if f.Code != string(apperr.Internal) || strings.Contains(f.Message, "10.0.0.5") {
			t.Errorf("%s: recorded as %+v", name, f)
		}
	}
}
