package whatif

import (
	"reflect"
	"testing"

	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// TestOverlay: the target as a branch's edits leave it, without a
// transaction — created, updated (a null clears), deleted, untouched.
func TestOverlay(t *testing.T) {
	main := &engine.Object{ID: "a", ObjectTypeID: "T", Properties: map[string]any{"x": "1", "y": "2"}, Marking: "public"}
	edits := []models.Edit{
		{Op: models.EditUpdateObject, ObjectID: "a", After: map[string]any{"x": "3", "y": nil}},
		{Op: models.EditCreateObject, ObjectID: "b", ObjectTypeID: "T", Marking: "public"},
		{Op: models.EditUpdateObject, ObjectID: "b", After: map[string]any{"z": "9"}},
		{Op: models.EditCreateObject, ObjectID: "c", ObjectTypeID: "T", After: map[string]any{}},
		{Op: models.EditDeleteObject, ObjectID: "c"},
	}
	if got := overlay(main, "a", edits); !reflect.DeepEqual(got.Properties, map[string]any{"x": "3"}) {
		t.Errorf("updated: %v", got.Properties)
	}
	if main.Properties["x"] != "1" || main.Properties["y"] != "2" {
		t.Errorf("overlay changed the main object: %v", main.Properties)
	}
	if got := overlay(nil, "b", edits); got == nil || got.Properties["z"] != "9" || got.ObjectTypeID != "T" {
		t.Errorf("created then updated: %+v", got)
	}
	if got := overlay(nil, "c", edits); got != nil {
		t.Errorf("created then deleted: %+v", got)
	}
	if got := overlay(main, "d", edits); got == nil || got.ID != "a" {
		t.Errorf("untouched: %+v", got)
	}
}

// TestChangeOf: the UI's shape — change, before/after, per-property diff
// by name — and the read rule blanking what the reader may not read.
func TestChangeOf(t *testing.T) {
	all := func(string, string) bool { return true }
	before := &engine.Object{ID: "a", ObjectTypeID: "T", Properties: map[string]any{"x": "1", "y": "2"}}
	after := &engine.Object{ID: "a", ObjectTypeID: "T", Properties: map[string]any{"x": "1", "y": "3", "z": "4"}}
	c := ChangeOf(all, "a", before, after)
	want := []PropertyDiff{{"y", "2", "3"}, {"z", nil, "4"}}
	if c.Change != Updated || !reflect.DeepEqual(c.Diff, want) || c.Before == nil || c.After == nil {
		t.Errorf("updated: %+v", c)
	}
	if c := ChangeOf(all, "a", nil, after); c.Change != Created || len(c.Diff) != 3 {
		t.Errorf("created: %+v", c)
	}
	if c := ChangeOf(all, "a", before, nil); c.Change != Deleted || c.After != nil {
		t.Errorf("deleted: %+v", c)
	}
	none := func(string, string) bool { return false }
	if c := ChangeOf(none, "a", before, after); c.Before != nil || c.After != nil || len(c.Diff) != 0 || c.ObjectTypeID != "T" {
		t.Errorf("unreadable: %+v", c)
	}
}

// TestLinkChanges lists created links and the links a delete removed.
func TestLinkChanges(t *testing.T) {
	got := LinkChanges([]models.Edit{
		{Op: models.EditCreateLink, LinkID: "l1", SourceID: "a", TargetID: "b"},
		{Op: models.EditDeleteObject, ObjectID: "b", Links: []models.EditLink{{ID: "l1", SourceID: "a", TargetID: "b"}}},
	})
	if len(got) != 2 || got[0].Change != Created || got[1].Change != Deleted || got[1].LinkID != "l1" {
		t.Errorf("%+v", got)
	}
}

// TestMentioned: mentioned lists every object an edit names.
func TestMentioned(t *testing.T) {
	got := mentioned([]models.Edit{{Op: models.EditCreateLink, SourceID: "a", TargetID: "b"}, {Op: models.EditUpdateObject, ObjectID: "c"}})
	if !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("%v", got)
	}
}
