package engine

import (
	"context"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications/delivery"
)

// Branches is what the core's steps need of what-if (package whatif
// implements it; app wires it in Deps.Branches). The steps call it for
// executions of kind what-if only: validate sees the target and the
// references through the branch's edits, and run hands the operation to
// it instead of committing. Without it (noBranches) a what-if execution
// is refused.
type Branches interface {
	// Request marks the request of what-if execution ex as a branch's and
	// loads the branch's edits into r (Branch, BranchSteps).
	Request(ctx context.Context, ex *models.Execution, r *Request) error
	// Overlay is object id (o as the main ontology has it, nil when
	// absent) as edits leave it.
	Overlay(o *Object, id string, edits []models.Edit) *Object
	// Resolver resolves references for actor as edits show the objects.
	Resolver(ctx context.Context, actor *models.User, edits []models.Edit) func(objectTypeID, id string) (bool, error)
	// Run is the run step of a what-if execution: it runs the operation
	// over the branch without committing its edits, and records the
	// execution succeeded (run.Lock, run.Succeed) in its own transaction.
	// done is the row it recorded (nil when it only answered the record).
	Run(ctx context.Context, run *BranchRun) (out *Outcome, done *models.Execution, err error)
}

// BranchRun is a what-if's run step as the core hands it to Branches.Run:
// the execution (unfinished when the step began), its request, target and
// materialized parameters, and the kind with its Op (ExecutionID set; the
// simulation sets Target, Tx and Effect).
type BranchRun struct {
	Execution *models.Execution
	Request
	Target *Object
	Params map[string]any
	Kind   Kind
	Op     *Op

	e  *Engine
	in *input
}

// Lock locks the execution's row in tx; a finished one is answered from
// its record (recorded non-nil, or its refusal), as Run answers it.
func (r *BranchRun) Lock(ctx context.Context, tx *gorm.DB) (ex *models.Execution, recorded *Outcome, err error) {
	ex, err = r.e.execs.Lock(ctx, tx, r.Execution.ID)
	if err != nil {
		return nil, nil, err
	}
	if finished(ex) {
		return ex, &Outcome{Edits: ex.Edits.V, Result: ex.Result.V}, replayOutcome(ex)
	}
	return ex, nil, nil
}

// Succeed records ex succeeded with out inside tx: the success write of
// every execution's run step (the action's version, the parameters, the
// workflow run).
func (r *BranchRun) Succeed(ctx context.Context, tx *gorm.DB, ex *models.Execution, out *Outcome) error {
	_, err := r.e.recordSucceeded(ctx, tx, ex, r.in, out)
	return err
}

// Messages renders channel's notifications of the run as a delivery
// would — per recipient, with that recipient's read rule — over before
// and after (the branch's), without delivering any.
func (r *BranchRun) Messages(ctx context.Context, channel string, before, after *Object) ([]delivery.Message, []models.NotificationOutcome) {
	x := *r.Execution
	x.Parameters = models.NewNumJSON(r.Params)
	return r.e.messagesFor(ctx, &x, r.Action, r.Actor, channel, before, after)
}

// runWhatIf is the run step of a what-if execution (ex0 unfinished).
func (e *Engine) runWhatIf(ctx context.Context, ex0 *models.Execution, in0 *input) (*Outcome, error) {
	defer e.memo.drop(ex0.ID)
	in := *in0
	if err := e.ensureParams(ctx, &in); err != nil {
		return nil, err
	}
	kind, op, err := e.op(in.Action, in.Actor, in.Target, in.Params)
	if err != nil {
		return nil, err
	}
	op.ExecutionID = ex0.ID
	out, done, err := e.branches.Run(ctx, &BranchRun{Execution: ex0, Request: in.Request, Target: in.Target, Params: in.Params,
		Kind: kind, Op: op, e: e, in: &in})
	if err != nil {
		return nil, err
	}
	if done != nil {
		e.finished(done, models.StatusSucceeded)
	}
	e.settle(ex0.ID)
	return out, nil
}

// noBranches is Branches in a process that did not assemble what-if.
type noBranches struct{}

func (noBranches) Request(_ context.Context, ex *models.Execution, _ *Request) error {
	return errNoWhatIf(ex.ID)
}

func (noBranches) Overlay(o *Object, _ string, _ []models.Edit) *Object { return o }

func (noBranches) Resolver(context.Context, *models.User, []models.Edit) func(string, string) (bool, error) {
	return func(string, string) (bool, error) { return false, nil }
}

func (noBranches) Run(_ context.Context, run *BranchRun) (*Outcome, *models.Execution, error) {
	return nil, nil, errNoWhatIf(run.Execution.ID)
}

func errNoWhatIf(id string) error {
	return apperr.New(apperr.OperationNotSupported, "what-if execution %s: this process runs no what-if", id)
}
