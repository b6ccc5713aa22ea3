package automations_test

import (
	"context"
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/automations"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/internal/harness/enginetest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// TestEditRecordsAnEventInItsCommit runs a real update through the
// engine's steps with the outbox: the committed edit has exactly one
// event, naming the object, the change and the property values before and
// after; a refused execution commits neither edit nor event.
func TestEditRecordsAnEventInItsCommit(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		_, at := setup(t, db)
		env := enginetest.On(db)
		env.Eng = engine.New(engine.Deps{DB: db, Ontology: env.Store, Kinds: kinds.Registry(), Levels: env.Store.Levels(),
			Events: automations.Outbox{}})
		obj := enginetest.Must(env.Store.CreateObjectAs(ctx, enginetest.Admin, "Ticket",
			ontology.ObjectSpec{Properties: map[string]any{"status": "open"}}))(t)
		id := env.Execution(t, at, "action", obj.ID, map[string]any{"status": "escalated"}, nil, 0)
		if err := env.Run(ctx, id); err != nil {
			t.Fatal(err)
		}
		var evs []models.AutomationEvent
		if err := db.Find(&evs).Error; err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 {
			t.Fatalf("%d events, want 1: %+v", len(evs), evs)
		}
		ev := evs[0]
		if ev.ExecutionID != id || ev.ObjectID != obj.ID || ev.Change != "updated" || ev.DispatchedAt != nil ||
			ev.Before.V["status"] != "open" || ev.After.V["status"] != "escalated" {
			t.Fatalf("event %+v", ev)
		}
		// An outbox that fails after writing: the edit rolls back with its
		// event, so the two commit together or not at all.
		env.Eng = engine.New(engine.Deps{DB: db, Ontology: env.Store, Kinds: kinds.Registry(), Levels: env.Store.Levels(),
			Events: failingOutbox{}})
		again := env.Execution(t, at, "action", obj.ID, map[string]any{"status": "closed"}, nil, 0)
		if err := env.Run(ctx, again); err != nil {
			t.Fatal(err)
		}
		if row := env.Row(t, again); row.Status != models.StatusFailed {
			t.Fatalf("status %s although its events were not recorded, want failed", row.Status)
		}
		var n int64
		if err := db.Model(&models.AutomationEvent{}).Count(&n).Error; err != nil || n != 1 {
			t.Fatalf("%d events after a rolled-back edit (%v), want 1", n, err)
		}
		if o := enginetest.Must(env.Store.Object(ctx, db, obj.ID))(t); o.Properties["status"] != "escalated" {
			t.Fatalf("status %v after the rolled-back edit, want escalated", o.Properties["status"])
		}
	})
}

// failingOutbox writes the events, then fails: a fault of the event
// source after its write.
type failingOutbox struct{}

func (failingOutbox) Record(ctx context.Context, tx *gorm.DB, ex *models.Execution, edits []models.Edit) error {
	if err := (automations.Outbox{}).Record(ctx, tx, ex, edits); err != nil {
		return err
	}
	return errors.New("the event source failed after writing")
}
