package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/models"
)

// Starter starts the engine's workflows for the API.
type Starter struct {
	c    client.Client
	opts StarterOptions
}

// StarterOptions configure a Starter.
type StarterOptions struct {
	TaskQueue        string
	BatchChildItems  int
	BatchConcurrency int
}

// Defaults of StarterOptions, and of the flags that set them (config
// uses these constants: one source).
const (
	DefaultBatchChildItems  = defaults.BatchChildItems
	DefaultBatchConcurrency = defaults.BatchConcurrency
)

// NewStarter returns a Starter over c.
func NewStarter(c client.Client, opts StarterOptions) *Starter {
	if opts.BatchChildItems < 1 {
		opts.BatchChildItems = DefaultBatchChildItems
	}
	if opts.BatchConcurrency < 1 {
		opts.BatchConcurrency = DefaultBatchConcurrency
	}
	return &Starter{c: c, opts: opts}
}

// WorkflowID is the readable workflow id of an execution.
func WorkflowID(actionName, executionID string) string {
	return fmt.Sprintf("action/%s/%s", actionName, executionID)
}

func (s *Starter) options(ex *models.Execution) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:        ex.WorkflowID,
		TaskQueue: s.opts.TaskQueue,
		// With the worker in this process (dev), the first workflow task
		// runs here without a round trip through matching.
		EnableEagerStart:      true,
		WorkflowIDReusePolicy: 0,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			SAActionType.ValueSet(ex.ActionTypeName),
			SAActor.ValueSet(ex.ActorName),
			SATarget.ValueSet(ex.TargetObjectID),
			SAKind.ValueSet(ex.Kind),
			// Queued until the workflow's first step starts (markRunning).
			SAStatus.ValueSet(models.StatusQueued),
			SAExecutionID.ValueSet(ex.ID),
		),
	}
}

// Start starts the workflow of a single execution row the caller wrote:
// RevertWorkflow for a revert, ActionWorkflow for any other kind (batches
// start with StartBatch).
func (s *Starter) Start(ctx context.Context, ex *models.Execution) (client.WorkflowRun, error) {
	if ex.Kind == models.KindRevert {
		return s.StartRevert(ctx, ex)
	}
	return s.StartAction(ctx, ex)
}

// StartAction starts ActionWorkflow for an execution row the caller wrote.
func (s *Starter) StartAction(ctx context.Context, ex *models.Execution) (client.WorkflowRun, error) {
	run, err := s.c.ExecuteWorkflow(ctx, s.options(ex), ActionWorkflowName, ActionInput{ExecutionID: ex.ID})
	if err != nil {
		return nil, fmt.Errorf("start workflow %s: %w", ex.WorkflowID, err)
	}
	return run, nil
}

// StartRevert starts RevertWorkflow for a revert execution row.
func (s *Starter) StartRevert(ctx context.Context, ex *models.Execution) (client.WorkflowRun, error) {
	run, err := s.c.ExecuteWorkflow(ctx, s.options(ex), RevertWorkflowName, ActionInput{ExecutionID: ex.ID})
	if err != nil {
		return nil, fmt.Errorf("start workflow %s: %w", ex.WorkflowID, err)
	}
	return run, nil
}

// Started reports whether a workflow with id exists in Temporal (running
// or closed); an error says Temporal could not tell.
func (s *Starter) Started(ctx context.Context, id string) (bool, error) {
	_, err := s.c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("describe workflow %s: %w", id, err)
	}
	return true, nil
}

// Resume starts the workflow of an execution row (single or batch) whose
// workflow may never have started (the start failed, or the API died
// between writing the row and starting it), and returns its run. If the
// workflow exists, running or closed, that run is returned and nothing
// starts: an execution's workflow id runs at most once.
func (s *Starter) Resume(ctx context.Context, ex *models.Execution) (client.WorkflowRun, error) {
	opts := s.options(ex)
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	var run client.WorkflowRun
	var err error
	switch ex.Kind {
	case models.KindBatch:
		opts.EnableEagerStart = false
		run, err = s.c.ExecuteWorkflow(ctx, opts, BatchWorkflowName, s.batchInput(ex))
	case models.KindRevert:
		run, err = s.c.ExecuteWorkflow(ctx, opts, RevertWorkflowName, ActionInput{ExecutionID: ex.ID})
	default:
		run, err = s.c.ExecuteWorkflow(ctx, opts, ActionWorkflowName, ActionInput{ExecutionID: ex.ID})
	}
	if err != nil {
		return nil, fmt.Errorf("resume workflow %s: %w", ex.WorkflowID, err)
	}
	return run, nil
}

func (s *Starter) batchInput(batch *models.Execution) BatchInput {
	return BatchInput{BatchID: batch.ID, Total: batch.TotalItems,
		ChildItems: s.opts.BatchChildItems, Concurrency: s.opts.BatchConcurrency}
}

// StartBatch starts BatchWorkflow for a batch row and its item rows.
func (s *Starter) StartBatch(ctx context.Context, batch *models.Execution) (client.WorkflowRun, error) {
	opts := s.options(batch)
	opts.EnableEagerStart = false
	run, err := s.c.ExecuteWorkflow(ctx, opts, BatchWorkflowName, s.batchInput(batch))
	if err != nil {
		return nil, fmt.Errorf("start batch workflow %s: %w", batch.WorkflowID, err)
	}
	return run, nil
}

// Run returns a handle on an existing workflow run (to wait on it).
func (s *Starter) Run(workflowID, runID string) client.WorkflowRun {
	return s.c.GetWorkflow(context.Background(), workflowID, runID)
}

// ExecutionIDOf is the id of the execution whose workflow (or batch chunk,
// WorkflowID + "/chunk-N") workflowID names, "" for any other workflow:
// the SDK's log lines name workflows, and are given the execution's id.
func ExecutionIDOf(workflowID string) string {
	parts := strings.SplitN(workflowID, "/", 4)
	if len(parts) < 3 || parts[0] != "action" {
		return ""
	}
	return parts[2]
}
