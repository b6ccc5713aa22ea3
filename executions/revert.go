package executions

import (
	"context"
	"fmt"
	"strings"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/revert"
)

// RevertRequest asks to revert an execution: a single one (execute,
// inline edit, batch item) or a whole batch.
type RevertRequest struct {
	ExecutionID   string
	Actor         *models.User
	Guest         bool
	Justification string
	// IdempotencyKey ("" = none) applies to a single revert; a batch's
	// items are each reverted at most once anyway (the revert step checks
	// reverted_by under the original's row lock).
	IdempotencyKey string
}

// RevertItem is the outcome of reverting one item of a batch.
type RevertItem struct {
	Index        int    `json:"index"`
	ExecutionID  string `json:"execution_id"`
	RevertID     string `json:"revert_execution_id,omitempty"`
	Status       string `json:"status"`
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// Revert submits a revert execution of r.ExecutionID: the checks that can
// be answered before anything is recorded run here (who may revert, what
// may be reverted); the revert step runs them again inside its
// transaction, with the checks that the touched objects are unchanged.
func (s *Service) Revert(ctx context.Context, r RevertRequest, listen bool) (*Handle, error) {
	orig, at, err := s.revertable(ctx, r)
	if err != nil {
		return nil, err
	}
	rv := newExecution(at, r.Actor, r.Guest, models.KindRevert, orig.TargetObjectID, nil, r.Justification)
	rv.RevertOf = &orig.ID
	if r.IdempotencyKey != "" {
		prev, err := s.setKeyOrResume(ctx, rv, r.IdempotencyKey, Identity(orig.ID, models.KindRevert, r.Justification))
		if prev != nil || err != nil {
			return prev, err
		}
	}
	if err := s.execs.Create(ctx, rv); err != nil {
		if prev, rerr, ok := s.resumeAfterDuplicate(ctx, rv, err); ok {
			return prev, rerr
		}
		return nil, fmt.Errorf("record revert of %s: %w", orig.ID, err)
	}
	return s.start(ctx, rv, listen)
}

// revertable reads the execution to revert and its action type, and
// refuses what can be refused before anything is recorded. An execution
// the actor may not see is answered as a missing one.
func (s *Service) revertable(ctx context.Context, r RevertRequest) (*models.Execution, *engine.ActionType, error) {
	if strings.TrimSpace(r.Justification) == "" {
		return nil, nil, apperr.New(apperr.JustificationRequired, "a revert requires a justification").
			WithDetails(apperr.Detail{Field: "justification", Reason: "required", Message: "say why the execution is reverted"})
	}
	orig, err := s.Get(ctx, r.ExecutionID)
	if err != nil {
		return nil, nil, err
	}
	if orig.ActorID != r.Actor.ID && !auth.HasPermission(r.Actor, revert.Permission) {
		return nil, nil, apperr.New(apperr.ExecutionNotFound, "execution %q not found", r.ExecutionID)
	}
	at, err := s.store.ActionType(ctx, orig.ActionTypeID)
	if err != nil {
		return nil, nil, fmt.Errorf("read the action type of execution %s: %w", orig.ID, err)
	}
	if err := s.eng.MayRun(at, r.Actor, r.Guest); err != nil {
		return nil, nil, err
	}
	if orig.Kind == models.KindBatch {
		return orig, at, nil
	}
	return orig, at, revert.Check(r.Actor, orig, at)
}

// RevertBatch reverts every succeeded item of a batch, each its own
// revert execution checked as a single one is, last item first and one
// after the other (two items may have touched the same object, and the
// later edit must be undone first), and answers each item's outcome in
// the batch's order: items that did not succeed are skipped, items
// reverted before are listed as reverted, so the request can be repeated
// after an interruption.
func (s *Service) RevertBatch(ctx context.Context, r RevertRequest) ([]RevertItem, error) {
	batch, at, err := s.revertable(ctx, r)
	if err != nil {
		return nil, err
	}
	if batch.Kind != models.KindBatch {
		return nil, apperr.New(apperr.InvalidArgument, "execution %s is not a batch", batch.ID)
	}
	if !at.Config.Revertible() {
		return nil, apperr.New(apperr.Conflict, "action %s does not allow revert (allow_revert: false)", at.Name)
	}
	items, err := s.BatchItems(ctx, batch.ID)
	if err != nil {
		return nil, err
	}
	out := make([]RevertItem, len(items))
	for i := len(items) - 1; i >= 0; i-- {
		if out[i], err = s.revertItem(ctx, r, &items[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// revertItem reverts one item of a batch and waits for it.
func (s *Service) revertItem(ctx context.Context, r RevertRequest, it *models.Execution) (RevertItem, error) {
	out := RevertItem{Index: it.BatchIndex, ExecutionID: it.ID, Status: "skipped"}
	switch {
	case it.RevertedBy != nil:
		out.Status, out.RevertID = "reverted", *it.RevertedBy
		return out, nil
	case it.Status != models.StatusSucceeded:
		out.ErrorMessage = "the item " + it.Status
		return out, nil
	}
	h, err := s.Revert(ctx, RevertRequest{ExecutionID: it.ID, Actor: r.Actor, Guest: r.Guest, Justification: r.Justification}, true)
	if err != nil {
		if apperr.CodeOf(err) == apperr.Internal || apperr.CodeOf(err) == apperr.Unavailable {
			return out, err
		}
		out.Status, out.ErrorCode, out.ErrorMessage = models.StatusFailed, string(apperr.CodeOf(err)), apperr.MessageOf(err)
		return out, nil
	}
	ex, err := s.Wait(ctx, h)
	if err != nil {
		return out, err
	}
	out.RevertID = ex.ID
	out.Status, out.ErrorCode, out.ErrorMessage = ex.Status, ex.ErrorCode, ex.ErrorMessage
	return out, nil
}

// IsBatch reports whether id names a batch execution (false when it names
// nothing: the revert then answers that).
func (s *Service) IsBatch(ctx context.Context, id string) bool {
	var kind string
	s.db.WithContext(ctx).Model(&models.Execution{}).Select("kind").Where("id = ?", id).Scan(&kind)
	return kind == models.KindBatch
}
