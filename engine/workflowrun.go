package engine

import (
	"context"

	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/models"
)

// runKey carries the identity of the workflow run executing a step.
type runKey struct{}

type workflowRun struct{ workflowID, runID string }

// WithWorkflowRun tells the steps which workflow run executes them, so the
// execution row records its run id in the same write that finishes it
// rather than in a separate update from the API.
func WithWorkflowRun(ctx context.Context, workflowID, runID string) context.Context {
	return context.WithValue(ctx, runKey{}, workflowRun{workflowID, runID})
}

// runOf returns the workflow run executing the step, if the caller said.
func runOf(ctx context.Context) (workflowRun, bool) {
	r, ok := ctx.Value(runKey{}).(workflowRun)
	return r, ok && r.workflowID != ""
}

// runIDFor returns the run id to record on ex: the run executing this step
// when it is ex's own workflow (not a batch chunk running the item) and ex
// has none yet.
func runIDFor(ctx context.Context, ex *models.Execution) string {
	if r, ok := runOf(ctx); ok && ex.RunID == "" && r.workflowID == ex.WorkflowID {
		return r.runID
	}
	return ""
}

// storeRun is the run executing the step, as the execution store records
// it (nil when the caller did not say).
func storeRun(ctx context.Context) *execstore.Run {
	if r, ok := runOf(ctx); ok {
		return &execstore.Run{WorkflowID: r.workflowID, RunID: r.runID}
	}
	return nil
}
