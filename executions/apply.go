package executions

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// ApplyRequest applies a branch: its stacked actions run for real.
type ApplyRequest struct {
	Actor    *models.User
	Guest    bool
	BranchID string
	// Revalidate runs the actions even when objects the branch read have
	// changed on the main ontology since (each is validated and
	// authorized again anyway).
	Revalidate bool
}

// AppliedStep is the outcome of one stacked action on apply.
type AppliedStep struct {
	Position          int    `json:"position"`
	WhatIfExecutionID string `json:"what_if_execution_id"`
	ActionTypeName    string `json:"action_type_name"`
	ExecutionID       string `json:"execution_id,omitempty"`
	Status            string `json:"status"` // succeeded, failed, running, skipped
	ErrorCode         string `json:"error_code,omitempty"`
	ErrorMessage      string `json:"error_message,omitempty"`
}

// ApplyResult is what apply did: each step's outcome, in order, and the
// branch after.
type ApplyResult struct {
	Branch *models.Branch `json:"branch"`
	Steps  []AppliedStep  `json:"executions"`
	// Complete says every step has now run for real.
	Complete bool `json:"complete"`
}

// Apply runs the branch's stacked actions that have not run yet, in order,
// each a normal execution (kind execute) through Submit — validated and
// authorized again, now, for the caller — stopping at the first that does
// not succeed, or is still running when the wait ends (reported running;
// the next apply resumes it). Each step runs at most once: its execution
// is keyed by the step (stepKey), so a repeated apply finds the execution
// in flight instead of submitting another. Unless r.Revalidate, an object a
// step read from the main ontology that has changed there since is refused
// first (409 naming it), before anything runs. Objects a step created in
// the branch get new ids when created for real; later steps that name them
// are given those.
func (s *Service) Apply(ctx context.Context, r ApplyRequest) (*ApplyResult, error) {
	b, err := s.store.Branch(ctx, r.Actor, r.BranchID)
	if err != nil {
		return nil, err
	}
	if b.Status != models.BranchOpen && !s.claimExpired(b) {
		return nil, apperr.New(apperr.Conflict, "branch %s is being applied or was applied", b.ID)
	}
	steps, err := s.store.BranchSteps(ctx, nil, b.ID)
	if err != nil {
		return nil, err
	}
	steps = steps[min(b.Applied, len(steps)):]
	if !r.Revalidate {
		if err := s.checkReads(ctx, r.Actor, steps); err != nil {
			return nil, err
		}
	}
	if err := s.claim(ctx, b.ID); err != nil {
		return nil, err
	}
	ids := b.IDMap.V
	if ids == nil {
		ids = map[string]string{}
	}
	res := &ApplyResult{Steps: []AppliedStep{}}
	applied := b.Applied
	for i := range steps {
		out := s.applyStep(ctx, r, &steps[i], ids)
		res.Steps = append(res.Steps, out)
		if out.Status != models.StatusSucceeded {
			break
		}
		applied++
		s.progress(context.WithoutCancel(ctx), b.ID, applied, ids)
	}
	res.Complete = applied == b.Steps
	res.Branch, err = s.release(context.WithoutCancel(ctx), b.ID, applied, ids, res.Complete)
	return res, err
}

// checkReads refuses when an object a step read from the main ontology
// changed there since (updated, deleted or created), naming each. An
// object u may no longer read is judged as a missing one (the read rule:
// unreadable and missing answer alike), so the answer does not tell
// whether it was updated or deleted.
func (s *Service) checkReads(ctx context.Context, u *models.User, steps []models.BranchStep) error {
	var details []apperr.Detail
	for _, st := range steps {
		if submitted, err := s.submitted(ctx, &st); err != nil || submitted {
			// Its reads were checked when it was submitted; what its own
			// execution changed since is no conflict.
			if err != nil {
				return err
			}
			continue
		}
		for _, rd := range st.Reads.V {
			o, err := s.store.Object(ctx, nil, rd.ObjectID)
			if err != nil {
				return err
			}
			if o != nil && !s.store.CanRead(u, o.Marking, o.Organization) {
				o = nil
			}
			if what := changedSince(rd, o); what != "" {
				details = append(details, apperr.Detail{Field: "objects." + rd.ObjectID, Reason: what,
					Message: fmt.Sprintf("object %s was %s on the main ontology after step %d (%s) read it", rd.ObjectID, what, st.Position, st.ActionTypeName)})
			}
		}
	}
	if len(details) == 0 {
		return nil
	}
	e := apperr.New(apperr.Conflict, "%s; apply with revalidate: true to run the actions against the current data", details[0].Message)
	return e.WithDetails(details...)
}

// submitted says an earlier apply submitted st and its execution did not
// fail: it is resumed, not checked again.
func (s *Service) submitted(ctx context.Context, st *models.BranchStep) (bool, error) {
	if st.AppliedExecutionID == "" {
		return false, nil
	}
	ex, err := s.Get(ctx, st.AppliedExecutionID)
	if err != nil {
		return false, err
	}
	return ex.Status != models.StatusFailed, nil
}

// changedSince says how o (now) differs from what rd saw: "" (not),
// updated, deleted or created.
func changedSince(rd models.BranchRead, o *engine.Object) string {
	switch {
	case rd.UpdatedAt == nil && o == nil:
		return ""
	case rd.UpdatedAt == nil:
		return "created"
	case o == nil:
		return "deleted"
	case !o.UpdatedAt.Truncate(time.Microsecond).Equal(rd.UpdatedAt.Truncate(time.Microsecond)):
		return "updated"
	}
	return ""
}

// claim moves the branch to applying, so one apply runs at a time and
// nothing is stacked meanwhile. A claim not refreshed for claimTTL is
// taken over: the apply that held it ended without releasing it (a crash).
// Should that apply still be running after all, both resume the same
// executions (stepKey), so no step runs twice.
func (s *Service) claim(ctx context.Context, id string) error {
	now := time.Now().UTC()
	res := s.db.WithContext(ctx).Model(&models.Branch{}).
		Where("id = ? AND (status = ? OR (status = ? AND updated_at < ?))", id, models.BranchOpen, models.BranchApplying, now.Add(-s.claimTTL())).
		Updates(map[string]any{"status": models.BranchApplying, "updated_at": now})
	if res.Error != nil {
		return fmt.Errorf("claim branch %s: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return apperr.New(apperr.Conflict, "branch %s is being applied or was applied", id)
	}
	return nil
}

// claimTTL is how long an apply's claim holds without being refreshed.
// Apply refreshes it after each step, and a step is waited for at most
// the execute timeout; the minute covers submitting and recording.
func (s *Service) claimTTL() time.Duration { return s.opts.ExecuteTimeout + time.Minute }

// claimExpired says b is claimed by an apply that stopped refreshing it.
func (s *Service) claimExpired(b *models.Branch) bool {
	return b.Status == models.BranchApplying && time.Since(b.UpdatedAt) > s.claimTTL()
}

// progress records a step applied as soon as it succeeded (and refreshes
// the claim), so an apply that dies later does not lose it.
func (s *Service) progress(ctx context.Context, id string, applied int, ids map[string]string) {
	err := s.db.WithContext(ctx).Model(&models.Branch{}).Where("id = ? AND status = ?", id, models.BranchApplying).
		Updates(map[string]any{"applied": applied, "id_map": models.NewJSON(ids), "updated_at": time.Now().UTC()}).Error
	if err != nil {
		// Not fatal: the next apply finds the step's execution succeeded
		// by its key and counts it then.
		slog.WarnContext(ctx, "record apply progress", "branch", id, "err", err)
	}
}

// release records how far apply got and reopens the branch (or closes it
// as applied).
func (s *Service) release(ctx context.Context, id string, applied int, ids map[string]string, complete bool) (*models.Branch, error) {
	status := models.BranchOpen
	if complete {
		status = models.BranchApplied
	}
	err := s.db.WithContext(ctx).Model(&models.Branch{}).Where("id = ?", id).Updates(map[string]any{
		"status": status, "applied": applied, "id_map": models.NewJSON(ids), "updated_at": time.Now().UTC()}).Error
	if err != nil {
		return nil, fmt.Errorf("record the apply of branch %s: %w", id, err)
	}
	return s.openAny(ctx, id)
}

// applyStep runs one step for real and waits for it. A wait that ends
// before the execution finished — the execute timeout, or the request
// cancelled — reports the step running: its workflow goes on, and the
// next apply resumes it by its key.
func (s *Service) applyStep(ctx context.Context, r ApplyRequest, st *models.BranchStep, ids map[string]string) AppliedStep {
	out := AppliedStep{Position: st.Position, WhatIfExecutionID: st.ExecutionID, ActionTypeName: st.ActionTypeName}
	h, err := s.submitStep(ctx, r, st, ids)
	if err != nil {
		out.Status, out.ErrorCode, out.ErrorMessage = models.StatusFailed, string(apperr.CodeOf(err)), apperr.MessageOf(err)
		return out
	}
	out.ExecutionID = h.Execution.ID
	ex, err := s.Wait(ctx, h)
	if err != nil {
		slog.WarnContext(ctx, "wait for an applied step", "step", st.ID, "execution", h.Execution.ID, "err", err)
		out.Status = models.StatusRunning
		return out
	}
	out.Status, out.ErrorCode, out.ErrorMessage = ex.Status, ex.ErrorCode, ex.ErrorMessage
	if ex.FinishedAt == nil {
		out.Status = models.StatusRunning
	}
	if out.Status == models.StatusSucceeded {
		mapCreated(ids, st.Edits.V, ex.Edits.V)
	}
	return out
}

// submitStep submits step st for real, or resumes the execution an
// earlier apply submitted for it. The execution is keyed by the step
// (stepKey) and recorded on the step before any wait, so neither a
// repeated apply, nor one after a crash, nor another caller's (an admin's)
// submits it again; only a failed attempt is tried anew.
func (s *Service) submitStep(ctx context.Context, r ApplyRequest, st *models.BranchStep, ids map[string]string) (*Handle, error) {
	prev, err := s.stepExecution(ctx, st)
	if err != nil {
		return nil, err
	}
	if prev != nil && prev.Status != models.StatusFailed {
		return s.resume(ctx, prev, prev.RequestHash)
	}
	at, err := s.store.ActionType(ctx, st.ActionTypeID)
	if err != nil {
		return nil, err
	}
	key := stepKey(st, prev)
	req := Request{Action: at, Actor: r.Actor, Guest: r.Guest, Kind: models.KindExecute,
		TargetID: mapID(ids, st.TargetObjectID), Parameters: mapParams(ids, st.Parameters.V),
		Justification: st.Justification, IdempotencyKey: key, Identity: Identity(key)}
	h, err := s.Submit(ctx, req, true)
	if err != nil {
		return nil, err
	}
	s.recordStep(ctx, st, h.Execution.ID)
	return h, nil
}

// stepExecution is the last real execution submitted for st: the one
// recorded on the step, else one found by the step's key under any actor
// — an apply that died between submitting and recording leaves only the
// key, and the next apply may be another user's (an admin's), whose own
// keys would not find it.
func (s *Service) stepExecution(ctx context.Context, st *models.BranchStep) (*models.Execution, error) {
	if st.AppliedExecutionID != "" {
		return s.Get(ctx, st.AppliedExecutionID)
	}
	var found []models.Execution
	// Only the key in SQL, with the partial index's predicate literally (a
	// bound pattern would not let a generic plan use the index); the rest
	// is checked here, so no other index looks cheaper to the planner.
	err := s.db.WithContext(ctx).Where("idempotency_key LIKE '"+models.BranchApplyKeyPrefix+"%' AND idempotency_key = ?",
		stepKey(st, nil)).Find(&found).Error
	if err != nil {
		return nil, fmt.Errorf("look up the execution of step %s: %w", st.ID, err)
	}
	for i := range found {
		if ex := &found[i]; ex.ActionTypeID == st.ActionTypeID && ex.Kind == models.KindExecute {
			s.recordStep(ctx, st, ex.ID)
			return ex, nil
		}
	}
	return nil, nil
}

// recordStep records on st the real execution that runs it.
func (s *Service) recordStep(ctx context.Context, st *models.BranchStep, executionID string) {
	err := s.db.WithContext(context.WithoutCancel(ctx)).Model(st).Update("applied_execution_id", executionID).Error
	if err != nil {
		// The key still finds the execution.
		slog.WarnContext(ctx, "record an applied step", "step", st.ID, "err", err)
	}
}

// stepKey is the Idempotency-Key of step st's real execution: derived
// from the step, and after a failed attempt from that attempt too, so the
// retry is a new execution while a repeated retry is the same one.
func stepKey(st *models.BranchStep, failed *models.Execution) string {
	if failed == nil {
		return models.BranchApplyKeyPrefix + st.ID
	}
	return models.BranchApplyKeyPrefix + st.ID + ":after:" + failed.ID
}

// mapCreated pairs the objects a step created in the branch with those
// its real execution created, in order.
func mapCreated(ids map[string]string, branch, real []models.Edit) {
	var made []string
	for _, ed := range real {
		if ed.Op == models.EditCreateObject {
			made = append(made, ed.ObjectID)
		}
	}
	for _, ed := range branch {
		if ed.Op == models.EditCreateObject && len(made) > 0 {
			ids[ed.ObjectID], made = made[0], made[1:]
		}
	}
}

func mapParams(ids map[string]string, p map[string]any) map[string]any {
	if p == nil {
		return nil
	}
	return mapIDs(ids, p).(map[string]any)
}

func mapID(ids map[string]string, id string) string {
	if m, ok := ids[id]; ok {
		return m
	}
	return id
}

// mapIDs replaces every string that is the id of an object created in the
// branch with its real id, in parameter values of any shape.
func mapIDs(ids map[string]string, v any) any {
	switch x := v.(type) {
	case string:
		return mapID(ids, x)
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = mapIDs(ids, y)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, y := range x {
			out[k] = mapIDs(ids, y)
		}
		return out
	}
	return v
}
