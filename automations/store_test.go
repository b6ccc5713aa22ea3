package automations_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/automations"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// setup creates a Ticket type and an update action with a required input
// "status" over a real ontology store.
func setup(t *testing.T, db *gorm.DB) (*automations.Store, *domain.ActionType) {
	ctx := context.Background()
	e := enginetest.New(t, db)
	ticket := enginetest.Must(e.Store.CreateObjectType(ctx, enginetest.Admin.ID, ontology.ObjectTypeSpec{Name: "Ticket",
		Properties: []ontology.PropertySpec{{Name: "status", Type: domain.T(domain.TypeString)}}}))(t)
	var d domain.ActionDefinition
	enginetest.Decode(t, fmt.Sprintf(`{"name":"escalate","object_type_id":%q,"operation_kind":"update_object",
		"inputs":[{"name":"status","type":"string","required":true},{"name":"note","type":"string"}],
		"config":{"operation":{"property_mappings":[{"property":"status","input":"status"}]}}}`, ticket.ID), &d)
	at := enginetest.Must(e.Store.ActionType(ctx, enginetest.Must(e.Store.CreateActionType(ctx, enginetest.Admin.ID, d))(t).ID))(t)
	return &automations.Store{DB: db, Actions: e.Store, ObjectTypes: func(ctx context.Context, ref string) (string, error) {
		ot, err := e.Store.ObjectType(ctx, ref)
		if err != nil {
			return "", err
		}
		return ot.ID, nil
	}}, at
}

func valid() automations.Spec {
	return automations.Spec{Name: "escalate on create", ActionType: "escalate",
		Trigger:    automations.Trigger{Kind: "object", ObjectType: "Ticket", On: []string{"created"}},
		Parameters: map[string]string{"status": "escalated"}}
}

// TestDefinitionRoundTrip creates, reads, lists, pauses, updates and
// deletes an automation; another owner sees none of it.
func TestDefinitionRoundTrip(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, at := setup(t, db)
		owner := enginetest.Admin.ID
		v := enginetest.Must(s.Create(ctx, owner, valid()))(t)
		if v.Owner != owner || v.ActionType != at.ID || v.Paused || v.Trigger.On[0] != "created" || v.Parameters["status"] != "escalated" {
			t.Fatalf("created %+v", v)
		}
		got := enginetest.Must(s.Get(ctx, owner, v.ID))(t)
		if got.Name != "escalate on create" || got.Trigger.ObjectType != "Ticket" || len(got.Trigger.On) != 1 {
			t.Fatalf("read back %+v", got)
		}
		if _, err := s.Get(ctx, "someone-else", v.ID); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("another owner read it: %v", err)
		}
		if list := enginetest.Must(s.List(ctx, "someone-else"))(t); len(list) != 0 {
			t.Fatalf("another owner lists %v", list)
		}
		if p := enginetest.Must(s.SetPaused(ctx, owner, v.ID, true))(t); !p.Paused {
			t.Fatal("not paused")
		}
		if g := enginetest.Must(s.Get(ctx, owner, v.ID))(t); !g.Paused {
			t.Fatal("pause not stored")
		}
		sp := valid()
		sp.Trigger = automations.Trigger{Kind: "schedule", Cron: "0 7 * * 1"}
		u := enginetest.Must(s.Update(ctx, owner, v.ID, sp))(t)
		if u.Trigger.Kind != "schedule" || u.Trigger.Cron != "0 7 * * 1" || u.Trigger.ObjectType != "" {
			t.Fatalf("updated %+v", u)
		}
		if _, err := s.Create(ctx, owner, valid()); !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("a second automation of the same name: %v", err)
		}
		if err := s.Delete(ctx, owner, v.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, owner, v.ID); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("deleted twice: %v", err)
		}
	})
}

// TestBadDefinitionsAreRefused checks each refusal is an InvalidArgument
// naming the member, and that nothing is saved.
func TestBadDefinitionsAreRefused(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := setup(t, db)
		cases := map[string]func(sp *automations.Spec){
			"name":                        func(sp *automations.Spec) { sp.Name = " " },
			"trigger.kind":                func(sp *automations.Spec) { sp.Trigger.Kind = "file" },
			"trigger.on":                  func(sp *automations.Spec) { sp.Trigger.On = []string{"renamed"} },
			"trigger.object_type":         func(sp *automations.Spec) { sp.Trigger.ObjectType = "" },
			"trigger.object_type unknown": func(sp *automations.Spec) { sp.Trigger.ObjectType = "NoSuchType" },
			"trigger.cron":                func(sp *automations.Spec) { sp.Trigger = automations.Trigger{Kind: "schedule", Cron: "61 * * * *"} },
			"trigger.interval":            func(sp *automations.Spec) { sp.Trigger = automations.Trigger{Kind: "schedule", Interval: "5s"} },
			"action_type":                 func(sp *automations.Spec) { sp.ActionType = "no-such-action" },
			"parameters.status":           func(sp *automations.Spec) { delete(sp.Parameters, "status") },
			"parameters.nope":             func(sp *automations.Spec) { sp.Parameters["nope"] = "x" },
		}
		for member, spoil := range cases {
			sp := valid()
			sp.Parameters = map[string]string{"status": "escalated"}
			spoil(&sp)
			_, err := s.Create(ctx, enginetest.Admin.ID, sp)
			if !apperr.Is(err, apperr.InvalidArgument) || !strings.HasPrefix(apperr.MessageOf(err), strings.Fields(member)[0]+":") {
				t.Errorf("%s: got %v", member, err)
			}
		}
		var n int64
		if err := db.Model(&models.Automation{}).Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("%d automations saved (%v)", n, err)
		}
	})
}
