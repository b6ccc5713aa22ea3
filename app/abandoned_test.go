package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/workflows"
)

// TestAbandonedKeyedExecutionsAreFailed: a keyed execution whose workflow
// start failed and that no retry resumed is recorded failed once
// AbandonAfter has passed, but only when Temporal confirms its workflow
// does not exist: a queued row whose workflow exists (it waits for a
// worker) and a recent one are left alone. On SQLite and Postgres.
func TestAbandonedKeyedExecutionsAreFailed(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			var more []string
			if d == "postgres" {
				more = []string{"--database-url", testdb.DSN(t, d)}
			}
			abandonedSuite(t, more)
		})
	}
}

func abandonedSuite(t *testing.T, more []string) {
	ctx := context.Background()
	a := devtest.Start(t, adminPassword, more, nil)
	c := devClient{t: t, base: a.APIURL}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Note", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}}}, nil)
	var act idOnly
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "note", "object_type_id": "Note",
		"operation_kind": "create_object", "inputs": []map[string]any{{"name": "title", "type": "string", "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "title", "input": "title"}}}}}, &act)
	var ran idOnly
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+act.ID+"/execute", map[string]any{"parameters": map[string]any{"title": "x"}}, &ran)

	var started models.Execution
	if err := a.DB.Take(&started, "id = ?", ran.ID).Error; err != nil {
		t.Fatal(err)
	}
	old := time.Now().UTC().Add(-2 * time.Hour)
	row := func(id, wf string, created time.Time) models.Execution {
		key := "key-" + id
		return models.Execution{ID: id, Kind: models.KindExecute, WorkflowID: wf, ActionTypeID: started.ActionTypeID,
			ActionTypeName: started.ActionTypeName, ActorID: started.ActorID, ActorName: started.ActorName,
			Status: models.StatusQueued, IdempotencyKey: &key, CreatedAt: created}
	}
	neverID, recentID := uuid.NewString(), uuid.NewString()
	never := row(neverID, workflows.WorkflowID("note", neverID), old)
	recent := row(recentID, workflows.WorkflowID("note", recentID), time.Now().UTC())
	for _, r := range []*models.Execution{&never, &recent} {
		if err := a.DB.Create(r).Error; err != nil {
			t.Fatal(err)
		}
	}
	// The executed row as if its workflow had started but no worker had
	// taken it yet: queued, no run id, keyed, old.
	if err := a.DB.Model(&models.Execution{}).Where("id = ?", started.ID).Updates(map[string]any{
		"status": models.StatusQueued, "run_id": "", "finished_at": nil, "idempotency_key": "key-started", "created_at": old}).Error; err != nil {
		t.Fatal(err)
	}

	starter := workflows.NewStarter(a.Temporal, workflows.StarterOptions{TaskQueue: a.Cfg.TaskQueue})
	svc := executions.New(a.DB, nil, engine.New(engine.Deps{DB: a.DB}), starter, executions.Options{AbandonAfter: time.Hour})
	n, err := svc.FailAbandoned(ctx, time.Now().UTC())
	if err != nil || n != 1 {
		t.Fatalf("FailAbandoned: %d, %v; want 1 (the row whose workflow never started)", n, err)
	}
	for id, want := range map[string]string{neverID: models.StatusFailed, recentID: models.StatusQueued, started.ID: models.StatusQueued} {
		var ex models.Execution
		if err := a.DB.Take(&ex, "id = ?", id).Error; err != nil {
			t.Fatal(err)
		}
		if ex.Status != want || (want == models.StatusFailed && ex.ErrorCode != "Unavailable") {
			t.Errorf("execution %s: %s %s, want %s", id, ex.Status, ex.ErrorCode, want)
		}
	}
}
