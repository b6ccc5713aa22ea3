package models_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ontoflow/ontoflow/models"
)

// JSON and NumJSON share their column encoding and the reading of what a
// driver hands Scan; they differ only in how numbers decode.
func TestJSONColumns(t *testing.T) {
	v, err := models.NewJSON(map[string]any{"n": 1}).Value()
	if err != nil || v != `{"n":1}` {
		t.Fatalf("JSON Value = %v, %v", v, err)
	}
	if v, err := models.NewNumJSON([]int{1, 2}).Value(); err != nil || v != `[1,2]` {
		t.Fatalf("NumJSON Value = %v, %v", v, err)
	}
	if _, err := models.NewJSON(func() {}).Value(); err == nil {
		t.Fatal("JSON Value of a func: no error")
	}
	for _, src := range []any{`{"n":9007199254740993}`, []byte(`{"n":9007199254740993}`)} {
		var j models.JSON[map[string]any]
		if err := j.Scan(src); err != nil || j.V["n"] != float64(9007199254740993) {
			t.Errorf("JSON Scan(%T) = %v, %v", src, j.V, err)
		}
		var n models.NumJSON[map[string]any]
		if err := n.Scan(src); err != nil || n.V["n"] != json.Number("9007199254740993") {
			t.Errorf("NumJSON Scan(%T) = %v, %v", src, n.V, err)
		}
	}
	j, n := models.NewJSON(map[string]any{"a": 1.0}), models.NewNumJSON(map[string]any{"a": 1})
	for _, src := range []any{nil, "", []byte{}} {
		if err := j.Scan(src); err != nil || j.V != nil {
			t.Errorf("JSON Scan(%#v) = %v, %v; want the zero value", src, j.V, err)
		}
		if err := n.Scan(src); err != nil || n.V != nil {
			t.Errorf("NumJSON Scan(%#v) = %v, %v; want the zero value", src, n.V, err)
		}
		j.V, n.V = map[string]any{"a": 1.0}, map[string]any{"a": 1}
	}
	if err := j.Scan(42); err == nil || !reflect.DeepEqual(j.V, map[string]any{"a": 1.0}) {
		t.Errorf("JSON Scan(int) = %v, %v; want an error and the value untouched", j.V, err)
	}
	if err := n.Scan(42); err == nil || !reflect.DeepEqual(n.V, map[string]any{"a": 1}) {
		t.Errorf("NumJSON Scan(int) = %v, %v; want an error and the value untouched", n.V, err)
	}
}
