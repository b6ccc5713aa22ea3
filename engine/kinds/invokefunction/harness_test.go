package invokefunction_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
)

// The engine these tests run functions on is internal/harness/enginetest's
// (the built-in kinds over a real ontology store; NewFunctions for one
// whose functions run).

var admin = enginetest.Admin

func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func decode(t *testing.T, s string, out any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
}
