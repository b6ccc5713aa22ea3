// Package activities exposes the action engine's steps as Temporal
// activities. They are thin: each loads nothing itself and calls the
// engine, whose refusals (*apperr.Error) become non-retryable application
// errors typed with the same code, so a refusal keeps its code from the
// activity through the workflow to the HTTP response. Other errors are
// returned as they are and retried by the workflow's retry policy.
package activities

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications/delivery"
	"github.com/ontoflow/ontoflow/revert"
	"github.com/ontoflow/ontoflow/telemetry"
)

// Activities are the engine's steps, as methods on a struct holding their
// dependency; the workflows call them by method value (workflows.New) and
// a worker registers the struct, so the method names are the activity
// names recorded in histories: renaming one is a workflow change.
type Activities struct {
	eng *engine.Engine
	rev *revert.Reverter
}

// New returns the activities over eng; rev runs the revert step (nil in
// a process that runs no revert workflow, such as a test's).
func New(eng *engine.Engine, rev *revert.Reverter) *Activities {
	return &Activities{eng: eng, rev: rev}
}

// Validate materializes and type-checks the execution's parameters.
func (a *Activities) Validate(ctx context.Context, executionID string) (*engine.Prepared, error) {
	p, err := a.eng.Validate(a.run(ctx, executionID, "validate"), executionID)
	return p, typed(err)
}

// Authorize checks the actor and target against the action's policy.
func (a *Activities) Authorize(ctx context.Context, p *engine.Prepared) error {
	return typed(a.eng.Authorize(a.run(ctx, p.ExecutionID, "authorize"), p))
}

// RunOperation is the run step of workflows recorded before the workflow
// named the last step: without notifications the run was last.
func (a *Activities) RunOperation(ctx context.Context, p *engine.Prepared) (*engine.Outcome, error) {
	return a.Apply(ctx, p, !p.HasNotifications)
}

// Apply applies the operation's edits and records the execution as
// succeeded in one transaction, exactly once; last says no step follows.
// Its result, which Temporal keeps in the workflow's history, is the
// operation's small result only: the edits (a deleted object's whole
// properties, up to the API's body limit) are on the execution row, where
// the deliveries read them, and would otherwise push a chunk of a batch
// past Temporal's payload and history size limits.
func (a *Activities) Apply(ctx context.Context, p *engine.Prepared, last bool) (*engine.Outcome, error) {
	o, err := a.eng.Run(a.run(ctx, p.ExecutionID, "apply"), p, last)
	if err != nil {
		return nil, typed(err)
	}
	return &engine.Outcome{Result: o.Result}, nil
}

// Effect runs the effect step of a kind whose work leaves the process (a
// regular activity: its own timeout, retries and heartbeat, visible in the
// Temporal UI); the execution id is the idempotency key of every attempt.
// last says no delivery step follows the run step (the workflow decides).
func (a *Activities) Effect(ctx context.Context, executionID string, last bool) (json.RawMessage, error) {
	ctx = a.run(ctx, executionID, "effect")
	if activity.IsActivity(ctx) {
		ctx = engine.WithAttempt(ctx, activity.GetInfo(ctx).Attempt)
	}
	r, err := a.eng.Effect(ctx, executionID, last)
	return r, retryLater(err)
}

// retryLater turns an effect's request to be tried again after a delay
// (Retry-After, backoff with jitter) into a retryable failure carrying it;
// any other error is typed as every step's is. The request is checked
// first: it may wrap the refusal its last attempt would record.
func retryLater(err error) error {
	var rl *engine.RetryLater
	if !errors.As(err, &rl) {
		return typed(err)
	}
	return temporal.NewApplicationErrorWithOptions(rl.Error(), "RetryLater", temporal.ApplicationErrorOptions{NextRetryDelay: rl.Delay})
}

// Revert applies the inverse of an execution's edits for a revert
// execution, exactly once (revert.Reverter.Revert). Like Apply, its
// result in the history is the small result and the delivery steps that
// follow.
func (a *Activities) Revert(ctx context.Context, revertID string) (*revert.Reverted, error) {
	ctx = a.run(ctx, revertID, "revert")
	if err := a.eng.MarkRunning(ctx, revertID); err != nil {
		return nil, typed(err)
	}
	o, err := a.rev.Revert(ctx, revertID)
	if err != nil {
		return nil, typed(err)
	}
	return &revert.Reverted{Outcome: engine.Outcome{Result: o.Result}, Deliveries: o.Deliveries}, nil
}

// Notify is the single notify step of workflows recorded before one
// delivery step per channel.
func (a *Activities) Notify(ctx context.Context, p *engine.Prepared, o *engine.Outcome) error {
	return typed(a.eng.Notify(a.run(ctx, p.ExecutionID, "notify"), p, o))
}

// DeliverAttempts bounds the attempts of a remote delivery step; the last
// one records what still failed.
const DeliverAttempts = 5

// Deliver delivers one channel's notifications and records their outcomes;
// delivery failures are recorded, never returned, except a retryable one
// before the last attempt.
func (a *Activities) Deliver(ctx context.Context, executionID string, d engine.Delivery, last bool) error {
	ctx = a.run(ctx, executionID, "deliver")
	if d.Remote && activity.IsActivity(ctx) {
		if activity.GetInfo(ctx).Attempt >= DeliverAttempts {
			ctx = delivery.WithFinalAttempt(ctx)
		}
		ctx = engine.WithAttempt(delivery.WithDeliveryProgress(ctx, heartbeatProgress{ctx}), activity.GetInfo(ctx).Attempt)
	}
	err := a.eng.Deliver(ctx, executionID, d.Channel, last)
	var rd *delivery.RetryableDelivery
	if errors.As(err, &rd) && rd.Delay > 0 {
		return temporal.NewApplicationErrorWithOptions(rd.Error(), "RetryableDelivery", temporal.ApplicationErrorOptions{NextRetryDelay: rd.Delay})
	}
	return err
}

// heartbeatProgress keeps a delivery step's progress in its heartbeat
// details, which Temporal hands to the next attempt of the same step
// (samples-go retryactivity): what one attempt delivered is not sent
// again by the next.
type heartbeatProgress struct{ ctx context.Context }

func (h heartbeatProgress) Load() map[string]models.RecipientOutcome {
	done := map[string]models.RecipientOutcome{}
	if activity.HasHeartbeatDetails(h.ctx) {
		if err := activity.GetHeartbeatDetails(h.ctx, &done); err != nil {
			// Unreadable progress: deliver everything again rather than
			// lose a message.
			return map[string]models.RecipientOutcome{}
		}
	}
	return done
}

func (h heartbeatProgress) Save(done map[string]models.RecipientOutcome) {
	activity.RecordHeartbeat(h.ctx, done)
}

// RecordFailure marks the execution failed with f.
func (a *Activities) RecordFailure(ctx context.Context, executionID string, f engine.Failure) error {
	return typed(a.eng.RecordFailure(a.run(ctx, executionID, "record failure"), executionID, f))
}

// ListBatchChunk lists the unfinished item executions of a batch range.
func (a *Activities) ListBatchChunk(ctx context.Context, batchID string, from, to int) ([]string, error) {
	ids, err := a.eng.ListBatchChunk(a.run(ctx, batchID, "list batch chunk"), batchID, from, to)
	return ids, typed(err)
}

// FinishBatch counts a batch's outcomes and closes it.
func (a *Activities) FinishBatch(ctx context.Context, batchID string) (*engine.BatchTotals, error) {
	t, err := a.eng.FinishBatch(a.run(ctx, batchID, "finish batch"), batchID)
	return t, typed(err)
}

// run tells the engine which workflow run executes the step, and names
// the execution and workflow in ctx once so that every line the engine
// logs with it carries them (telemetry.LogHandler); at debug level it
// logs the step's start.
func (a *Activities) run(ctx context.Context, executionID, step string) context.Context {
	workflowID := ""
	if activity.IsActivity(ctx) {
		we := activity.GetInfo(ctx).WorkflowExecution
		ctx = engine.WithWorkflowRun(ctx, we.ID, we.RunID)
		workflowID = we.ID
	}
	ctx = telemetry.WithExecution(ctx, executionID, workflowID)
	if l := a.eng.Log(); l.Enabled(ctx, slog.LevelDebug) {
		l.DebugContext(ctx, "execution step", "step", step)
	}
	return ctx
}

// typed turns a refusal into a non-retryable application error carrying the
// code as its type and the error itself as details.
func typed(err error) error {
	if err == nil {
		return nil
	}
	var e *apperr.Error
	if errors.As(err, &e) && e.Code != apperr.Internal && e.Code != apperr.Unavailable {
		return temporal.NewNonRetryableApplicationError(e.Message, string(e.Code), nil, e)
	}
	return err
}

// FailureOf extracts the failure to record from a step's error: the typed
// refusal when there is one, otherwise a generic internal failure (retries
// exhausted). An application error's type is a refusal code only when it
// is one of apperr's codes and non-retryable: the SDK also types an
// untyped error that exhausted its retries, with the Go type's name
// ("wrapError"), and its message (a database address, say) is for the
// log, not for the client reading the action log.
func FailureOf(err error) engine.Failure {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) && ae.NonRetryable() && apperr.Code(ae.Type()).Known() &&
		ae.Type() != string(apperr.Internal) && ae.Type() != string(apperr.Unavailable) {
		f := engine.Failure{Code: ae.Type(), Message: ae.Message()}
		var e apperr.Error
		if ae.HasDetails() && ae.Details(&e) == nil {
			f.Details = e.Details
			f.Data = e.Data
		}
		return f
	}
	// Workflow code calls this (no logging here: it would repeat on every
	// replay); the step's own failure, with its message, stays in the
	// workflow's history for the operator.
	return engine.Failure{Code: string(apperr.Internal), Message: "the execution failed on an internal error; its workflow's history in Temporal has the details"}
}
