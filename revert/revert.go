// Package revert undoes a succeeded execution: the inverse of each edit
// an operation recorded (Invert), the checks of who may revert what
// (Check), and the revert step (Reverter.Revert), which the revert
// workflow's activity runs. It stands on the engine core: it reads and
// writes the ontology through its port, looks kinds up in the engine's
// registry, and records both executions through execstore in one
// transaction. A revert is the compensation of an execution, applied as
// temporalio/samples-go's saga applies compensations: last edit first.
package revert

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/models"
)

// Ontology is what a revert needs of the ontology store: the engine's port
// and the writes only an undo makes, bound to the revert's transaction by
// RestoresIn as the engine's are by In, so the undo commits with the
// revert's execution record (ontology.Store implements them).
type Ontology interface {
	engine.Ontology
	// RestoresIn binds tx for the restores.
	RestoresIn(tx *gorm.DB) RestoresTx
}

// RestoresTx are the restores inside one transaction. An alias of an
// interface literal, as engine.OntologyTx is and for its reason:
// ontology.RestoreOps is then the identical type.
type RestoresTx = interface {
	// RestoreObject and RestoreLink recreate a deleted object or link
	// exactly (same id).
	RestoreObject(ctx context.Context, o domain.Object) error
	RestoreLink(ctx context.Context, l domain.Link) error
	// SetUpdatedAt sets the object's update time to at: a revert that put
	// back every property an edit changed restores the time the object
	// had before that edit, since it is again exactly as it was then.
	SetUpdatedAt(ctx context.Context, id string, at time.Time) error
}

// Reverter runs the revert step over the engine core.
type Reverter struct {
	db    *gorm.DB
	execs *execstore.Store
	onto  Ontology
	eng   *engine.Engine
	now   func() time.Time
}

// New returns a Reverter over eng, writing through onto (the engine's
// ontology, with the restores) in db.
func New(db *gorm.DB, onto Ontology, eng *engine.Engine) *Reverter {
	return &Reverter{db: db, execs: execstore.New(db), onto: onto, eng: eng, now: func() time.Time { return time.Now().UTC() }}
}

// Reverted is the revert step's answer: what it did, and the delivery
// steps of the action's revert notifications, which run after it.
type Reverted struct {
	engine.Outcome
	Deliveries []engine.Delivery `json:"deliveries,omitempty"`
}

// Revert is the step of a revert execution: in one transaction it checks
// the execution it reverts again, applies the inverse of each recorded
// edit, last edit first, refusing (409, naming the object and what
// changed) when anything it touched changed since, and records both
// executions — the revert succeeded with its edits, the original
// reverted_by — so it happens exactly once however often the step runs.
func (r *Reverter) Revert(ctx context.Context, revertID string) (*Reverted, error) {
	defer r.eng.Observe("revert", time.Now())
	out := &Reverted{}
	var done *models.Execution // the revert as this call recorded it
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		rv, err := r.execs.Lock(ctx, tx, revertID)
		if err != nil {
			return err
		}
		at, err := r.onto.ActionType(ctx, rv.ActionTypeID)
		if err != nil {
			return err
		}
		out.Deliveries = r.eng.DeliveriesOf(at.Config.SideEffects(true))
		if done, err := revertRecorded(rv); done || err != nil {
			out.Outcome = engine.Outcome{Edits: rv.Edits.V, Result: rv.Result.V}
			return err
		}
		o, err := r.revertIn(ctx, tx, rv)
		if o != nil {
			out.Outcome = *o
		}
		if err == nil {
			done = rv
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if done != nil {
		r.eng.Finished(done, models.StatusSucceeded)
	}
	if len(out.Deliveries) == 0 {
		r.eng.Settle(revertID) // else the last delivery settles; a failure is settled by RecordFailure
	}
	return out, nil
}

// revertRecorded answers a revert that already finished from its record.
func revertRecorded(rv *models.Execution) (bool, error) {
	switch rv.Status {
	case models.StatusSucceeded:
		return true, nil
	case models.StatusFailed:
		return true, apperr.New(apperr.Code(rv.ErrorCode), "%s", rv.ErrorMessage)
	}
	if rv.RevertOf == nil {
		return true, apperr.New(apperr.Internal, "execution %s is no revert", rv.ID)
	}
	return false, nil
}

// revertIn does the revert inside tx, rv locked.
func (r *Reverter) revertIn(ctx context.Context, tx *gorm.DB, rv *models.Execution) (*engine.Outcome, error) {
	orig, err := r.execs.Lock(ctx, tx, *rv.RevertOf)
	if err != nil {
		return nil, err
	}
	actor, at, err := r.revertParties(ctx, tx, rv, orig)
	if err != nil {
		return nil, err
	}
	if err := Check(actor, orig, at); err != nil {
		return nil, err
	}
	// A revert writes through the action as much as a run does: the
	// reverting user must pass its policy now (guest sessions, permission,
	// roles, attributes, clearance).
	if err := r.eng.MayRun(at, actor, rv.ActorGuest); err != nil {
		return nil, err
	}
	kind, ok := r.eng.Kind(at.OperationKind)
	if !ok {
		return nil, engine.NotSupported(at.OperationKind)
	}
	var edits []models.Edit
	for i := len(orig.Edits.V) - 1; i >= 0; i-- {
		inv, err := kind.Invert(orig.Edits.V[i])
		if err != nil {
			return nil, apperr.New(apperr.Conflict, "execution %s cannot be reverted: %v", orig.ID, err).
				WithDetails(apperr.Detail{Field: orig.Edits.V[i].ObjectID, Reason: "not_invertible", Message: err.Error()})
		}
		for _, ed := range inv {
			done, err := r.applyInverse(ctx, tx, actor, ed)
			if err != nil {
				return nil, err
			}
			if done, err = r.restoreStamp(ctx, tx, orig.Edits.V[i], done); err != nil {
				return nil, err
			}
			edits = append(edits, done)
		}
	}
	out := &engine.Outcome{Edits: edits, Result: map[string]any{"reverted": orig.ID, "not_undone": externalEffects(orig)}}
	return out, r.recordRevert(ctx, tx, rv, orig, out)
}

// revertParties loads the revert's actor and the action type.
func (r *Reverter) revertParties(ctx context.Context, tx *gorm.DB, rv, orig *models.Execution) (*models.User, *engine.ActionType, error) {
	var actor models.User
	if err := tx.WithContext(ctx).Take(&actor, "id = ?", rv.ActorID).Error; err != nil {
		return nil, nil, fmt.Errorf("load the actor of revert %s: %w", rv.ID, err)
	}
	at, err := r.onto.ActionType(ctx, orig.ActionTypeID)
	if err != nil {
		return nil, nil, err
	}
	return &actor, at, nil
}

// recordRevert marks rv succeeded with its edits and orig reverted by it.
func (r *Reverter) recordRevert(ctx context.Context, tx *gorm.DB, rv, orig *models.Execution, out *engine.Outcome) error {
	if err := r.execs.Succeed(ctx, tx, rv, execstore.Success{At: r.now(), Edits: out.Edits, Result: out.Result}); err != nil {
		return fmt.Errorf("record revert: %w", err)
	}
	return r.execs.MarkReverted(ctx, tx, orig.ID, rv.ID)
}

// externalEffects lists what a revert does not undo: the webhook called
// and the notifications sent.
func externalEffects(orig *models.Execution) []string {
	var out []string
	if _, ok := orig.Result.V["webhook"]; ok {
		out = append(out, "a webhook was called")
	}
	for _, n := range orig.Notifications.V {
		if n.Status == engine.Delivered {
			out = append(out, fmt.Sprintf("%s notification sent to %d recipient(s)", n.Channel, n.Recipients))
		}
	}
	return out
}
