package ontology

import (
	"reflect"
	"testing"

	"github.com/ontoflow/ontoflow/models"
)

// TestMergeUpdates: adjacent updates of one object become one write (the
// later value wins); anything between them keeps them apart.
func TestMergeUpdates(t *testing.T) {
	up := func(id string, after map[string]any) models.Edit {
		return models.Edit{Op: models.EditUpdateObject, ObjectID: id, After: after}
	}
	in := []models.Edit{up("a", map[string]any{"x": 1}), up("a", map[string]any{"x": 2, "y": nil}),
		up("b", map[string]any{"x": 3}), up("a", map[string]any{"z": 4})}
	got := mergeUpdates(in)
	want := []models.Edit{up("a", map[string]any{"x": 2, "y": nil}), up("b", map[string]any{"x": 3}), up("a", map[string]any{"z": 4})}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
	if in[0].After["x"] != 1 {
		t.Errorf("the recorded edits changed: %+v", in[0])
	}
}
