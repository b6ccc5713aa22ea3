package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// BatchInput starts (or continues) BatchWorkflow.
type BatchInput struct {
	BatchID     string `json:"batch_id"`
	Total       int    `json:"total"`
	ChildItems  int    `json:"child_items"`
	Concurrency int    `json:"concurrency"`
	// NextChunk is where a continued run resumes.
	NextChunk int `json:"next_chunk,omitempty"`
}

// ChunkInput starts BatchChunkWorkflow over items [From, To) of a batch.
type ChunkInput struct {
	BatchID string `json:"batch_id"`
	From    int    `json:"from"`
	To      int    `json:"to"`
}

// ChunkResult counts a chunk's outcomes.
type ChunkResult struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
}

// maxChildrenPerRun bounds the parent's history (~6 events per child):
// past it the parent continues as new, so batches of any configured size
// stay far below Temporal's 51,200-event limit.
const maxChildrenPerRun = 500

// Batch (BatchWorkflow) runs a batch's items as child workflows of ChildItems items
// each, Concurrency children at a time. Each child carries its items through
// the same runItem steps as a single execution; items succeed or fail
// independently, and their rows hold the per-item outcome.
func (w *Workflows) Batch(ctx workflow.Context, in BatchInput) (engine.BatchTotals, error) {
	ctx = stepOptions(ctx)
	if in.NextChunk == 0 {
		markRunning(ctx)
	}
	chunks := (in.Total + in.ChildItems - 1) / in.ChildItems
	parentID := workflow.GetInfo(ctx).WorkflowExecution.ID
	sel := workflow.NewSelector(ctx)
	pending, started := 0, 0
	var childErr error
	for in.NextChunk < chunks || pending > 0 {
		for pending < in.Concurrency && in.NextChunk < chunks && started < maxChildrenPerRun {
			k := in.NextChunk
			from := k * in.ChildItems
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
				WorkflowID:            fmt.Sprintf("%s/chunk-%d", parentID, k),
				TypedSearchAttributes: temporal.NewSearchAttributes(SAKind.ValueSet(models.KindBatch + "-chunk")),
				RetryPolicy: &temporal.RetryPolicy{
					InitialInterval: time.Second, MaximumAttempts: 5,
				},
			})
			f := workflow.ExecuteChildWorkflow(cctx, BatchChunkWorkflowName, ChunkInput{
				BatchID: in.BatchID, From: from, To: min(from+in.ChildItems, in.Total),
			})
			sel.AddFuture(f, func(f workflow.Future) {
				pending--
				if err := f.Get(ctx, nil); err != nil && childErr == nil {
					childErr = err
				}
			})
			pending++
			started++
			in.NextChunk++
		}
		if pending == 0 {
			break
		}
		sel.Select(ctx)
	}
	if in.NextChunk < chunks {
		return engine.BatchTotals{}, workflow.NewContinueAsNewError(ctx, BatchWorkflowName, in)
	}
	var totals engine.BatchTotals
	err := workflow.ExecuteLocalActivity(ctx, w.steps.FinishBatch, in.BatchID).Get(ctx, &totals)
	if err != nil {
		return totals, err
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, SAStatus.ValueSet(totals.Status))
	if childErr != nil {
		workflow.GetLogger(ctx).Warn("a batch chunk failed; its unfinished items were marked failed", "err", childErr)
	}
	return totals, nil
}

// BatchChunk (BatchChunkWorkflow) runs items [From, To) of a batch in order. Items
// already finished (a retried chunk) are skipped.
func (w *Workflows) BatchChunk(ctx workflow.Context, in ChunkInput) (ChunkResult, error) {
	ctx = stepOptions(ctx)
	var ids []string
	err := workflow.ExecuteLocalActivity(ctx, w.steps.ListBatchChunk, in.BatchID, in.From, in.To).Get(ctx, &ids)
	if err != nil {
		return ChunkResult{}, err
	}
	var r ChunkResult
	for _, id := range ids {
		if w.runItem(ctx, id).Status == models.StatusSucceeded {
			r.Succeeded++
		} else {
			r.Failed++
		}
	}
	return r, nil
}
