package revert

import (
	"slices"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// Permission lets a user revert executions other users ran.
const Permission = "executions:revert"

// Check refuses reverting orig by actor: only a succeeded single
// execution (or batch item) that was not reverted, of an action that
// allows it, by the actor who ran it or one with Permission. Run up front
// by the service (a clear answer before anything is recorded), by the
// console before it offers Undo, and again by the revert step inside its
// transaction (the state may have moved).
func Check(actor *models.User, orig *models.Execution, at *engine.ActionType) error {
	switch {
	case orig.ActorID != actor.ID && !auth.HasPermission(actor, Permission):
		return apperr.New(apperr.PermissionDenied, "only the actor who ran execution %s, or a user with %s, may revert it", orig.ID, Permission)
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
