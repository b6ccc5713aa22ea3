package execstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

func newRow(batch *models.Execution) *models.Execution {
	id := uuid.NewString()
	ex := &models.Execution{ID: id, Kind: models.KindExecute, WorkflowID: "wf-" + id, ActionTypeID: "at",
		ActionTypeName: "a", ActorID: "u", Status: models.StatusQueued}
	if batch != nil {
		ex.Kind, ex.WorkflowID, ex.BatchID = models.KindBatchItem, batch.WorkflowID, &batch.ID
	}
	return ex
}

func read(t *testing.T, db *gorm.DB, id string) *models.Execution {
	t.Helper()
	var ex models.Execution
	if err := db.Take(&ex, "id = ?", id).Error; err != nil {
		t.Fatal(err)
	}
	return &ex
}

// A status change only moves a row from the status it expects, and a run
// id is recorded by the execution's own workflow only, once.
func TestStatusGuards(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx, s, now := context.Background(), execstore.New(db), time.Now().UTC()
		ex := newRow(nil)
		if err := s.Create(ctx, ex); err != nil {
			t.Fatal(err)
		}
		must(t, s.MarkRunning(ctx, ex.ID, now, &execstore.Run{WorkflowID: "other", RunID: "r0"}))
		if got := read(t, db, ex.ID); got.Status != models.StatusRunning || got.RunID != "" || got.StartedAt == nil {
			t.Fatalf("after MarkRunning by another workflow: %s run %q started %v", got.Status, got.RunID, got.StartedAt)
		}
		must(t, s.MarkRunning(ctx, ex.ID, now, &execstore.Run{WorkflowID: ex.WorkflowID, RunID: "r1"}))
		if got := read(t, db, ex.ID); got.RunID != "" {
			t.Fatalf("MarkRunning moved a running row: run %q", got.RunID)
		}
		failed, err := s.Fail(ctx, ex.ID, execstore.Failure{Code: "X", Message: "m", Details: map[string]any{"code": "X"}, At: now},
			&execstore.Run{WorkflowID: ex.WorkflowID, RunID: "r1"})
		if err != nil || !failed {
			t.Fatalf("Fail = %v, %v", failed, err)
		}
		got := read(t, db, ex.ID)
		if got.Status != models.StatusFailed || got.RunID != "r1" || got.ErrorCode != "X" || got.FinishedAt == nil {
			t.Fatalf("after Fail: %+v", got)
		}
		if failed, err := s.Fail(ctx, ex.ID, execstore.Failure{Code: "Y", At: now}, nil); err != nil || failed {
			t.Fatalf("Fail of a failed row = %v, %v", failed, err)
		}
		if err := s.Create(ctx, &models.Execution{ID: uuid.NewString(), ActorID: "u", IdempotencyKey: ptr("k"), Status: models.StatusQueued}); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, &models.Execution{ID: uuid.NewString(), ActorID: "u", IdempotencyKey: ptr("k"), Status: models.StatusQueued}); err == nil {
			t.Fatal("a second row with the actor's key was recorded")
		}
	})
}

// Success commits in the caller's transaction, after which no failure
// moves the row; a revert records its outcome and the link back.
func TestSucceedAndRevert(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx, s, now := context.Background(), execstore.New(db), time.Now().UTC()
		ex, rv := newRow(nil), newRow(nil)
		must(t, s.Create(ctx, ex))
		must(t, s.Create(ctx, rv))
		edits := []models.Edit{{Op: models.EditUpdateObject, ObjectID: "o"}}
		must(t, db.Transaction(func(tx *gorm.DB) error {
			row, err := s.Lock(ctx, tx, ex.ID)
			if err != nil {
				return err
			}
			return s.Succeed(ctx, tx, row, execstore.Success{At: now, Edits: edits, Result: map[string]any{"r": 1.0},
				Ran: &execstore.Ran{ActionVersion: 3, Parameters: map[string]any{"p": "v"}}, RunID: "r1"})
		}))
		got := read(t, db, ex.ID)
		if got.Status != models.StatusSucceeded || got.ActionVersion != 3 || got.RunID != "r1" || len(got.Edits.V) != 1 || got.Parameters.V["p"] != "v" {
			t.Fatalf("after Succeed: %+v", got)
		}
		if failed, err := s.Fail(ctx, ex.ID, execstore.Failure{Code: "X", At: now}, nil); err != nil || failed {
			t.Fatalf("Fail of a succeeded row = %v, %v", failed, err)
		}
		must(t, db.Transaction(func(tx *gorm.DB) error {
			row, err := s.Lock(ctx, tx, rv.ID)
			if err != nil {
				return err
			}
			if err := s.Succeed(ctx, tx, row, execstore.Success{At: now, Edits: edits}); err != nil {
				return err
			}
			return s.MarkReverted(ctx, tx, ex.ID, rv.ID)
		}))
		if got := read(t, db, ex.ID); got.RevertedBy == nil || *got.RevertedBy != rv.ID {
			t.Fatalf("reverted_by = %v", got.RevertedBy)
		}
		if got := read(t, db, rv.ID); got.Status != models.StatusSucceeded || got.ActionVersion != 0 || got.RunID != "" {
			t.Fatalf("revert row: %+v", got)
		}
		at := now
		must(t, db.Transaction(func(tx *gorm.DB) error {
			return s.RecordDeliveries(ctx, tx, ex.ID, []models.NotificationOutcome{{Channel: "in_app", Status: "delivered"}}, &at)
		}))
		if got := read(t, db, ex.ID); len(got.Notifications.V) != 1 || got.NotifiedAt == nil {
			t.Fatalf("deliveries: %+v at %v", got.Notifications.V, got.NotifiedAt)
		}
	})
}

// A batch: a start failure fails it with its open items; the sweep fails
// only a row no workflow took up; closing happens once.
func TestBatchWrites(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx, s, now := context.Background(), execstore.New(db), time.Now().UTC()
		f := execstore.Failure{Code: "Unavailable", Message: "m", Details: map[string]any{"code": "Unavailable"}, At: now}
		batch := newRow(nil)
		batch.Kind = models.KindBatch
		items := []models.Execution{*newRow(batch), *newRow(batch)}
		items[1].Status = models.StatusSucceeded
		must(t, s.CreateBatch(ctx, batch, items))
		must(t, s.FailUnstarted(ctx, batch.ID, f))
		if read(t, db, batch.ID).Status != models.StatusFailed || read(t, db, items[0].ID).Status != models.StatusFailed ||
			read(t, db, items[1].ID).Status != models.StatusSucceeded {
			t.Fatal("FailUnstarted did not fail the open rows only")
		}

		started, open := newRow(nil), newRow(nil)
		started.RunID = "r1"
		must(t, s.Create(ctx, started))
		must(t, s.Create(ctx, open))
		if failed, err := s.Abandon(ctx, started.ID, f); err != nil || failed {
			t.Fatalf("Abandon of a started row = %v, %v", failed, err)
		}
		if failed, err := s.Abandon(ctx, open.ID, f); err != nil || !failed {
			t.Fatalf("Abandon of a never-started row = %v, %v", failed, err)
		}

		b2 := newRow(nil)
		b2.Kind = models.KindBatch
		must(t, s.CreateBatch(ctx, b2, []models.Execution{*newRow(b2)}))
		_, err := s.FailOpenItems(ctx, b2.ID, execstore.Failure{Code: "Internal", Message: "gave up", At: now})
		must(t, err)
		var items2 []models.Execution
		must(t, db.Where("batch_id = ?", b2.ID).Find(&items2).Error)
		if len(items2) != 1 || items2[0].Status != models.StatusFailed || items2[0].ErrorDetails.V != nil {
			t.Fatalf("open items after FailOpenItems: %+v", items2)
		}
		for i, want := range []bool{true, false} {
			closed, err := s.CloseBatch(ctx, b2.ID, models.StatusFailed, now, &execstore.Run{RunID: "r2"})
			if err != nil || closed != want {
				t.Fatalf("CloseBatch #%d = %v, %v; want %v", i+1, closed, err, want)
			}
		}
		if got := read(t, db, b2.ID); got.RunID != "r2" || got.Status != models.StatusFailed {
			t.Fatalf("closed batch: %+v", got)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr(s string) *string { return &s }
