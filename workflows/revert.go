package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ontoflow/ontoflow/activities"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/revert"
)

// RevertWorkflowName is the workflow of a revert execution (kind revert):
// its own workflow type, so older histories are untouched, with the same
// search attributes as every execution.
const RevertWorkflowName = "RevertWorkflow"

// Revert runs a revert execution: one step that checks the execution it
// reverts and applies the inverse edits with both records in one
// transaction (exactly once however often it runs), or records why not.
func (w *Workflows) Revert(ctx workflow.Context, in ActionInput) (ItemResult, error) {
	ctx = stepOptions(ctx)
	markRunning(ctx)
	var out revert.Reverted
	res := ItemResult{ExecutionID: in.ExecutionID, Status: models.StatusSucceeded}
	if err := workflow.ExecuteLocalActivity(ctx, w.steps.Revert, in.ExecutionID).Get(ctx, &out); err != nil {
		f := activities.FailureOf(err)
		_ = workflow.ExecuteLocalActivity(ctx, w.steps.RecordFailure, in.ExecutionID, f).Get(ctx, nil)
		res.Status, res.ErrorCode, res.ErrorMessage = models.StatusFailed, f.Code, f.Message
	}
	// The action's revert notifications, after the revert committed: best
	// effort, one step per channel, as an execution's deliveries.
	for i, d := range out.Deliveries {
		if res.Status != models.StatusSucceeded {
			break
		}
		_ = w.deliver(ctx, in.ExecutionID, d, i == len(out.Deliveries)-1).Get(ctx, nil)
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, SAStatus.ValueSet(res.Status))
	if res.Status != models.StatusSucceeded {
		return res, temporal.NewNonRetryableApplicationError(res.ErrorMessage, res.ErrorCode, nil)
	}
	return res, nil
}
