package revert

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// applyInverse applies one inverse edit for actor, refusing when its
// object changed since the edit it undoes or actor may not read what it
// touches (answered as a missing object: the read rule comes before any
// use of an object's data), and returns the edit as applied.
func (r *Reverter) applyInverse(ctx context.Context, tx *gorm.DB, actor *models.User, ed models.Edit) (models.Edit, error) {
	if err := r.linkEndsReadable(ctx, tx, actor, ed); err != nil {
		return ed, err
	}
	switch ed.Op {
	case models.EditUpdateObject:
		return r.inverseUpdate(ctx, tx, actor, ed)
	case models.EditDeleteObject:
		if _, err := r.unchanged(ctx, tx, actor, ed); err != nil {
			return ed, err
		}
		_, _, err := r.onto.In(models.InTx(tx)).DeleteObject(ctx, ed.ObjectID)
		return ed, err
	case models.EditCreateObject:
		if !r.onto.CanRead(actor, ed.Marking, ed.Organization) {
			return ed, notFound(ed.ObjectID)
		}
		return ed, conflictIfExists(r.onto.RestoresIn(tx).RestoreObject(ctx, ed.CreatedObject()), ed.ObjectID)
	case models.EditCreateLink:
		return ed, r.onto.RestoresIn(tx).RestoreLink(ctx, ed.CreatedLink())
	case models.EditDeleteLink:
		err := r.onto.In(models.InTx(tx)).DeleteLink(ctx, ed.LinkID)
		if apperr.Is(err, apperr.LinkNotFound) {
			return ed, apperr.New(apperr.Conflict, "link %s was deleted since; the revert would not undo what is there now", ed.LinkID)
		}
		return ed, err
	}
	return ed, apperr.New(apperr.Conflict, "an edit %s cannot be reverted", ed.Op)
}

// inverseUpdate sets the properties back, expecting the object as the
// edit left it.
func (r *Reverter) inverseUpdate(ctx context.Context, tx *gorm.DB, actor *models.User, ed models.Edit) (models.Edit, error) {
	if _, err := r.unchanged(ctx, tx, actor, ed); err != nil {
		return ed, err
	}
	after, err := r.onto.In(models.InTx(tx)).UpdateObject(ctx, ed.ObjectID, ed.After)
	if err != nil {
		return ed, err
	}
	ed.UpdatedAtAfter = engine.TimePtr(after.UpdatedAt)
	return ed, nil
}

// restoreStamp gives an object whose update orig was undone by done the
// update time it had before orig: every property orig changed is back, and
// nothing else changed since (unchanged checked that), so the object is
// again exactly as it was then. An earlier edit of the same execution (or
// an earlier item of a batch) then finds the time it left, and is undone in
// turn instead of being refused as changed.
func (r *Reverter) restoreStamp(ctx context.Context, tx *gorm.DB, orig, done models.Edit) (models.Edit, error) {
	if orig.Op != models.EditUpdateObject || done.Op != models.EditUpdateObject || orig.UpdatedAtBefore == nil || orig.ObjectID != done.ObjectID {
		return done, nil
	}
	if err := r.onto.RestoresIn(tx).SetUpdatedAt(ctx, done.ObjectID, *orig.UpdatedAtBefore); err != nil {
		return done, err
	}
	done.UpdatedAtAfter = engine.TimePtr(*orig.UpdatedAtBefore)
	return done, nil
}

// unchanged reads the object of the inverse edit ed in tx and refuses it
// when actor may not read it, it is gone, or it was updated after the
// update time the undone edit left (ed.UpdatedAtBefore). A refusal names
// the object and what changed: each property the undone edit set (ed's
// Before) that holds another value now. An inverse edit without that time
// is refused as not invertible, never applied unchecked (Check
// refuses such executions first).
func (r *Reverter) unchanged(ctx context.Context, tx *gorm.DB, actor *models.User, ed models.Edit) (*engine.Object, error) {
	id, want := ed.ObjectID, ed.UpdatedAtBefore
	if want == nil {
		why := "the edit to undo carries no update time to compare with"
		return nil, apperr.New(apperr.Conflict, "object %s cannot be reverted: %s; a later edit could not be told apart and would be overwritten", id, why).
			WithDetails(apperr.Detail{Field: id, Reason: "not_invertible", Message: why})
	}
	// Locked first: a concurrent write must not land between this check
	// and the revert's write.
	if err := r.onto.In(models.InTx(tx)).LockObject(ctx, id); err != nil {
		return nil, err
	}
	o, err := r.onto.In(models.InTx(tx)).Object(ctx, id)
	if err != nil {
		return nil, err
	}
	if o != nil && !r.onto.CanRead(actor, o.Marking, o.Organization) {
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
func (r *Reverter) linkEndsReadable(ctx context.Context, tx *gorm.DB, actor *models.User, ed models.Edit) error {
	if ed.Op != models.EditCreateLink && ed.Op != models.EditDeleteLink {
		return nil
	}
	for _, id := range []string{ed.SourceID, ed.TargetID} {
		if id == "" {
			continue
		}
		o, err := r.onto.In(models.InTx(tx)).Object(ctx, id)
		if err != nil {
			return err
		}
		if o != nil && !r.onto.CanRead(actor, o.Marking, o.Organization) {
			return notFound(id)
		}
	}
	return nil
}

// notFound answers an object the actor may not read as a missing one.
func notFound(id string) error {
	return apperr.New(apperr.ObjectNotFound, "object %q not found", id)
}
