package executions

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/whatif"
)

// DefaultBranchTTL is how long a what-if branch lives unless configured
// (config's --branch-ttl uses it: one source).
const DefaultBranchTTL = defaults.BranchTTL

// WhatIfResult is a what-if's outcome: the branch (Created when this
// request opened it), the execution as it finished (or still runs), and
// the step it stacked (nil unless it succeeded).
type WhatIfResult struct {
	Branch    *models.Branch
	Created   bool
	Execution *models.Execution
	Step      *models.BranchStep
	// Dropped says the branch this request opened was deleted again: the
	// what-if was refused and stacked nothing.
	Dropped bool
}

// WhatIf runs r as a what-if: on branch branchID (the actor's), or on a
// new branch when branchID is "". It is an execution like any other — the
// same workflow, recorded in the action log — of kind what-if, whose edits
// go to the branch only.
func (s *Service) WhatIf(ctx context.Context, r Request, branchID string) (*WhatIfResult, error) {
	s.purgeExpired(ctx)
	res := &WhatIfResult{}
	var err error
	if branchID != "" {
		res.Branch, err = s.openBranch(ctx, r.Actor, branchID)
	} else {
		res.Branch, err = s.newBranch(ctx, r.Actor)
		res.Created = true
	}
	if err != nil {
		return nil, err
	}
	r.Kind, r.BranchID = models.KindWhatIf, res.Branch.ID
	if r.IdempotencyKey != "" && r.Identity == "" {
		r.Identity = Identity(r.Action.ID, r.Kind, requestShape{r.TargetID, r.Parameters, r.Justification}, branchID)
	}
	h, err := s.Submit(ctx, r, true)
	if err != nil {
		s.dropNewBranch(ctx, res)
		return nil, err
	}
	if h.Execution.BranchID != nil && *h.Execution.BranchID != res.Branch.ID {
		// A repeated Idempotency-Key: the branch its first request opened.
		s.dropNewBranch(ctx, res)
		if res.Branch, err = s.openAny(ctx, *h.Execution.BranchID); err != nil {
			return nil, err
		}
	}
	if res.Execution, err = s.Wait(ctx, h); err != nil {
		return nil, err
	}
	if err := s.whatIfOutcome(ctx, res); err != nil {
		return nil, err
	}
	return res, s.hideUnreadable(ctx, r.Actor, res)
}

// hideUnreadable applies the read rule to what a what-if answers its
// actor, as GetBranch does: the execution is redacted as the action log
// redacts it, and the preview's links keep only those both of whose ends
// the actor may read. A delete removes every link of its object, so
// without this the answer would name objects the actor may not read.
func (s *Service) hideUnreadable(ctx context.Context, u *models.User, res *WhatIfResult) error {
	s.store.RedactExecution(ctx, &auth.Principal{User: u}, res.Execution)
	if res.Step == nil || res.Step.Preview.V["links"] == nil {
		return nil
	}
	raw, err := json.Marshal(res.Step.Preview.V["links"])
	if err != nil {
		return fmt.Errorf("read the what-if's links: %w", err)
	}
	var links []whatif.LinkChange
	if err := json.Unmarshal(raw, &links); err != nil {
		return fmt.Errorf("read the what-if's links: %w", err)
	}
	if res.Step.Preview.V["links"], err = s.readableLinks(ctx, u, links); err != nil {
		return fmt.Errorf("judge the what-if's links: %w", err)
	}
	return nil
}

// whatIfOutcome reads the step a finished what-if stacked, and drops the
// branch a refused what-if opened (it holds nothing).
func (s *Service) whatIfOutcome(ctx context.Context, res *WhatIfResult) error {
	switch res.Execution.Status {
	case models.StatusSucceeded:
		var st models.BranchStep
		if err := s.db.WithContext(ctx).Take(&st, "execution_id = ?", res.Execution.ID).Error; err != nil {
			return fmt.Errorf("read the branch step of %s: %w", res.Execution.ID, err)
		}
		res.Step = &st
	case models.StatusFailed:
		s.dropNewBranch(ctx, res)
		res.Dropped = res.Created
	}
	b, err := s.openAny(ctx, res.Branch.ID)
	if err == nil {
		res.Branch = b
	}
	return nil
}

func (s *Service) newBranch(ctx context.Context, u *models.User) (*models.Branch, error) {
	now := time.Now().UTC()
	b := &models.Branch{ID: uuid.NewString(), OwnerID: u.ID, OwnerName: u.Username, Status: models.BranchOpen,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(s.opts.BranchTTL), IDMap: models.NewJSON(map[string]string{})}
	if err := s.db.WithContext(ctx).Create(b).Error; err != nil {
		return nil, fmt.Errorf("open a branch: %w", err)
	}
	return b, nil
}

// openBranch is u's branch id, still open for stacking.
func (s *Service) openBranch(ctx context.Context, u *models.User, id string) (*models.Branch, error) {
	b, err := s.store.Branch(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if b.Status != models.BranchOpen {
		return nil, apperr.New(apperr.Conflict, "branch %s is %s: nothing more can be stacked on it", id, b.Status)
	}
	return b, nil
}

func (s *Service) openAny(ctx context.Context, id string) (*models.Branch, error) {
	var b models.Branch
	if err := s.db.WithContext(ctx).Take(&b, "id = ?", id).Error; err != nil {
		return nil, fmt.Errorf("read branch %s: %w", id, err)
	}
	return &b, nil
}

// dropNewBranch deletes the branch this request opened if nothing was
// stacked on it.
func (s *Service) dropNewBranch(ctx context.Context, res *WhatIfResult) {
	if !res.Created {
		return
	}
	err := s.db.WithContext(context.WithoutCancel(ctx)).Where("id = ? AND steps = 0", res.Branch.ID).Delete(&models.Branch{}).Error
	if err != nil {
		slog.WarnContext(ctx, "drop an empty branch", "branch", res.Branch.ID, "err", err)
	}
}

// branchSweepEvery is how often SweepBranches purges expired branches.
const branchSweepEvery = 10 * time.Minute

// SweepBranches purges expired branches every interval (0:
// branchSweepEvery) until ctx ends, so their rows go even when nobody opens
// or lists branches.
func (s *Service) SweepBranches(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = branchSweepEvery
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.purgeExpired(ctx)
			s.failAbandoned(ctx)
		}
	}
}

// purgeExpired deletes branches past their expiry, with their steps. Run
// when branches are opened and listed, and by SweepBranches; an expired
// branch is already invisible (ontology.MayUseBranch), this reclaims its
// rows.
func (s *Service) purgeExpired(ctx context.Context) {
	// A read first: most calls find nothing to purge and then take no
	// write lock (SQLite has one).
	var n int64
	if err := s.db.WithContext(ctx).Model(&models.Branch{}).Where("expires_at <= ?", time.Now().UTC()).Limit(1).Count(&n).Error; err != nil || n == 0 {
		return
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		expired := tx.Model(&models.Branch{}).Select("id").Where("expires_at <= ?", time.Now().UTC())
		if err := tx.Where("branch_id IN (?)", expired).Delete(&models.BranchStep{}).Error; err != nil {
			return err
		}
		return tx.Where("expires_at <= ?", time.Now().UTC()).Delete(&models.Branch{}).Error
	})
	if err != nil {
		slog.WarnContext(ctx, "purge expired branches", "err", err)
	}
}

// BranchFilter narrows ListBranches.
type BranchFilter struct {
	// OwnerID limits the list to one owner's branches ("" = all: admins).
	OwnerID string
	// ActionTypeID and TargetID: branches with a step of that action (on
	// that target).
	ActionTypeID, TargetID string
}

// ListBranches lists unexpired branches, newest first.
func (s *Service) ListBranches(ctx context.Context, f BranchFilter, offset, limit int) ([]models.Branch, error) {
	s.purgeExpired(ctx)
	q := s.db.WithContext(ctx).Model(&models.Branch{}).Where("expires_at > ?", time.Now().UTC())
	if f.OwnerID != "" {
		q = q.Where("owner_id = ?", f.OwnerID)
	}
	if f.ActionTypeID != "" {
		steps := s.db.Model(&models.BranchStep{}).Select("branch_id").Where("action_type_id = ?", f.ActionTypeID)
		if f.TargetID != "" {
			steps = steps.Where("target_object_id = ?", f.TargetID)
		}
		q = q.Where("id IN (?)", steps)
	}
	rows := []models.Branch{}
	if err := q.Order("created_at DESC, id").Offset(offset).Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list branches: %w", err)
	}
	return rows, nil
}

// BranchView is a branch as GET /branches/{id} shows it: its stacked
// executions in order and the diff of the branch against the main
// ontology as it is now.
type BranchView struct {
	*models.Branch
	Steps []models.BranchStep `json:"executions"`
	Diff  BranchDiff          `json:"diff"`
}

// BranchDiff is what the branch changes: objects created, updated
// (property by property) and deleted, and links created and deleted.
type BranchDiff struct {
	Objects []whatif.ObjectChange `json:"objects"`
	Links   []whatif.LinkChange   `json:"links"`
}

// GetBranch reads u's branch id with its steps and diff.
func (s *Service) GetBranch(ctx context.Context, u *models.User, id string) (*BranchView, error) {
	b, err := s.store.Branch(ctx, u, id)
	if err != nil {
		return nil, err
	}
	steps, err := s.store.BranchSteps(ctx, nil, id)
	if err != nil {
		return nil, err
	}
	edits := ontology.BranchEdits(steps)
	if err := s.redactSteps(ctx, u, steps); err != nil {
		return nil, err
	}
	v := &BranchView{Branch: b, Steps: steps}
	if v.Diff.Objects, err = s.objectDiff(ctx, u, id, edits); err != nil {
		return nil, err
	}
	if v.Diff.Links, err = s.readableLinks(ctx, u, netLinks(edits)); err != nil {
		return nil, err
	}
	return v, nil
}

// redactSteps blanks the request and edits of a step naming an object
// (on the ontology now) that u may not read — the owner's clearance may
// have been lowered since — as the action log redacts executions.
func (s *Service) redactSteps(ctx context.Context, u *models.User, steps []models.BranchStep) error {
	for i := range steps {
		st := &steps[i]
		hidden, err := s.anyUnreadable(ctx, u, stepMentions(st))
		if err != nil {
			return err
		}
		if hidden {
			st.Parameters, st.Justification, st.Edits, st.Reads = models.NumJSON[map[string]any]{}, "", models.NumJSON[[]models.Edit]{}, models.JSON[[]models.BranchRead]{}
			st.Preview, st.TargetObjectID, st.Redacted = models.NumJSON[map[string]any]{}, "", true
		}
	}
	return nil
}

// stepMentions lists every object a step names or used: its target, the
// objects its edits touched, the ends of the links they made or removed,
// and the objects it read (its preview — notifications, the effect — was
// rendered from them).
func stepMentions(st *models.BranchStep) []string {
	// EditObjects includes the far ends of the links a delete removed.
	ids := append([]string{st.TargetObjectID}, ontology.EditObjects(st.Edits.V)...)
	for _, rd := range st.Reads.V {
		ids = append(ids, rd.ObjectID)
	}
	return ids
}

// anyUnreadable reports whether an object among ids exists on the
// ontology now and u may not read it.
func (s *Service) anyUnreadable(ctx context.Context, u *models.User, ids []string) (bool, error) {
	for _, id := range ids {
		if id == "" {
			continue
		}
		o, err := s.store.Object(ctx, nil, id)
		if err != nil {
			return false, err
		}
		if o != nil && !s.store.CanRead(u, o.Marking, o.Organization) {
			return true, nil
		}
	}
	return false, nil
}

// readableLinks keeps the link changes both of whose ends u may read (or
// that no longer exist on the ontology).
func (s *Service) readableLinks(ctx context.Context, u *models.User, links []whatif.LinkChange) ([]whatif.LinkChange, error) {
	out := []whatif.LinkChange{}
	for _, l := range links {
		hidden, err := s.anyUnreadable(ctx, u, []string{l.SourceID, l.TargetID})
		if err != nil {
			return nil, err
		}
		if !hidden {
			out = append(out, l)
		}
	}
	return out, nil
}

// objectDiff compares each object the branch changed on the main
// ontology (now) and in the branch, with u's read rule: an object u may
// not read shows its id only.
func (s *Service) objectDiff(ctx context.Context, u *models.User, id string, edits []models.Edit) ([]whatif.ObjectChange, error) {
	ids := whatif.Touched(edits)
	before, after := map[string]*engine.Object{}, map[string]*engine.Object{}
	for _, oid := range ids {
		o, err := s.store.Object(ctx, nil, oid)
		if err != nil {
			return nil, err
		}
		before[oid] = o
	}
	err := s.store.InBranch(ctx, u, id, func(bs *ontology.Store) error {
		for _, oid := range ids {
			o, err := bs.Object(ctx, nil, oid)
			if err != nil {
				return err
			}
			after[oid] = o
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	canRead := func(marking, org string) bool { return s.store.CanRead(u, marking, org) }
	out := []whatif.ObjectChange{}
	for _, oid := range ids {
		if before[oid] == nil && after[oid] == nil {
			continue // created and deleted again in the branch
		}
		c := whatif.ChangeOf(canRead, oid, before[oid], after[oid])
		if c.Change == whatif.Updated && len(c.Diff) == 0 && c.Before != nil {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// netLinks folds the branch's link changes: a link created and deleted
// again in the branch is no change.
func netLinks(edits []models.Edit) []whatif.LinkChange {
	var order []string
	by := map[string]whatif.LinkChange{}
	for _, c := range whatif.LinkChanges(edits) {
		prev, ok := by[c.LinkID]
		switch {
		case ok && prev.Change == whatif.Created && c.Change == whatif.Deleted:
			delete(by, c.LinkID)
			continue
		case !ok:
			order = append(order, c.LinkID)
		}
		by[c.LinkID] = c
	}
	out := []whatif.LinkChange{}
	for _, id := range order {
		if c, ok := by[id]; ok {
			out = append(out, c)
		}
	}
	return out
}

// DeleteBranch deletes u's branch id and its steps (the what-if
// executions stay in the action log).
func (s *Service) DeleteBranch(ctx context.Context, u *models.User, id string) error {
	if _, err := s.store.Branch(ctx, u, id); err != nil {
		return err
	}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("branch_id = ?", id).Delete(&models.BranchStep{}).Error; err != nil {
			return fmt.Errorf("delete the steps of branch %s: %w", id, err)
		}
		// A branch being applied is refused, unless its claim expired.
		res := tx.Where("id = ? AND (status <> ? OR updated_at < ?)", id, models.BranchApplying, time.Now().UTC().Add(-s.claimTTL())).
			Delete(&models.Branch{})
		if res.Error != nil {
			return fmt.Errorf("delete branch %s: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return apperr.New(apperr.Conflict, "branch %s is being applied", id)
		}
		return nil
	})
}

// WhatIfPreview is a succeeded what-if's preview, typed.
type WhatIfPreview struct {
	Objects       []whatif.ObjectChange        `json:"objects"`
	Links         []whatif.LinkChange          `json:"links"`
	Notifications []whatif.NotificationPreview `json:"notifications"`
	Effect        json.RawMessage              `json:"effect"`
}

// Preview decodes the preview the what-if's step recorded (nil when the
// what-if stacked no step: refused, or still running).
func (r *WhatIfResult) Preview() (*WhatIfPreview, error) {
	if r.Step == nil {
		return nil, nil
	}
	b, err := json.Marshal(r.Step.Preview.V)
	if err != nil {
		return nil, fmt.Errorf("encode the preview of %s: %w", r.Execution.ID, err)
	}
	var p WhatIfPreview
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decode the preview of %s: %w", r.Execution.ID, err)
	}
	return &p, nil
}

// DropBranch deletes the branch a what-if opened for a one-off preview
// (the console's), so previews leave no branches behind; the what-if
// execution stays in the action log.
func (s *Service) DropBranch(ctx context.Context, u *models.User, r *WhatIfResult) {
	if !r.Created || r.Dropped {
		return
	}
	if err := s.DeleteBranch(context.WithoutCancel(ctx), u, r.Branch.ID); err != nil {
		slog.WarnContext(ctx, "drop a preview's branch", "branch", r.Branch.ID, "err", err)
	}
}
