package domain

import (
	"strings"
	"testing"
)

// TestIntegerMessagePlain: a fractional number for an integer says what
// is wanted in plain words (issue 46: it read "expected an integer (no
// fractional part, within 64-bit range)").
func TestIntegerMessagePlain(t *testing.T) {
	err := T(TypeInteger).Check("severity", 3.5, CheckEnv{})
	if err == nil || !strings.Contains(err.Error(), "severity: must be a whole number") {
		t.Fatalf("got %v, want a 'must be a whole number' message", err)
	}
	if strings.Contains(err.Error(), "64-bit") {
		t.Fatalf("message speaks of machine widths: %v", err)
	}
}
