package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine/kinds/createlink"
	"github.com/ontoflow/ontoflow/engine/kinds/createobject"
	"github.com/ontoflow/ontoflow/engine/kinds/deleteobject"
	"github.com/ontoflow/ontoflow/engine/kinds/updateobject"
	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// A delete_object edit keeps everything needed to recreate the object
// exactly: its properties (an integer beyond 2^53 exactly), marking,
// organization, creator, times, and every link removed with it, on either
// end, with their ids, properties, creators and times. The kind's inverse,
// applied through the store, brings back an identical object and links.
func TestDeleteObjectEditRecreatesTheObject(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := enginetest.New(t, db)
		s := e.Store
		creator := &models.User{ID: "00000000-0000-4000-8000-0000000000c1", Username: "carol", PasswordHash: "x",
			Clearance: "confidential", Organization: "acme"}
		if err := db.Create(creator).Error; err != nil {
			t.Fatal(err)
		}
		project := enginetest.Must(s.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Project", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}}}))(t)
		ticket := enginetest.Must(s.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Ticket", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString), Required: true, Unique: true},
			{Name: "big", Type: domain.T(domain.TypeInteger)},
			{Name: "tags", Type: domain.ArrayOf(domain.T(domain.TypeString))},
			{Name: "note", Type: domain.T(domain.TypeString), DefaultValue: "none"}}}))(t)
		inProject := enginetest.Must(s.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "in_project", SourceObjectTypeID: ticket.ID,
			TargetObjectTypeID: project.ID, Cardinality: domain.ManyToOne}))(t)
		blocks := enginetest.Must(s.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "blocks", SourceObjectTypeID: ticket.ID,
			TargetObjectTypeID: ticket.ID, Cardinality: domain.ManyToMany}))(t)
		var d domain.ActionDefinition
		enginetest.Decode(t, fmt.Sprintf(`{"name":"remove","object_type_id":%q,"operation_kind":"delete_object"}`, ticket.ID), &d)
		at := enginetest.Must(s.ActionType(ctx, enginetest.Must(s.CreateActionType(ctx, admin.ID, d))(t).ID))(t)

		org := "acme"
		p := enginetest.Must(s.CreateObjectAs(ctx, creator, "Project", ontology.ObjectSpec{Properties: map[string]any{"title": "P"}, Organization: &org}))(t)
		// The object under test: marked confidential, created by carol; the
		// note property is absent although it has a default (a property
		// added after the object), and must stay absent.
		victim := enginetest.Must(s.CreateObjectAs(ctx, creator, "Ticket", ontology.ObjectSpec{Marking: "confidential", Organization: &org,
			Properties: map[string]any{"title": "T-1", "big": json.Number("9007199254740993"), "tags": []any{"a", "b"}}}))(t)
		if err := db.Model(&models.Object{}).Where("id = ?", victim.ID).
			Update("properties", models.NewNumJSON(map[string]any{"title": "T-1", "big": json.Number("9007199254740993"), "tags": []any{"a", "b"}})).Error; err != nil {
			t.Fatal(err)
		}
		// Different creation and update times, so a mix-up shows.
		if err := db.Model(&models.Object{}).Where("id = ?", victim.ID).Updates(map[string]any{
			"created_at": time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC), "updated_at": time.Date(2025, 6, 7, 8, 9, 10, 654321000, time.UTC)}).Error; err != nil {
			t.Fatal(err)
		}
		other := enginetest.Must(s.CreateObjectAs(ctx, admin, "Ticket", ontology.ObjectSpec{Properties: map[string]any{"title": "T-2"}, Organization: &org}))(t)
		l1 := enginetest.Must(s.CreateLinkAs(ctx, creator, "in_project", ontology.LinkSpec{SourceObjectID: victim.ID, TargetObjectID: p.ID,
			Properties: map[string]any{"since": json.Number("2024")}}))(t)
		l2 := enginetest.Must(s.CreateLinkAs(ctx, admin, "blocks", ontology.LinkSpec{SourceObjectID: other.ID, TargetObjectID: victim.ID}))(t)
		l3 := enginetest.Must(s.CreateLinkAs(ctx, admin, "blocks", ontology.LinkSpec{SourceObjectID: victim.ID, TargetObjectID: other.ID}))(t)
		var beforeObj models.Object
		if err := db.Take(&beforeObj, "id = ?", victim.ID).Error; err != nil {
			t.Fatal(err)
		}
		var beforeLinks []models.Link
		if err := db.Where("id IN ?", []string{l1.ID, l2.ID, l3.ID}).Order("id").Find(&beforeLinks).Error; err != nil || len(beforeLinks) != 3 {
			t.Fatalf("links before: %v, %v", beforeLinks, err)
		}

		id := e.Execution(t, at, models.KindExecute, victim.ID, nil, nil, 0)
		if err := e.Run(ctx, id); err != nil {
			t.Fatal(err)
		}
		ex := e.Row(t, id) // the edit as recorded, read back from the database
		if ex.Status != models.StatusSucceeded || len(ex.Edits.V) != 1 {
			t.Fatalf("execution = %s %s %+v", ex.Status, ex.ErrorMessage, ex.Edits.V)
		}
		ed := ex.Edits.V[0]
		if got := enginetest.Must(s.Object(ctx, nil, victim.ID))(t); got != nil {
			t.Fatal("the object survived its delete")
		}

		// The record itself.
		if ed.Op != models.EditDeleteObject || ed.ObjectID != victim.ID || ed.ObjectTypeID != ticket.ID || ed.Marking != "confidential" ||
			ed.Organization != "acme" || ed.CreatedBy != creator.ID || ed.CreatedAt == nil || !ed.CreatedAt.Equal(beforeObj.CreatedAt) ||
			ed.UpdatedAtBefore == nil || !ed.UpdatedAtBefore.Equal(beforeObj.UpdatedAt) || len(ed.Links) != 3 {
			t.Fatalf("recorded edit misses what recreating needs: %+v", ed)
		}
		if !deepEqualJSON(ed.Before, beforeObj.Properties.V) {
			t.Fatalf("recorded properties %v, want %v", ed.Before, beforeObj.Properties.V)
		}

		// Recreate from the edit alone: the kind's inverse, applied
		// through the store in one transaction.
		inv := enginetest.Must(deleteobject.DeleteObject{}.Invert(ed))(t)
		if len(inv) != 4 || inv[0].Op != models.EditCreateObject {
			t.Fatalf("inverse = %+v", inv)
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			for _, x := range inv {
				switch x.Op {
				case models.EditCreateObject:
					err := s.RestoreObject(ctx, tx, domain.Object{ID: x.ObjectID, ObjectTypeID: x.ObjectTypeID, Properties: x.After,
						Marking: x.Marking, Organization: x.Organization, CreatedBy: x.CreatedBy, CreatedAt: *x.CreatedAt, UpdatedAt: *x.UpdatedAtAfter})
					if err != nil {
						return err
					}
				case models.EditCreateLink:
					err := s.RestoreLink(ctx, tx, domain.Link{ID: x.LinkID, LinkTypeID: x.LinkTypeID, SourceID: x.SourceID, TargetID: x.TargetID,
						Properties: x.After, CreatedBy: x.CreatedBy, CreatedAt: *x.CreatedAt})
					if err != nil {
						return err
					}
				default:
					t.Fatalf("unexpected inverse edit %+v", x)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("recreate: %v", err)
		}

		var afterObj models.Object
		if err := db.Take(&afterObj, "id = ?", victim.ID).Error; err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			field     string
			got, want any
		}{
			{"id", afterObj.ID, beforeObj.ID}, {"object_type_id", afterObj.ObjectTypeID, beforeObj.ObjectTypeID},
			{"marking", afterObj.Marking, beforeObj.Marking}, {"organization", afterObj.Organization, beforeObj.Organization},
			{"created_by", afterObj.CreatedBy, beforeObj.CreatedBy},
			{"created_at", afterObj.CreatedAt.UTC().Format(time.RFC3339Nano), beforeObj.CreatedAt.UTC().Format(time.RFC3339Nano)},
			{"updated_at", afterObj.UpdatedAt.UTC().Format(time.RFC3339Nano), beforeObj.UpdatedAt.UTC().Format(time.RFC3339Nano)},
			{"properties", string(mustMarshal(t, afterObj.Properties.V)), string(mustMarshal(t, beforeObj.Properties.V))},
		} {
			if c.got != c.want {
				t.Errorf("recreated %s = %v, want %v", c.field, c.got, c.want)
			}
		}
		var afterLinks []models.Link
		if err := db.Where("id IN ?", []string{l1.ID, l2.ID, l3.ID}).Order("id").Find(&afterLinks).Error; err != nil || len(afterLinks) != 3 {
			t.Fatalf("links after: %v, %v", afterLinks, err)
		}
		for i, b := range beforeLinks {
			a := afterLinks[i]
			if a.ID != b.ID || a.LinkTypeID != b.LinkTypeID || a.SourceID != b.SourceID || a.TargetID != b.TargetID ||
				a.SourceSlot != b.SourceSlot || a.TargetSlot != b.TargetSlot || a.CreatedBy != b.CreatedBy || !a.CreatedAt.Equal(b.CreatedAt) ||
				string(mustMarshal(t, a.Properties.V)) != string(mustMarshal(t, b.Properties.V)) {
				t.Errorf("recreated link %d = %+v, want %+v", i, a, b)
			}
		}
		// The unique value is claimed again, and cardinality holds: a
		// second Ticket titled T-1 and a second project for the ticket are
		// refused.
		_, err = s.CreateObject(ctx, nil, ticket.ID, map[string]any{"title": "T-1"}, "", admin.ID, "acme")
		if !apperr.Is(err, apperr.UniqueViolation) && !apperr.Is(err, apperr.Conflict) {
			t.Errorf("a duplicate of the recreated unique title: %v, want a unique violation", err)
		}
		p2 := enginetest.Must(s.CreateObject(ctx, nil, project.ID, map[string]any{"title": "P2"}, "", admin.ID, "acme"))(t)
		if _, err := s.CreateLink(ctx, nil, inProject.ID, victim.ID, p2.ID); !apperr.Is(err, apperr.CardinalityViolation) {
			t.Errorf("a second project for the recreated ticket: %v, want CardinalityViolation", err)
		}
		_ = blocks
		// Recreating twice is refused.
		if err := s.RestoreObject(ctx, nil, domain.Object{ID: victim.ID, ObjectTypeID: ticket.ID, Marking: "public"}); !apperr.Is(err, apperr.Conflict) {
			t.Errorf("recreating an existing object: %v, want Conflict", err)
		}
	})
}

// The other built-in kinds record what undoing them needs, and their
// inverses name it: update (before and after of each touched property and
// the update times), create (the new object's id, marking and
// organization), link (its id).
func TestEditsOfTheOtherKindsInvert(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := enginetest.New(t, db)
		s := e.Store
		ot := enginetest.Must(s.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Doc", Properties: []ontology.PropertySpec{
			{Name: "title", Type: domain.T(domain.TypeString)}, {Name: "state", Type: domain.T(domain.TypeString)}}}))(t)
		lt := enginetest.Must(s.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "cites", SourceObjectTypeID: ot.ID, TargetObjectTypeID: ot.ID,
			Cardinality: domain.ManyToMany}))(t)
		action := func(js string) *domain.ActionType {
			var d domain.ActionDefinition
			enginetest.Decode(t, fmt.Sprintf(js, ot.ID), &d)
			return enginetest.Must(s.ActionType(ctx, enginetest.Must(s.CreateActionType(ctx, admin.ID, d))(t).ID))(t)
		}
		upd := action(`{"name":"set_state","object_type_id":%q,"operation_kind":"update_object",
			"inputs":[{"name":"state","type":"string","required":true}],"config":{"operation":{"property_mappings":[{"property":"state","input":"state"}]}}}`)
		crt := action(`{"name":"new_doc","object_type_id":%q,"operation_kind":"create_object",
			"inputs":[{"name":"title","type":"string","required":true}],"config":{"operation":{"property_mappings":[{"property":"title","input":"title"}]}}}`)
		lnk := action(fmt.Sprintf(`{"name":"cite","object_type_id":%%q,"operation_kind":"create_link",
			"inputs":[{"name":"other","type":"reference","required":true}],"config":{"operation":{"link_type_id":%q,"other_object_input":"other","target_side":"source"}}}`, lt.ID))
		a := enginetest.Must(s.CreateObject(ctx, nil, ot.ID, map[string]any{"title": "A"}, "confidential", admin.ID, "acme"))(t)
		b := enginetest.Must(s.CreateObject(ctx, nil, ot.ID, map[string]any{"title": "B"}, "", admin.ID, "acme"))(t)

		edit := func(at *domain.ActionType, target string, params map[string]any) models.Edit {
			t.Helper()
			id := e.Execution(t, at, models.KindExecute, target, params, nil, 0)
			if err := e.Run(ctx, id); err != nil {
				t.Fatal(err)
			}
			ex := e.Row(t, id)
			if ex.Status != models.StatusSucceeded || len(ex.Edits.V) != 1 {
				t.Fatalf("%s: %s %s", at.Name, ex.Status, ex.ErrorMessage)
			}
			return ex.Edits.V[0]
		}

		u := edit(upd, a.ID, map[string]any{"state": "done"})
		now := enginetest.Must(s.Object(ctx, nil, a.ID))(t)
		if u.Before["state"] != nil || u.After["state"] != "done" || u.UpdatedAtBefore == nil || !u.UpdatedAtBefore.Equal(a.UpdatedAt) ||
			u.UpdatedAtAfter == nil || !u.UpdatedAtAfter.Equal(now.UpdatedAt) {
			t.Fatalf("update edit = %+v (object updated_at %v → %v)", u, a.UpdatedAt, now.UpdatedAt)
		}
		inv := enginetest.Must(updateobject.UpdateObject{}.Invert(u))(t)
		if len(inv) != 1 || inv[0].After["state"] != nil || inv[0].Before["state"] != "done" || !inv[0].UpdatedAtBefore.Equal(now.UpdatedAt) {
			t.Fatalf("update inverse = %+v", inv)
		}

		c := edit(crt, "", map[string]any{"title": "C"})
		created := enginetest.Must(s.Object(ctx, nil, c.ObjectID))(t)
		if created == nil || c.Marking != created.Marking || c.Organization != "acme" || c.CreatedBy != admin.ID ||
			c.UpdatedAtAfter == nil || !c.UpdatedAtAfter.Equal(created.UpdatedAt) {
			t.Fatalf("create edit = %+v, object %+v", c, created)
		}
		inv = enginetest.Must(createobject.CreateObject{}.Invert(c))(t)
		if len(inv) != 1 || inv[0].Op != models.EditDeleteObject || inv[0].ObjectID != c.ObjectID {
			t.Fatalf("create inverse = %+v", inv)
		}

		l := edit(lnk, a.ID, map[string]any{"other": b.ID})
		if l.LinkID == "" || l.SourceID != a.ID || l.TargetID != b.ID {
			t.Fatalf("link edit = %+v", l)
		}
		inv = enginetest.Must(createlink.CreateLink{}.Invert(l))(t)
		if len(inv) != 1 || inv[0].Op != models.EditDeleteLink || inv[0].LinkID != l.LinkID {
			t.Fatalf("link inverse = %+v", inv)
		}
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
