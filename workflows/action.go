// Package workflows holds the action engine's Temporal workflows. Every
// action execution, single or in a batch, runs the same four steps as local
// activities — validate, authorize, run the operation, notify — through
// runItem. Local activities keep each step visible in the Temporal UI (as
// markers with their inputs and results) while costing no extra round trip
// through the server per step.
//
// Workflow inputs carry only ids: the request itself is the execution row
// the API wrote before starting the workflow, so histories stay small and a
// batch of 10,000 items does not push its items through the workflow's
// payload limits.
//
// Versioning: workflow code must stay deterministic for histories in
// flight. Any change to the sequence of steps goes behind
// workflow.GetVersion at the point of change, so executions started by the
// previous worker build replay unchanged after a deploy.
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ontoflow/ontoflow/activities"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// Registered workflow names: recorded in histories, so they never change.
const (
	ActionWorkflowName     = "ActionWorkflow"
	BatchWorkflowName      = "BatchWorkflow"
	BatchChunkWorkflowName = "BatchChunkWorkflow"
)

// Workflows are the engine's workflows. They hold the activities they
// call, by method value (as samples-go's greetings does), so a step's name
// and arguments are checked by the compiler; the names registered are the
// methods' names, the ones recorded in histories.
type Workflows struct {
	steps *activities.Activities
}

// New returns the workflows over steps (nil is enough to replay
// histories: replay never runs a step).
func New(steps *activities.Activities) *Workflows { return &Workflows{steps: steps} }

// Register registers the workflows on r under the names recorded in
// histories (and, on a worker, their activities: RegisterActivities).
func (w *Workflows) Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(w.Action, workflow.RegisterOptions{Name: ActionWorkflowName})
	r.RegisterWorkflowWithOptions(w.Batch, workflow.RegisterOptions{Name: BatchWorkflowName})
	r.RegisterWorkflowWithOptions(w.BatchChunk, workflow.RegisterOptions{Name: BatchChunkWorkflowName})
	r.RegisterWorkflowWithOptions(w.Revert, workflow.RegisterOptions{Name: RevertWorkflowName})
}

// RegisterActivities registers the steps on r: the regular activities
// (a remote channel's delivery) run through it; local ones are called
// directly.
func (w *Workflows) RegisterActivities(r worker.ActivityRegistry) { r.RegisterActivity(w.steps) }

// ActionInput starts ActionWorkflow.
type ActionInput struct {
	ExecutionID string `json:"execution_id"`
}

// ItemResult is the outcome of one execution.
type ItemResult struct {
	ExecutionID  string `json:"execution_id"`
	Status       string `json:"status"`
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// stepOptions are the local activity options of the engine's steps.
// Refusals (validation, authorization, conflicts) are non-retryable
// application errors raised by the activities; anything else — a database
// that is briefly unavailable — is retried with backoff for up to five
// minutes.
func stepOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    100 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Second,
		},
	})
}

// Action runs one execution (kinds execute and inline-edit).
func (w *Workflows) Action(ctx workflow.Context, in ActionInput) (ItemResult, error) {
	ctx = stepOptions(ctx)
	markRunning(ctx)
	res := w.runItem(ctx, in.ExecutionID)
	_ = workflow.UpsertTypedSearchAttributes(ctx, SAStatus.ValueSet(res.Status))
	if res.Status != models.StatusSucceeded {
		return res, temporal.NewNonRetryableApplicationError(res.ErrorMessage, res.ErrorCode, nil)
	}
	return res, nil
}

// Versions of runItem's steps (workflow.GetVersion): the workflow names
// the last step, and deliveries run one step per channel.
const (
	changeSteps  = "steps-per-channel"
	stepsVersion = 1
)

// runItem is the one path every execution takes: validate, authorize,
// then the steps of the version the history recorded.
func (w *Workflows) runItem(ctx workflow.Context, executionID string) ItemResult {
	var prep engine.Prepared
	err := workflow.ExecuteLocalActivity(ctx, w.steps.Validate, executionID).Get(ctx, &prep)
	if err == nil {
		err = workflow.ExecuteLocalActivity(ctx, w.steps.Authorize, &prep).Get(ctx, nil)
	}
	if err != nil {
		return w.recordFailure(ctx, executionID, err)
	}
	if workflow.GetVersion(ctx, changeSteps, workflow.DefaultVersion, stepsVersion) == workflow.DefaultVersion {
		return w.runThenNotify(ctx, executionID, &prep)
	}
	return w.runThenDeliverPerChannel(ctx, executionID, &prep)
}

// runThenNotify is the first version's steps, kept so that histories
// recorded before steps-per-channel replay: the run step, then one notify
// step for every channel.
func (w *Workflows) runThenNotify(ctx workflow.Context, executionID string, prep *engine.Prepared) ItemResult {
	var out engine.Outcome
	if err := workflow.ExecuteLocalActivity(ctx, w.steps.RunOperation, prep).Get(ctx, &out); err != nil {
		return w.recordFailure(ctx, executionID, err)
	}
	if prep.HasNotifications {
		_ = workflow.ExecuteLocalActivity(ctx, w.steps.Notify, prep, &out).Get(ctx, nil)
	}
	return ItemResult{ExecutionID: executionID, Status: models.StatusSucceeded}
}

// runThenDeliverPerChannel is the current version's steps: the effect
// step of a kind that has one, the apply step (told whether it is last),
// then one delivery step per channel.
func (w *Workflows) runThenDeliverPerChannel(ctx workflow.Context, executionID string, prep *engine.Prepared) ItemResult {
	last := len(prep.Deliveries) == 0
	if prep.Effect != nil {
		if err := w.effect(ctx, executionID, prep.Effect, last).Get(ctx, &prep.EffectResult); err != nil {
			return w.recordFailure(ctx, executionID, err)
		}
	}
	var out engine.Outcome
	if err := workflow.ExecuteLocalActivity(ctx, w.steps.Apply, prep, last).Get(ctx, &out); err != nil {
		return w.recordFailure(ctx, executionID, err)
	}
	// Best effort, one step per channel: each records its own outcome and
	// never fails the action, which has already committed.
	for i, d := range prep.Deliveries {
		_ = w.deliver(ctx, executionID, d, i == len(prep.Deliveries)-1).Get(ctx, nil)
	}
	return ItemResult{ExecutionID: executionID, Status: models.StatusSucceeded}
}

// recordFailure records a step's refusal or error on the execution and
// answers the failed item. Recording the failure retries like any step;
// if even that gives up, the execution row stays queued and the
// workflow's own failure is the record.
func (w *Workflows) recordFailure(ctx workflow.Context, executionID string, err error) ItemResult {
	f := activities.FailureOf(err)
	_ = workflow.ExecuteLocalActivity(ctx, w.steps.RecordFailure, executionID, f).Get(ctx, nil)
	return ItemResult{ExecutionID: executionID, Status: models.StatusFailed, ErrorCode: f.Code, ErrorMessage: f.Message}
}

// deliverTimeout bounds one attempt of a remote delivery step.
const deliverTimeout = 5 * time.Minute

// deliver runs a channel's step: a local activity for a channel that
// writes to the database (in-app), a regular activity with bounded retries
// for one that leaves the process — its own timeout and attempts, visible
// in the Temporal UI as an activity.
func (w *Workflows) deliver(ctx workflow.Context, executionID string, d engine.Delivery, last bool) workflow.Future {
	if !d.Remote {
		return workflow.ExecuteLocalActivity(ctx, w.steps.Deliver, executionID, d, last)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Room for hundreds of recipients one after another (an SMTP
		// exchange may take 10 s); an attempt stops short of it and keeps
		// its progress for the next one (delivery.DeliveryProgress).
		StartToCloseTimeout: deliverTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: activities.DeliverAttempts,
		},
	})
	return workflow.ExecuteActivity(ctx, w.steps.Deliver, executionID, d, last)
}

// effect runs the effect step: a local activity when the kind says its
// effect stays in the process, else a regular activity with its options.
// last tells it that no delivery step follows the run step.
func (w *Workflows) effect(ctx workflow.Context, executionID string, o *engine.EffectOptions, last bool) workflow.Future {
	if o.Local {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: max(o.StartToClose, time.Second),
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: max(o.MaxAttempts, 1)},
		})
		return workflow.ExecuteLocalActivity(lctx, w.steps.Effect, executionID, last)
	}
	return workflow.ExecuteActivity(effectOptions(ctx, o), w.steps.Effect, executionID, last)
}

// effectOptions are the activity options of an effect step, from its
// kind: a call that leaves the process gets a regular activity with a
// bounded retry policy (Temporal's default retries without end).
// Refusals (typed, non-retryable) are not retried.
func effectOptions(ctx workflow.Context, o *engine.EffectOptions) workflow.Context {
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: o.StartToClose,
		HeartbeatTimeout:    o.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: o.InitialInterval, BackoffCoefficient: 2, MaximumInterval: o.MaxInterval,
			MaximumAttempts: o.MaxAttempts,
		},
	}
	if opts.StartToCloseTimeout <= 0 {
		opts.StartToCloseTimeout = time.Minute
	}
	if opts.RetryPolicy.MaximumAttempts <= 0 {
		opts.RetryPolicy.MaximumAttempts = 5
	}
	return workflow.WithActivityOptions(ctx, opts)
}
