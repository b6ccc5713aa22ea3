package revert_test

import (
	"context"
	"fmt"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/revert"
)

// asRecordedBefore rewrites execution id's edits as the version before
// update times were recorded wrote them: without updated_at_before and
// updated_at_after.
func asRecordedBefore(t *testing.T, db *gorm.DB, id string) {
	t.Helper()
	var ex models.Execution
	if err := db.Take(&ex, "id = ?", id).Error; err != nil {
		t.Fatal(err)
	}
	edits := ex.Edits.V
	for i := range edits {
		edits[i].UpdatedAtBefore, edits[i].UpdatedAtAfter = nil, nil
	}
	if err := db.Model(&models.Execution{}).Where("id = ?", id).Update("edits", models.NewNumJSON(edits)).Error; err != nil {
		t.Fatal(err)
	}
}

func wantNotInvertible(t *testing.T, err error, object string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Code != apperr.Conflict || len(e.Details) != 1 || e.Details[0].Reason != "not_invertible" || e.Details[0].Field != object {
		t.Fatalf("revert: %v, want 409 Conflict not_invertible naming %s", err, object)
	}
}

// Executions recorded before edits kept update times (an in-place
// upgrade keeps them) are never reverted blind: the later-edit check has
// nothing to compare with, so an update 25→26 followed by 26→27, or a
// create whose object was since edited and linked, is refused with 409
// not_invertible — up front (CheckRevert) and in the revert step — and
// nothing changes.
func TestRevertRefusesEditsRecordedWithoutUpdateTimes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := enginetest.New(t, db)
		s := e.Store
		ot := enginetest.Must(s.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Person", Properties: []ontology.PropertySpec{
			{Name: "name", Type: domain.T(domain.TypeString)}, {Name: "age", Type: domain.T(domain.TypeInteger)}}}))(t)
		lt := enginetest.Must(s.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "knows", SourceObjectTypeID: ot.ID, TargetObjectTypeID: ot.ID,
			Cardinality: domain.ManyToMany}))(t)
		action := func(js string) *domain.ActionType {
			var d domain.ActionDefinition
			enginetest.Decode(t, fmt.Sprintf(js, ot.ID), &d)
			return enginetest.Must(s.ActionType(ctx, enginetest.Must(s.CreateActionType(ctx, admin.ID, d))(t).ID))(t)
		}
		setAge := action(`{"name":"set_age","object_type_id":%q,"operation_kind":"update_object",
			"inputs":[{"name":"age","type":"integer","required":true}],"config":{"operation":{"property_mappings":[{"property":"age","input":"age"}]}}}`)
		add := action(`{"name":"add_person","object_type_id":%q,"operation_kind":"create_object",
			"inputs":[{"name":"name","type":"string","required":true}],"config":{"operation":{"property_mappings":[{"property":"name","input":"name"}]}}}`)
		run := func(t *testing.T, at *domain.ActionType, target string, params map[string]any) models.Execution {
			t.Helper()
			id := e.Execution(t, at, models.KindExecute, target, params, nil, 0)
			if err := e.Run(ctx, id); err != nil {
				t.Fatal(err)
			}
			ex := e.Row(t, id)
			if ex.Status != models.StatusSucceeded {
				t.Fatalf("%s: %s %s", at.Name, ex.Status, ex.ErrorMessage)
			}
			asRecordedBefore(t, db, id)
			return e.Row(t, id)
		}
		revert := func(t *testing.T, at *domain.ActionType, orig models.Execution, object string) {
			t.Helper()
			wantNotInvertible(t, e.Revert(ctx, t, at, orig.ID), object)
			wantNotInvertible(t, revert.Check(admin, &orig, at), object)
			if got := e.Row(t, orig.ID); got.RevertedBy != nil {
				t.Fatalf("%s marked reverted by %s", orig.ID, *got.RevertedBy)
			}
		}

		t.Run("update", func(t *testing.T) {
			p := enginetest.Must(s.CreateObject(ctx, nil, ot.ID, map[string]any{"name": "ann", "age": 25}, "", admin.ID, "acme"))(t)
			first := run(t, setAge, p.ID, map[string]any{"age": 26})
			run(t, setAge, p.ID, map[string]any{"age": 27})
			revert(t, setAge, first, p.ID)
			if now := enginetest.Must(s.Object(ctx, nil, p.ID))(t); fmt.Sprint(now.Properties["age"]) != "27" {
				t.Fatalf("age %v after the refused revert, want the later edit's 27", now.Properties["age"])
			}
		})

		t.Run("create", func(t *testing.T) {
			other := enginetest.Must(s.CreateObject(ctx, nil, ot.ID, map[string]any{"name": "bob"}, "", admin.ID, "acme"))(t)
			created := run(t, add, "", map[string]any{"name": "cid"})
			id := created.Edits.V[0].ObjectID
			enginetest.Must(s.UpdateObject(ctx, nil, id, map[string]any{"age": 40}))(t)
			link := enginetest.Must(s.CreateLink(ctx, nil, lt.ID, id, other.ID))(t)
			revert(t, add, created, id)
			now := enginetest.Must(s.Object(ctx, nil, id))(t)
			if now == nil || fmt.Sprint(now.Properties["age"]) != "40" {
				t.Fatalf("object after the refused revert: %+v, want it kept with its later edit", now)
			}
			var links int64
			if err := db.Table("links").Where("id = ?", link).Count(&links).Error; err != nil || links != 1 {
				t.Fatalf("link %s: %d rows (%v), want it kept", link, links, err)
			}
		})
	})
}
