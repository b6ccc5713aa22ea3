package execstore_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// A row created in a traced request records the trace; a row written by
// a version that kept no trace id (the column added by the migration)
// reads with none.
func TestTraceIDRecordedAndOldRowsRead(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
		sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
		ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
		s := execstore.New(db)
		traced := newRow(nil)
		must(t, s.Create(ctx, traced))
		if got := read(t, db, traced.ID).TraceID; got != tid.String() {
			t.Fatalf("trace id %q, want %s", got, tid)
		}

		// An older schema: no trace_id column, a row written then.
		if err := db.Migrator().DropColumn(&models.Execution{}, "TraceID"); err != nil {
			t.Fatal(err)
		}
		testdb.AsOlderBinaryLeftIt(t, db)
		old := newRow(nil)
		err := db.Exec("INSERT INTO executions (id, kind, workflow_id, action_type_id, action_type_name, actor_id, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, CURRENT_TIMESTAMP)",
			old.ID, old.Kind, old.WorkflowID, old.ActionTypeID, old.ActionTypeName, old.ActorID, old.Status).Error
		if err != nil {
			t.Fatal(err)
		}
		must(t, models.Migrate(context.Background(), db))
		if got := read(t, db, old.ID); got.TraceID != "" || got.Status != models.StatusQueued {
			t.Fatalf("an old row reads as %+v", got)
		}
	})
}
