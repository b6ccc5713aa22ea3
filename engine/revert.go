package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/models"
)

// PermRevert lets a user revert executions other users ran.
const PermRevert = "executions:revert"

// CheckRevert refuses reverting orig by actor: only a succeeded single
// execution (or batch item) that was not reverted, of an action that
// allows it, by the actor who ran it or one with PermRevert. Run up front
// by the service (a clear answer before anything is recorded) and again by
// the revert step inside its transaction (the state may have moved).
func CheckRevert(actor *models.User, orig *models.Execution, at *ActionType) error {
	switch {
	case orig.ActorID != actor.ID && !auth.HasPermission(actor, PermRevert):
		return apperr.New(apperr.PermissionDenied, "only the actor who ran execution %s, or a user with %s, may revert it", orig.ID, PermRevert)
	case !slices.Contains([]string{models.KindExecute, models.KindInlineEdit, models.KindBatchItem}, orig.Kind):
		return apperr.New(apperr.Conflict, "an execution of kind %s cannot be reverted", orig.Kind)
	case orig.Status != models.StatusSucceeded:
		return apperr.New(apperr.Conflict, "execution %s did not succeed (%s): there is nothing to revert", orig.ID, orig.Status)
	case orig.RevertedBy != nil:
		return apperr.New(apperr.Conflict, "execution %s was already reverted by %s", orig.ID, *orig.RevertedBy)
	case at != nil && !at.Config.Revertible():
		return apperr.New(apperr.Conflict, "action %s does not allow revert (allow_revert: false)", at.Name)
	}
	return checkInvertible(orig)
}

// checkInvertible refuses an execution with an edit whose undo could not
// be told from overwriting a later edit: an update or a create recorded
// without the update time it left (edits recorded before that field
// existed, by an older version). Without it the later-edit check has
// nothing to compare, and the object's properties alone cannot tell that
// they were edited and edited back, or that links were added since.
func checkInvertible(orig *models.Execution) error {
	for _, ed := range orig.Edits.V {
		if (ed.Op == models.EditUpdateObject || ed.Op == models.EditCreateObject) && ed.UpdatedAtAfter == nil {
			return notInvertible(orig.ID, ed.ObjectID, "its "+ed.Op+" edit was recorded without the update time it left (by a version before revert checked for later edits)")
		}
	}
	return nil
}

// notInvertible is the refusal of an execution that cannot be reverted
// safely, naming the object whose edit is the cause.
func notInvertible(executionID, objectID, why string) error {
	return apperr.New(apperr.Conflict, "execution %s cannot be reverted: %s; a later edit of object %s could not be told apart and would be overwritten", executionID, why, objectID).
		WithDetails(apperr.Detail{Field: objectID, Reason: "not_invertible", Message: why})
}

// Reverted is the revert step's answer: what it did, and the delivery
// steps of the action's revert notifications, which run after it.
type Reverted struct {
	Outcome
	Deliveries []Delivery `json:"deliveries,omitempty"`
}

// Revert is the step of a revert execution: in one transaction it checks
// the execution it reverts again, applies the inverse of each recorded
// edit, last edit first, refusing (409, naming the object and what
// changed) when anything it touched changed since, and records both
// executions — the revert succeeded with its edits, the original
// reverted_by — so it happens exactly once however often the step runs.
func (e *Engine) Revert(ctx context.Context, revertID string) (*Reverted, error) {
	defer e.observe("revert", time.Now())
	out := &Reverted{}
	var done *models.Execution // the revert as this call recorded it
	err := e.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		rv, err := e.execs.Lock(ctx, tx, revertID)
		if err != nil {
			return err
		}
		at, err := e.onto.ActionType(ctx, rv.ActionTypeID)
		if err != nil {
			return err
		}
		out.Deliveries = e.deliveriesOf(at.Config.SideEffects(true))
		if done, err := revertRecorded(rv); done || err != nil {
			out.Outcome = Outcome{Edits: rv.Edits.V, Result: rv.Result.V}
			return err
		}
		o, err := e.revertIn(ctx, tx, rv)
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
		e.finished(done, models.StatusSucceeded)
	}
	if len(out.Deliveries) == 0 {
		e.settle(revertID) // else the last delivery settles; a failure is settled by RecordFailure
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
func (e *Engine) revertIn(ctx context.Context, tx *gorm.DB, rv *models.Execution) (*Outcome, error) {
	orig, err := e.execs.Lock(ctx, tx, *rv.RevertOf)
	if err != nil {
		return nil, err
	}
	actor, at, err := e.revertParties(ctx, tx, rv, orig)
	if err != nil {
		return nil, err
	}
	if err := CheckRevert(actor, orig, at); err != nil {
		return nil, err
	}
	// A revert writes through the action as much as a run does: the
	// reverting user must pass its policy now (guest sessions, permission,
	// roles, attributes, clearance).
	if err := e.MayRun(at, actor, rv.ActorGuest); err != nil {
		return nil, err
	}
	kind, ok := e.kinds.Get(at.OperationKind)
	if !ok {
		return nil, NotSupported(at.OperationKind)
	}
	var edits []models.Edit
	for i := len(orig.Edits.V) - 1; i >= 0; i-- {
		inv, err := kind.Invert(orig.Edits.V[i])
		if err != nil {
			return nil, apperr.New(apperr.Conflict, "execution %s cannot be reverted: %v", orig.ID, err).
				WithDetails(apperr.Detail{Field: orig.Edits.V[i].ObjectID, Reason: "not_invertible", Message: err.Error()})
		}
		for _, ed := range inv {
			done, err := e.applyInverse(ctx, tx, actor, ed)
			if err != nil {
				return nil, err
			}
			if done, err = e.restoreStamp(ctx, tx, orig.Edits.V[i], done); err != nil {
				return nil, err
			}
			edits = append(edits, done)
		}
	}
	out := &Outcome{Edits: edits, Result: map[string]any{"reverted": orig.ID, "not_undone": externalEffects(orig)}}
	return out, e.recordRevert(ctx, tx, rv, orig, out)
}

// revertParties loads the revert's actor and the action type.
func (e *Engine) revertParties(ctx context.Context, tx *gorm.DB, rv, orig *models.Execution) (*models.User, *ActionType, error) {
	var actor models.User
	if err := tx.WithContext(ctx).Take(&actor, "id = ?", rv.ActorID).Error; err != nil {
		return nil, nil, fmt.Errorf("load the actor of revert %s: %w", rv.ID, err)
	}
	at, err := e.onto.ActionType(ctx, orig.ActionTypeID)
	if err != nil {
		return nil, nil, err
	}
	return &actor, at, nil
}

// recordRevert marks rv succeeded with its edits and orig reverted by it.
func (e *Engine) recordRevert(ctx context.Context, tx *gorm.DB, rv, orig *models.Execution, out *Outcome) error {
	if err := e.execs.Succeed(ctx, tx, rv, execstore.Success{At: e.now(), Edits: out.Edits, Result: out.Result}); err != nil {
		return fmt.Errorf("record revert: %w", err)
	}
	return e.execs.MarkReverted(ctx, tx, orig.ID, rv.ID)
}

// externalEffects lists what a revert does not undo: the webhook called
// and the notifications sent.
func externalEffects(orig *models.Execution) []string {
	var out []string
	if _, ok := orig.Result.V["webhook"]; ok {
		out = append(out, "a webhook was called")
	}
	for _, n := range orig.Notifications.V {
		if n.Status == Delivered {
			out = append(out, fmt.Sprintf("%s notification sent to %d recipient(s)", n.Channel, n.Recipients))
		}
	}
	return out
}

// applyInverse applies one inverse edit for actor, refusing when its
// object changed since the edit it undoes or actor may not read what it
// touches (answered as a missing object: the read rule comes before any
// use of an object's data), and returns the edit as applied.
func (e *Engine) applyInverse(ctx context.Context, tx *gorm.DB, actor *models.User, ed models.Edit) (models.Edit, error) {
	if err := e.linkEndsReadable(ctx, tx, actor, ed); err != nil {
		return ed, err
	}
	switch ed.Op {
	case models.EditUpdateObject:
		return e.inverseUpdate(ctx, tx, actor, ed)
	case models.EditDeleteObject:
		if _, err := e.unchanged(ctx, tx, actor, ed); err != nil {
			return ed, err
		}
		_, _, err := e.onto.DeleteObject(ctx, tx, ed.ObjectID)
		return ed, err
	case models.EditCreateObject:
		if !e.onto.CanRead(actor, ed.Marking, ed.Organization) {
			return ed, notFound(ed.ObjectID)
		}
		return ed, conflictIfExists(e.onto.RestoreObject(ctx, tx, ed.CreatedObject()), ed.ObjectID)
	case models.EditCreateLink:
		return ed, e.onto.RestoreLink(ctx, tx, ed.CreatedLink())
	case models.EditDeleteLink:
		err := e.onto.DeleteLink(ctx, tx, ed.LinkID)
		if apperr.Is(err, apperr.LinkNotFound) {
			return ed, apperr.New(apperr.Conflict, "link %s was deleted since; the revert would not undo what is there now", ed.LinkID)
		}
		return ed, err
	}
	return ed, apperr.New(apperr.Conflict, "an edit %s cannot be reverted", ed.Op)
}

// inverseUpdate sets the properties back, expecting the object as the
// edit left it.
func (e *Engine) inverseUpdate(ctx context.Context, tx *gorm.DB, actor *models.User, ed models.Edit) (models.Edit, error) {
	if _, err := e.unchanged(ctx, tx, actor, ed); err != nil {
		return ed, err
	}
	after, err := e.onto.UpdateObject(ctx, tx, ed.ObjectID, ed.After)
	if err != nil {
		return ed, err
	}
	ed.UpdatedAtAfter = TimePtr(after.UpdatedAt)
	return ed, nil
}

// restoreStamp gives an object whose update orig was undone by done the
// update time it had before orig: every property orig changed is back, and
// nothing else changed since (unchanged checked that), so the object is
// again exactly as it was then. An earlier edit of the same execution (or
// an earlier item of a batch) then finds the time it left, and is undone in
// turn instead of being refused as changed.
func (e *Engine) restoreStamp(ctx context.Context, tx *gorm.DB, orig, done models.Edit) (models.Edit, error) {
	if orig.Op != models.EditUpdateObject || done.Op != models.EditUpdateObject || orig.UpdatedAtBefore == nil || orig.ObjectID != done.ObjectID {
		return done, nil
	}
	if err := e.onto.SetUpdatedAt(ctx, tx, done.ObjectID, *orig.UpdatedAtBefore); err != nil {
		return done, err
	}
	done.UpdatedAtAfter = TimePtr(*orig.UpdatedAtBefore)
	return done, nil
}

// unchanged reads the object of the inverse edit ed in tx and refuses it
// when actor may not read it, it is gone, or it was updated after the
// update time the undone edit left (ed.UpdatedAtBefore). A refusal names
// the object and what changed: each property the undone edit set (ed's
// Before) that holds another value now. An inverse edit without that time
// is refused as not invertible, never applied unchecked (CheckRevert
// refuses such executions first).
func (e *Engine) unchanged(ctx context.Context, tx *gorm.DB, actor *models.User, ed models.Edit) (*Object, error) {
	id, want := ed.ObjectID, ed.UpdatedAtBefore
	if want == nil {
		why := "the edit to undo carries no update time to compare with"
		return nil, apperr.New(apperr.Conflict, "object %s cannot be reverted: %s; a later edit could not be told apart and would be overwritten", id, why).
			WithDetails(apperr.Detail{Field: id, Reason: "not_invertible", Message: why})
	}
	// Locked first: a concurrent write must not land between this check
	// and the revert's write.
	if err := e.onto.LockObject(ctx, tx, id); err != nil {
		return nil, err
	}
	o, err := e.onto.Object(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if o != nil && !e.onto.CanRead(actor, o.Marking, o.Organization) {
		return nil, notFound(id)
	}
	if o == nil {
		return nil, apperr.New(apperr.Conflict, "object %s was deleted since; nothing to revert it to", id).
			WithDetails(apperr.Detail{Field: id, Reason: "deleted", Message: "deleted since the execution"})
	}
	if !o.UpdatedAt.Equal(*want) {
		at := o.UpdatedAt.UTC().Format(time.RFC3339Nano)
		what := changedProperties(ed.Before, o.Properties)
		msg := "updated at " + at + "; the properties this execution set are as it left them (another property or the marking changed)"
		if len(what) > 0 {
			msg = "updated at " + at + "; changed since: " + strings.Join(what, ", ")
		}
		return nil, apperr.New(apperr.Conflict, "object %s changed since the execution (%s); the revert would overwrite a later edit", id, msg).
			WithDetails(apperr.Detail{Field: id, Reason: "changed", Message: msg})
	}
	return o, nil
}

// changedProperties names each property of left whose value in now
// differs, in name order. Names only: the refusal is recorded on the
// revert and in its workflow's history, which readers of the reverted
// execution's target see, and the object may be another one.
func changedProperties(left, now map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(left)) {
		if !domain.ValuesEqual(left[k], now[k]) {
			out = append(out, k)
		}
	}
	return out
}

func conflictIfExists(err error, id string) error {
	if apperr.Is(err, apperr.Conflict) {
		return apperr.New(apperr.Conflict, "object %s exists again; the revert would not recreate it over what is there now", id)
	}
	return err
}

// linkEndsReadable refuses a link edit when actor may not read one of the
// link's ends as they are now (a missing end is left to the edit itself).
func (e *Engine) linkEndsReadable(ctx context.Context, tx *gorm.DB, actor *models.User, ed models.Edit) error {
	if ed.Op != models.EditCreateLink && ed.Op != models.EditDeleteLink {
		return nil
	}
	for _, id := range []string{ed.SourceID, ed.TargetID} {
		if id == "" {
			continue
		}
		o, err := e.onto.Object(ctx, tx, id)
		if err != nil {
			return err
		}
		if o != nil && !e.onto.CanRead(actor, o.Marking, o.Organization) {
			return notFound(id)
		}
	}
	return nil
}

// notFound answers an object the actor may not read as a missing one.
func notFound(id string) error {
	return apperr.New(apperr.ObjectNotFound, "object %q not found", id)
}
