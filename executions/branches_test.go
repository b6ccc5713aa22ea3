package executions

import (
	"reflect"
	"testing"

	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// TestApplyMapsCreatedIDs: the objects a step created in the branch are
// paired, in order, with those its real execution created, and later
// steps' targets and parameters (at any depth) are given the real ids.
func TestApplyMapsCreatedIDs(t *testing.T) {
	ids := map[string]string{}
	mapCreated(ids,
		[]models.Edit{{Op: models.EditCreateObject, ObjectID: "b1"}, {Op: models.EditUpdateObject, ObjectID: "x"}, {Op: models.EditCreateObject, ObjectID: "b2"}},
		[]models.Edit{{Op: models.EditCreateObject, ObjectID: "r1"}, {Op: models.EditCreateObject, ObjectID: "r2"}})
	if !reflect.DeepEqual(ids, map[string]string{"b1": "r1", "b2": "r2"}) {
		t.Fatalf("ids %v", ids)
	}
	got := mapParams(ids, map[string]any{"one": "b1", "many": []any{"b2", "other", 3}, "nested": map[string]any{"ref": "b1"}, "none": nil})
	want := map[string]any{"one": "r1", "many": []any{"r2", "other", 3}, "nested": map[string]any{"ref": "r1"}, "none": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("params %v", got)
	}
	if mapParams(ids, nil) != nil || mapID(ids, "b2") != "r2" || mapID(ids, "q") != "q" {
		t.Errorf("nil params or ids")
	}
}

// TestNetLinks: a link created and deleted again in the branch is no
// change.
func TestNetLinks(t *testing.T) {
	got := netLinks([]models.Edit{
		{Op: models.EditCreateLink, LinkID: "l1"},
		{Op: models.EditCreateLink, LinkID: "l2"},
		{Op: models.EditDeleteLink, LinkID: "l1"},
		{Op: models.EditDeleteLink, LinkID: "main"},
	})
	if len(got) != 2 || got[0].LinkID != "l2" || got[1].LinkID != "main" || got[1].Change != engine.Deleted {
		t.Errorf("%+v", got)
	}
}
