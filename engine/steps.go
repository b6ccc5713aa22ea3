package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/models"
)

// Prepared is what Validate hands to the later steps: the execution's
// identity and its materialized parameters. It travels through workflow
// history, so it holds ids and values, not loaded records.
type Prepared struct {
	ExecutionID  string `json:"execution_id"`
	ActionTypeID string `json:"action_type_id"`
	ActorID      string `json:"actor_id"`
	TargetID     string `json:"target_object_id,omitempty"`
	// Parameters is no longer filled: a parameter may be as large as the
	// API's body limit, past Temporal's payload limit, and a step whose
	// result cannot be recorded retries forever. The later steps take the
	// materialized parameters from the memo or validate again; the row
	// records them. The member stays so histories recorded before the
	// change still decode.
	Parameters       Params `json:"parameters,omitempty"`
	HasNotifications bool   `json:"has_notifications"`
	// Deliveries are the delivery steps after a success, one per channel,
	// in order (decided here, so the workflow replays them as recorded).
	Deliveries []Delivery `json:"deliveries,omitempty"`
	// Effect, for a kind whose work leaves the process (EffectKind), are
	// the options of its effect step, which the workflow runs as a regular
	// activity between authorize and run; EffectResult is that step's
	// result, which the workflow hands to the run step.
	Effect       *EffectOptions  `json:"effect,omitempty"`
	EffectResult json.RawMessage `json:"effect_result,omitempty"`
}

// Delivery is one delivery step: a channel, and whether its delivery
// leaves the process (a regular activity with retries, not a local one).
type Delivery struct {
	Channel string `json:"channel"`
	Remote  bool   `json:"remote,omitempty"`
}

// deliveries lists the delivery steps of at.
func (e *Engine) deliveries(at *ActionType) []Delivery {
	return e.deliveriesOf(at.Config.NotificationSideEffects)
}

// deliveriesOf lists the delivery steps of side effects.
func (e *Engine) deliveriesOf(effects []domain.NotificationSideEffect) []Delivery {
	var out []Delivery
	for _, ch := range channelsOf(effects) {
		_, remote := e.channels[ch].(RemoteChannel)
		out = append(out, Delivery{Channel: ch, Remote: remote})
	}
	return out
}

// Params are an execution's parameters as they cross Temporal between the
// steps. Temporal's JSON converter would decode every number as a
// float64, so integers beyond 2^53 would reach the operation rounded; they
// decode as json.Number, as the API decodes the request.
type Params map[string]any

// UnmarshalJSON decodes numbers as json.Number.
func (p *Params) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return err
	}
	*p = m
	return nil
}

// Outcome is what the operation did.
type Outcome struct {
	Edits  []models.Edit  `json:"edits"`
	Result map[string]any `json:"result,omitempty"`
}

// Failure is a refusal or error recorded on an execution.
type Failure struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details []apperr.Detail `json:"details,omitempty"`
	Data    any             `json:"data,omitempty"`
}

// execution loads an execution row.
func (e *Engine) execution(ctx context.Context, db *gorm.DB, id string) (*models.Execution, error) {
	var ex models.Execution
	err := db.WithContext(ctx).Take(&ex, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(apperr.ExecutionNotFound, "execution %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("load execution %s: %w", id, err)
	}
	return &ex, nil
}

// request rebuilds the engine request of an execution row.
func (e *Engine) request(ctx context.Context, ex *models.Execution) (*input, error) {
	at, err := e.onto.ActionType(ctx, ex.ActionTypeID)
	if err != nil {
		return nil, err
	}
	actor, err := e.actor(ctx, ex.ActorID)
	if err != nil {
		return nil, err
	}
	r := Request{Action: at, Actor: actor, Guest: ex.ActorGuest, TargetID: ex.TargetObjectID,
		Parameters: ex.Parameters.V, Justification: ex.Justification}
	if ex.Kind == models.KindWhatIf {
		if err := e.branches.Request(ctx, ex, &r); err != nil {
			return nil, err
		}
	}
	return e.load(ctx, r)
}

// finished reports whether an execution row already records its outcome.
func finished(ex *models.Execution) bool {
	return ex.Status == models.StatusSucceeded || ex.Status == models.StatusFailed
}

// replayOutcome is what a step replayed on a finished execution answers: nothing
// for a success, and the recorded refusal for a failure.
func replayOutcome(ex *models.Execution) error {
	if ex.Status == models.StatusFailed {
		return apperr.New(apperr.Code(ex.ErrorCode), "%s", ex.ErrorMessage)
	}
	return nil
}

// step returns the execution and its loaded request for a step, from the
// memo when the validate step of this process left them there. in is nil
// when the row is already finished: a workflow task replayed after a crash
// that followed Run's commit runs every step again, and the steps then
// answer from the record instead of validating and authorizing the request
// against the objects as the committed edits left them (a deleted target,
// a parameter the edit made invalid).
func (e *Engine) step(ctx context.Context, id string) (*models.Execution, *input, error) {
	if ex, in, ok := e.memo.get(id); ok {
		return ex, in, nil
	}
	ex, err := e.execution(ctx, e.db, id)
	if err != nil {
		return nil, nil, err
	}
	return e.stepOf(ctx, ex)
}

// stepOf is step for the row ex, already read.
func (e *Engine) stepOf(ctx context.Context, ex *models.Execution) (*models.Execution, *input, error) {
	if finished(ex) {
		return ex, nil, nil
	}
	in, err := e.request(ctx, ex)
	if err != nil {
		return nil, nil, err
	}
	return ex, in, nil
}

// Validate is the validate step (the Validate activity): it loads the execution, its action type and
// target, and materializes the parameters. Invalid parameters are
// ActionValidationFailed with the per-parameter result as data.
func (e *Engine) Validate(ctx context.Context, executionID string) (*Prepared, error) {
	defer e.observe("validate", time.Now())
	e.memo.drop(executionID) // validation always reads afresh
	ex, err := e.execution(ctx, e.db, executionID)
	if err != nil {
		return nil, err
	}
	if err := e.execs.Start(ctx, ex, e.now(), storeRun(ctx)); err != nil {
		return nil, err
	}
	ex, in, err := e.stepOf(ctx, ex)
	if err != nil {
		return nil, err
	}
	if in == nil {
		return e.prepared(ctx, ex)
	}
	params, v := e.materialize(ctx, in)
	if err := v.refusal(); err != nil {
		return nil, err
	}
	in.Params = params
	if hasPins(in.Action, params) {
		// Later steps, on any worker, check the file against these.
		if err := e.execs.RecordParameters(ctx, ex.ID, params); err != nil {
			return nil, err
		}
		ex.Parameters = models.NewNumJSON(params)
	}
	e.memo.put(ex, in)
	p := &Prepared{ExecutionID: ex.ID, ActionTypeID: in.Action.ID, ActorID: ex.ActorID, TargetID: ex.TargetObjectID,
		HasNotifications: len(in.Action.Config.NotificationSideEffects) > 0, Deliveries: e.deliveries(in.Action)}
	if ex.Kind == models.KindWhatIf {
		// The run step previews notifications and the effect: the
		// workflow delivers nothing and calls nothing.
		p.HasNotifications, p.Deliveries = false, nil
		return p, nil
	}
	if err := e.effectOptions(in, p); err != nil {
		return nil, err
	}
	return p, nil
}

// effectOptions records on p the effect step's options when in's kind
// has one.
func (e *Engine) effectOptions(in *input, p *Prepared) error {
	k, ok := e.kinds.Get(in.Action.OperationKind)
	if !ok {
		return nil
	}
	ek, ok := k.(EffectKind)
	if !ok {
		return nil
	}
	_, op, err := e.op(in.Action, in.Actor, in.Target, in.Params)
	if err != nil {
		return err
	}
	o := ek.EffectOptions(op)
	p.Effect = &o
	return nil
}

// Effect is the effect step of a kind whose work leaves the process: it
// runs the kind's Effect outside any transaction, with the execution id as
// the key every attempt carries, and returns its result for the run step
// to record. A finished execution answers from its record without calling
// out again. last (the workflow's word) says no delivery step follows the
// run step: a call that left the process then commits at once (applyEarly).
func (e *Engine) Effect(ctx context.Context, executionID string, last bool) (json.RawMessage, error) {
	defer e.observe("effect", time.Now())
	ex, in, err := e.step(ctx, executionID)
	if err != nil {
		return nil, err
	}
	if in == nil {
		return nil, replayOutcome(ex)
	}
	if ex.Kind == models.KindWhatIf {
		return nil, nil // previewed by the run step, never performed
	}
	if err := e.ensureParams(ctx, in); err != nil {
		return nil, err
	}
	if err := e.checkPins(ctx, in); err != nil {
		return nil, err
	}
	k, op, err := e.op(in.Action, in.Actor, in.Target, in.Params)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(EffectKind)
	if !ok {
		return nil, nil
	}
	op.ExecutionID = ex.ID
	res, err := ek.Effect(withMetrics(ctx, e.metrics), op, ex.ID)
	if err == nil && last && !ek.EffectOptions(op).Local {
		e.applyEarly(ctx, ex.ID, res)
	}
	return res, err
}

// applyEarly commits an execution in its effect step, as soon as a call
// that left the process has returned, when nothing follows the run step:
// a synchronous execute then answers once the edits and the record have
// committed, without waiting for the activity's completion to reach the
// server and for the workflow's next task. It is only a head start: the
// run step still runs and answers the record (Run is exactly once under
// the execution row's lock). When this attempt fails, for any reason, the
// run step applies as it always has and records a refusal, so a failure
// here never makes the effect step call again.
func (e *Engine) applyEarly(ctx context.Context, id string, effect json.RawMessage) {
	if _, err := e.Run(ctx, &Prepared{ExecutionID: id, EffectResult: effect}, true); err != nil {
		e.log.DebugContext(ctx, "commit in the effect step failed; the run step applies", "execution", id, "err", err)
	}
}

// prepared is Validate's answer for a finished execution: the parameters it
// ran with, and notifications still owed if it succeeded before notifying.
func (e *Engine) prepared(ctx context.Context, ex *models.Execution) (*Prepared, error) {
	if err := replayOutcome(ex); err != nil {
		return nil, err
	}
	p := &Prepared{ExecutionID: ex.ID, ActionTypeID: ex.ActionTypeID, ActorID: ex.ActorID, TargetID: ex.TargetObjectID}
	if ex.NotifiedAt == nil && ex.Kind != models.KindWhatIf {
		at, err := e.onto.ActionType(ctx, ex.ActionTypeID)
		if err != nil && !apperr.Is(err, apperr.ActionTypeNotFound) {
			return nil, err
		}
		p.HasNotifications = at != nil && len(at.Config.NotificationSideEffects) > 0
		if at != nil {
			p.Deliveries = e.deliveries(at)
		}
	}
	return p, nil
}

// Authorize is the authorize step: the policy's actor and target checks
// and the justification rule.
func (e *Engine) Authorize(ctx context.Context, p *Prepared) error {
	defer e.observe("authorize", time.Now())
	ex, in, err := e.step(ctx, p.ExecutionID)
	if err != nil {
		return err
	}
	if in == nil {
		return replayOutcome(ex)
	}
	return e.authorize(in, true)
}

// Run is the run-operation step. The operation's edits and the execution's
// move to succeeded commit in one transaction that first locks the row:
// an activity retried after a crash finds the row succeeded and returns the
// recorded outcome instead of applying the edits again.
func (e *Engine) Run(ctx context.Context, p *Prepared, last bool) (_ *Outcome, err error) {
	defer e.observe("run", time.Now())
	// Everything read outside the transaction is read first: inside it,
	// only tx is used, so the holder of SQLite's single write lock never
	// waits for a second pool connection that blocked writers hold.
	ex0, in0, err := e.step(ctx, p.ExecutionID)
	if err != nil {
		return nil, err
	}
	if in0 == nil {
		// Replayed after the commit: the recorded outcome (succeeded rows
		// never change again).
		e.memo.drop(p.ExecutionID)
		if err := replayOutcome(ex0); err != nil {
			return nil, err
		}
		return &Outcome{Edits: ex0.Edits.V, Result: ex0.Result.V}, nil
	}
	if ex0.Kind == models.KindWhatIf {
		return e.runWhatIf(ctx, ex0, in0)
	}
	if last {
		defer e.memo.drop(p.ExecutionID)
	}
	defer func() {
		// The workflow says whether a step follows; a refusal is recorded
		// (and settled) by RecordFailure.
		if err == nil && last {
			e.settle(p.ExecutionID)
		}
	}()
	// The operation works on a copy: the memo's entry stays as validated
	// for Notify.
	in := *in0
	if err := e.ensureParams(ctx, &in); err != nil {
		return nil, err
	}
	if err := e.checkPins(ctx, &in); err != nil {
		return nil, err
	}
	// The kind and its decoded config, before the transaction: nothing
	// that can wait runs while the row is locked.
	kind, op, err := e.op(in.Action, in.Actor, nil, in.Params)
	if err != nil {
		return nil, err
	}
	var out *Outcome
	var done *models.Execution
	err = e.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		out, done, err = e.applyIn(ctx, tx, p, &in, kind, op)
		return err
	})
	if err != nil {
		return nil, err
	}
	if done != nil {
		e.finished(done, models.StatusSucceeded)
		if !last {
			// The deliveries' templates see the row as the run left it.
			e.memo.put(done, in0)
		}
	}
	return out, nil
}

// applyIn is Run's transaction: it locks the execution's row, answers a
// finished one from its record, else applies the operation and records
// the execution succeeded. done is the row it recorded (nil when it only
// answered the record).
func (e *Engine) applyIn(ctx context.Context, tx *gorm.DB, p *Prepared, in *input, kind Kind, op *Op) (out *Outcome, done *models.Execution, err error) {
	ex, err := e.execs.Lock(ctx, tx, p.ExecutionID)
	if err != nil {
		return nil, nil, err
	}
	switch ex.Status {
	case models.StatusSucceeded:
		return &Outcome{Edits: ex.Edits.V, Result: ex.Result.V}, nil, nil
	case models.StatusFailed:
		return nil, nil, apperr.New(apperr.Code(ex.ErrorCode), "%s", ex.ErrorMessage)
	}
	// The target is re-read inside the transaction so the edit's "before"
	// is what the edit replaced. On Postgres the read locks the row: two
	// executions on one object would otherwise both merge their patch into
	// the same old properties, and the later commit would drop the earlier
	// one's change (SQLite runs one write transaction at a time).
	if in.Target != nil {
		if in.Target, err = e.onto.In(models.InTx(LockForUpdate(tx))).Object(ctx, in.Target.ID); err != nil {
			return nil, nil, fmt.Errorf("reload target: %w", err)
		}
		if in.Target == nil {
			return nil, nil, apperr.New(apperr.ObjectNotFound, "object %q not found", ex.TargetObjectID)
		}
	}
	op.Target, op.ExecutionID, op.Tx, op.Effect = in.Target, ex.ID, models.InTx(tx), p.EffectResult
	if out, err = kind.Apply(ctx, op); err != nil {
		return nil, nil, err
	}
	if done, err = e.recordSucceeded(ctx, tx, ex, in, out); err != nil {
		return nil, nil, err
	}
	if e.events != nil {
		if err := e.events.Record(ctx, tx, ex, out.Edits); err != nil {
			return nil, nil, fmt.Errorf("record the execution's events: %w", err)
		}
	}
	return out, done, nil
}

// LockForUpdate makes tx's next read lock the rows it reads until the
// transaction ends (Postgres; SQLite has one writer at a time). Exported
// for what-if's lock of a branch row: one way to lock a row.
func LockForUpdate(tx *gorm.DB) *gorm.DB {
	if models.IsPostgres(tx) {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
}

// recordSucceeded moves ex to succeeded with out, inside tx.
func (e *Engine) recordSucceeded(ctx context.Context, tx *gorm.DB, ex *models.Execution, in *input, out *Outcome) (*models.Execution, error) {
	err := e.execs.Succeed(ctx, tx, ex, execstore.Success{At: e.now(), Edits: out.Edits, Result: out.Result,
		Ran: &execstore.Ran{ActionVersion: in.Action.Version, Parameters: in.Params}, RunID: runIDFor(ctx, ex)})
	if err != nil {
		return nil, err
	}
	return ex, nil
}

// RecordFailure marks an execution failed unless it already finished.
func (e *Engine) RecordFailure(ctx context.Context, executionID string, f Failure) error {
	e.memo.drop(executionID)
	failed, err := e.execs.Fail(ctx, executionID, e.storeFailure(f), storeRun(ctx))
	if err != nil {
		return err
	}
	if failed {
		if ex, err := e.execution(ctx, e.db, executionID); err == nil {
			e.finished(ex, models.StatusFailed)
		}
	}
	e.settle(executionID)
	return nil
}

// ensureParams materializes in's parameters when this process did not
// validate them (a retry elsewhere, or the memo expired): validated again,
// against the objects as they are now; a refusal is the step's error.
func (e *Engine) ensureParams(ctx context.Context, in *input) error {
	if in.Params != nil {
		return nil
	}
	in.keepPins = true
	params, v := e.materialize(ctx, in)
	if err := v.refusal(); err != nil {
		return err
	}
	in.Params = params
	return nil
}
