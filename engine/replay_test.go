package engine

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// A workflow task replayed after a crash that followed Run's commit runs
// every step again. The steps must answer from the record: here the
// action type and the target no longer exist (a delete, then a cleanup),
// so validating or authorizing the request again would refuse an
// execution whose edits have committed.
func TestStepsOnAFinishedExecutionAnswerFromTheRecord(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := New(Deps{DB: db}) // no ontology: a replayed step must not need one
		now := e.now()
		edits := []models.Edit{{Op: "delete_object", ObjectTypeID: "gone-type", ObjectID: "gone-object", Before: map[string]any{"title": "o1"}}}
		done := models.Execution{ID: "done", Kind: models.KindExecute, ActionTypeID: "gone-action", ActionTypeName: "cancel",
			ActorID: "u", TargetObjectID: "gone-object", Status: models.StatusSucceeded, FinishedAt: &now, NotifiedAt: &now,
			Parameters: models.NewNumJSON(map[string]any{"reason": "dup"}), Edits: models.NewNumJSON(edits),
			Result: models.NewJSON(map[string]any{"object_id": "gone-object"})}
		failed := models.Execution{ID: "failed", Kind: models.KindExecute, ActionTypeID: "gone-action", ActionTypeName: "cancel",
			ActorID: "u", Status: models.StatusFailed, FinishedAt: &now, ErrorCode: string(apperr.PermissionDenied), ErrorMessage: "no"}
		for _, ex := range []*models.Execution{&done, &failed} {
			if err := db.Create(ex).Error; err != nil {
				t.Fatal(err)
			}
		}

		p, err := e.Validate(ctx, "done")
		if err != nil {
			t.Fatalf("Validate of a succeeded execution: %v", err)
		}
		if p.HasNotifications || p.TargetID != "gone-object" {
			t.Fatalf("Prepare = %+v", p)
		}
		if err := e.Authorize(ctx, p); err != nil {
			t.Fatalf("Authorize of a succeeded execution: %v", err)
		}
		out, err := e.Run(ctx, p, true)
		if err != nil {
			t.Fatalf("Run of a succeeded execution: %v", err)
		}
		if len(out.Edits) != 1 || out.Edits[0].ObjectID != "gone-object" || out.Result["object_id"] != "gone-object" {
			t.Fatalf("Run = %+v, want the recorded outcome", out)
		}

		if _, err := e.Validate(ctx, "failed"); !apperr.Is(err, apperr.PermissionDenied) {
			t.Fatalf("Validate of a failed execution: %v, want its recorded refusal", err)
		}
		var after models.Execution
		if err := db.Take(&after, "id = ?", "done").Error; err != nil || after.Status != models.StatusSucceeded {
			t.Fatalf("row after the replay: %+v, %v", after, err)
		}
	})
}
