package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/execstore"
	"github.com/ontoflow/ontoflow/models"
)

// What-if: an execution of kind what-if runs the same workflow and steps
// as execute — validate, authorize, run — but its run step never commits
// an edit to the ontology. It opens a transaction, replays the branch's
// recorded edits, runs the operation's Apply over them (so the action sees
// the branch's state), reads every touched object after and (through a
// savepoint) before, and rolls the whole transaction back. A second,
// short transaction then records the step on the branch and the
// execution as succeeded, exactly once under the execution's row lock,
// as Run records an execution. Side effects are previewed: the effect by
// the kind's EffectPreviewer, the notifications rendered per channel and
// recipient and kept with the step, never delivered.

// BranchReplayer is what what-if needs of the ontology beyond Ontology:
// re-applying a branch's recorded edits inside a transaction
// (ontology.Store implements it).
type BranchReplayer interface {
	ReplayEdits(ctx context.Context, tx *gorm.DB, edits []models.Edit) error
}

// WhatIfObject is an object as a what-if shows it.
type WhatIfObject struct {
	ID           string         `json:"id"`
	ObjectTypeID string         `json:"object_type_id"`
	Properties   map[string]any `json:"properties"`
	Marking      string         `json:"marking"`
	Organization string         `json:"organization,omitempty"`
	CreatedBy    string         `json:"created_by,omitempty"`
}

// PropertyDiff is one property whose value differs.
type PropertyDiff struct {
	Property string `json:"property"`
	Before   any    `json:"before"`
	After    any    `json:"after"`
}

// ObjectChange is one touched object: its state before and after (nil:
// absent), and the properties that differ, for a UI to render.
type ObjectChange struct {
	ObjectID     string         `json:"object_id"`
	ObjectTypeID string         `json:"object_type_id"`
	Change       string         `json:"change"` // created, updated, deleted
	Before       *WhatIfObject  `json:"before"`
	After        *WhatIfObject  `json:"after"`
	Diff         []PropertyDiff `json:"diff"`
}

// LinkChange is a link created or deleted.
type LinkChange struct {
	Change     string `json:"change"` // created, deleted
	LinkID     string `json:"link_id"`
	LinkTypeID string `json:"link_type_id"`
	SourceID   string `json:"source_object_id"`
	TargetID   string `json:"target_object_id"`
}

// NotificationPreview is one notification a what-if would send.
type NotificationPreview struct {
	Channel    string         `json:"channel"`
	SideEffect int            `json:"side_effect"`
	Recipient  string         `json:"recipient_id"`
	Username   string         `json:"recipient"`
	Title      string         `json:"title"`
	Body       string         `json:"body"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Object changes.
const (
	Created = "created"
	Updated = "updated"
	Deleted = "deleted"
)

// whatIfRequest marks a what-if execution's request and loads its
// branch's edits.
func (e *Engine) whatIfRequest(ctx context.Context, ex *models.Execution, r *Request) error {
	if ex.Kind != models.KindWhatIf {
		return nil
	}
	if ex.BranchID == nil {
		return apperr.New(apperr.Internal, "what-if execution %s names no branch", ex.ID)
	}
	steps, err := e.branchSteps(ctx, e.db, *ex.BranchID)
	if err != nil {
		return err
	}
	r.WhatIf, r.BranchSteps = true, len(steps)
	for _, st := range steps {
		r.Branch = append(r.Branch, st.Edits.V...)
	}
	return nil
}

func (e *Engine) branchSteps(ctx context.Context, db *gorm.DB, branchID string) ([]models.BranchStep, error) {
	var steps []models.BranchStep
	// Only what replaying needs: the previews are the larger columns.
	q := db.WithContext(ctx).Select("id", "position", "edits", "reads")
	if err := q.Where("branch_id = ?", branchID).Order("position").Find(&steps).Error; err != nil {
		return nil, fmt.Errorf("read the steps of branch %s: %w", branchID, err)
	}
	return steps, nil
}

// overlay is object id (o as the main ontology has it, nil when absent)
// as the branch's edits leave it. Reads that need no transaction (the
// target of validate and authorize, references) use it; the run step
// replays the edits for real.
func overlay(o *Object, id string, edits []models.Edit) *Object {
	if o != nil {
		c := *o
		c.Properties = cloneProps(o.Properties)
		o = &c
	}
	for _, ed := range edits {
		if ed.ObjectID != id {
			continue
		}
		switch ed.Op {
		case models.EditCreateObject:
			o = &Object{ID: id, ObjectTypeID: ed.ObjectTypeID, Properties: cloneProps(ed.After), Marking: ed.Marking,
				Organization: ed.Organization, CreatedBy: ed.CreatedBy}
		case models.EditUpdateObject:
			if o == nil {
				continue
			}
			for k, v := range ed.After {
				if v == nil {
					delete(o.Properties, k)
				} else {
					o.Properties[k] = v
				}
			}
		case models.EditDeleteObject:
			o = nil
		}
	}
	return o
}

// cloneProps copies props (never nil, so updates can write to it).
func cloneProps(props map[string]any) map[string]any {
	out := maps.Clone(props)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// branchResolver resolves references as the branch shows objects.
func (e *Engine) branchResolver(ctx context.Context, actor *models.User, edits []models.Edit) func(objectTypeID, id string) (bool, error) {
	return func(objectTypeID, id string) (bool, error) {
		o, err := e.onto.Object(ctx, nil, id)
		if err != nil {
			return false, err
		}
		o = overlay(o, id, edits)
		if o == nil || (objectTypeID != "" && o.ObjectTypeID != objectTypeID) {
			return false, nil
		}
		return e.onto.CanRead(actor, o.Marking, o.Organization), nil
	}
}

// simulation is what a what-if's operation did in the rolled-back
// transaction.
type simulation struct {
	// effect is the previewed effect (nil for kinds without one).
	effect        json.RawMessage
	edits         []models.Edit
	result        map[string]any
	before, after map[string]*Object
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
	steps, err := e.branchSteps(ctx, e.db, *ex0.BranchID)
	if err != nil {
		return nil, err
	}
	if len(steps) != in.BranchSteps {
		// Validated over fewer steps than the branch now has: the retry
		// validates again over all of them.
		return nil, errBranchMoved
	}
	sim, err := e.simulate(ctx, kind, op, &in, steps)
	if err != nil {
		return nil, err
	}
	preview := e.whatIfPreview(ctx, ex0, &in, sim, sim.effect)
	reads, err := e.branchReads(ctx, &in, steps, sim.edits)
	if err != nil {
		return nil, err
	}
	out, done, err := e.recordWhatIf(ctx, ex0, &in, len(steps), sim, preview, reads)
	if err != nil {
		return nil, err
	}
	if done != nil {
		e.finished(done, models.StatusSucceeded)
	}
	e.settle(ex0.ID)
	return out, nil
}

// previewEffect describes the effect of an effect kind without performing
// it (nil for other kinds; JSON null for an effect kind that cannot
// describe its effect: previewed as having none).
func previewEffect(ctx context.Context, kind Kind, op *Op) (json.RawMessage, error) {
	if _, ok := kind.(EffectKind); !ok {
		return nil, nil
	}
	pv, ok := kind.(EffectPreviewer)
	if !ok {
		return json.RawMessage("null"), nil
	}
	r, err := pv.PreviewEffect(ctx, op)
	if err != nil {
		return nil, fmt.Errorf("preview the effect of %s: %w", op.Action.Name, err)
	}
	return r, nil
}

// errRollback ends the simulation's transaction.
var errRollback = errors.New("what-if: roll back")

// simulate replays the branch and applies the operation in one
// transaction that is always rolled back, and reads every object the
// operation touched after the operation and, back at a savepoint, before
// it. Nothing here waits on anything outside the transaction: on SQLite it
// holds the database's write lock.
func (e *Engine) simulate(ctx context.Context, kind Kind, op *Op, in *input, steps []models.BranchStep) (*simulation, error) {
	rp, ok := e.onto.(BranchReplayer)
	if !ok {
		return nil, apperr.New(apperr.OperationNotSupported, "what-if needs an ontology that can replay branches")
	}
	var edits []models.Edit
	for _, st := range steps {
		edits = append(edits, st.Edits.V...)
	}
	sim := &simulation{}
	err := e.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := rp.ReplayEdits(ctx, tx, edits); err != nil {
			return err
		}
		target, err := e.reloadTarget(ctx, tx, in)
		if err != nil {
			return err
		}
		if err := tx.SavePoint("whatif").Error; err != nil {
			return fmt.Errorf("what-if savepoint: %w", err)
		}
		op.Target, op.Tx = target, tx
		// The effect is previewed here, over the branch: a function reads
		// the objects as the earlier steps left them (through op.Tx), and
		// the stale-read check of its Apply compares within the same
		// transaction. A preview does no I/O (a function runs with network
		// refused, bounded by its time limit).
		if sim.effect, err = previewEffect(ctx, kind, op); err != nil {
			return err
		}
		op.Effect = sim.effect
		out, err := kind.Apply(ctx, op)
		if err != nil {
			return err
		}
		sim.edits, sim.result = out.Edits, out.Result
		ids := Touched(out.Edits)
		if sim.after, err = e.readAll(ctx, tx, ids); err != nil {
			return err
		}
		if err := tx.RollbackTo("whatif").Error; err != nil {
			return fmt.Errorf("what-if rollback to savepoint: %w", err)
		}
		if sim.before, err = e.readAll(ctx, tx, ids); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		return nil, err
	}
	return sim, nil
}

// reloadTarget reads the target inside tx, as the branch leaves it.
func (e *Engine) reloadTarget(ctx context.Context, tx *gorm.DB, in *input) (*Object, error) {
	if in.Target == nil {
		return nil, nil
	}
	t, err := e.onto.Object(ctx, tx, in.Target.ID)
	if err != nil {
		return nil, fmt.Errorf("reload target in the branch: %w", err)
	}
	if t == nil {
		return nil, apperr.New(apperr.ObjectNotFound, "object %q not found", in.Target.ID)
	}
	return t, nil
}

// Touched lists the objects edits changed, in order of first mention
// (the what-if preview's objects, and a branch's diff).
func Touched(edits []models.Edit) []string {
	var ids []string
	seen := map[string]bool{}
	for _, ed := range edits {
		if ed.ObjectID != "" && !seen[ed.ObjectID] {
			seen[ed.ObjectID] = true
			ids = append(ids, ed.ObjectID)
		}
	}
	return ids
}

func (e *Engine) readAll(ctx context.Context, tx *gorm.DB, ids []string) (map[string]*Object, error) {
	out := map[string]*Object{}
	for _, id := range ids {
		o, err := e.onto.Object(ctx, tx, id)
		if err != nil {
			return nil, fmt.Errorf("read %s in the branch: %w", id, err)
		}
		out[id] = o
	}
	return out, nil
}

// whatIfPreview is what the user sees of a what-if: the touched objects
// before and after (the read rule applied: an object the actor may not
// read shows its id only), links, the notifications and the effect.
func (e *Engine) whatIfPreview(ctx context.Context, ex *models.Execution, in *input, sim *simulation, effect json.RawMessage) map[string]any {
	canRead := func(marking, org string) bool { return e.onto.CanRead(in.Actor, marking, org) }
	objects := []ObjectChange{}
	for _, id := range Touched(sim.edits) {
		objects = append(objects, ChangeOf(canRead, id, sim.before[id], sim.after[id]))
	}
	notes, outcomes := e.previewNotifications(ctx, ex, in, sim)
	p := map[string]any{"objects": objects, "links": LinkChanges(sim.edits), "notifications": notes,
		"notification_outcomes": outcomes}
	if len(sim.result) > 0 {
		p["operation_result"] = sim.result
	}
	if len(effect) > 0 && string(effect) != "null" {
		p["effect"] = effect
	}
	return p
}

// ChangeOf describes object id before and after a change (nil: absent);
// an object canRead refuses (before or after) shows its id and type only.
func ChangeOf(canRead func(marking, organization string) bool, id string, before, after *Object) ObjectChange {
	c := ObjectChange{ObjectID: id, Change: Updated, Diff: []PropertyDiff{}}
	switch {
	case before == nil:
		c.Change = Created
	case after == nil:
		c.Change = Deleted
	}
	for _, o := range []*Object{before, after} {
		if o == nil {
			continue
		}
		c.ObjectTypeID = o.ObjectTypeID
		if !canRead(o.Marking, o.Organization) {
			return c
		}
	}
	c.Before, c.After = whatIfObject(before), whatIfObject(after)
	c.Diff = diffProps(props(before), props(after))
	return c
}

func whatIfObject(o *Object) *WhatIfObject {
	if o == nil {
		return nil
	}
	return &WhatIfObject{ID: o.ID, ObjectTypeID: o.ObjectTypeID, Properties: o.Properties, Marking: o.Marking,
		Organization: o.Organization, CreatedBy: o.CreatedBy}
}

func props(o *Object) map[string]any {
	if o == nil {
		return nil
	}
	return o.Properties
}

// diffProps lists the properties whose values differ, by name.
func diffProps(before, after map[string]any) []PropertyDiff {
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	out := []PropertyDiff{}
	for k := range keys {
		if !reflect.DeepEqual(before[k], after[k]) {
			out = append(out, PropertyDiff{Property: k, Before: before[k], After: after[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Property < out[j].Property })
	return out
}

// LinkChanges lists the links edits created and deleted (with a deleted
// object, or by an inverse).
func LinkChanges(edits []models.Edit) []LinkChange {
	out := []LinkChange{}
	for _, ed := range edits {
		switch ed.Op {
		case models.EditCreateLink, models.EditDeleteLink:
			ch := Created
			if ed.Op == models.EditDeleteLink {
				ch = Deleted
			}
			out = append(out, LinkChange{Change: ch, LinkID: ed.LinkID, LinkTypeID: ed.LinkTypeID, SourceID: ed.SourceID, TargetID: ed.TargetID})
		case models.EditDeleteObject:
			for _, l := range ed.Links {
				out = append(out, LinkChange{Change: Deleted, LinkID: l.ID, LinkTypeID: l.LinkTypeID, SourceID: l.SourceID, TargetID: l.TargetID})
			}
		}
	}
	return out
}

// previewNotifications renders every channel's notifications as a
// delivery would — per recipient, with that recipient's read rule — over
// the branch's before and after, without delivering any.
func (e *Engine) previewNotifications(ctx context.Context, ex *models.Execution, in *input, sim *simulation) ([]NotificationPreview, []models.NotificationOutcome) {
	notes := []NotificationPreview{}
	var outcomes []models.NotificationOutcome
	if len(in.Action.Config.NotificationSideEffects) == 0 {
		return notes, outcomes
	}
	var before, after *Object
	if in.Target != nil {
		before = sim.before[in.Target.ID]
	}
	if ids := Touched(sim.edits); len(ids) > 0 {
		after = sim.after[ids[0]]
	}
	x := *ex
	x.Parameters = models.NewNumJSON(in.Params)
	for _, ch := range Channels(in.Action) {
		msgs, outs := e.messagesFor(ctx, &x, in.Action, in.Actor, ch, before, after)
		for _, m := range msgs {
			notes = append(notes, NotificationPreview{Channel: ch, SideEffect: m.SideEffect, Recipient: m.Recipient.ID,
				Username: m.Recipient.Username, Title: m.Title, Body: m.Body, Metadata: m.Metadata})
		}
		for _, o := range outs {
			if o.Status == Delivered {
				o.Status = "previewed"
			}
			outcomes = append(outcomes, o)
		}
	}
	return notes, outcomes
}

// branchReads are the objects this step read from the main ontology — the
// target and every object its edits name, unless an earlier step already
// read or changed it (then this step saw the branch's version) or this
// step created it — with the update time each has there now. Apply
// refuses when one of them changed since. They are read right after the
// simulation: a change in between is not seen.
func (e *Engine) branchReads(ctx context.Context, in *input, steps []models.BranchStep, edits []models.Edit) ([]models.BranchRead, error) {
	known := map[string]bool{}
	for _, st := range steps {
		for _, r := range st.Reads.V {
			known[r.ObjectID] = true
		}
		for _, id := range mentioned(st.Edits.V) {
			known[id] = true
		}
	}
	for _, ed := range edits {
		if ed.Op == models.EditCreateObject {
			known[ed.ObjectID] = true
		}
	}
	ids := mentioned(edits)
	if in.Target != nil {
		ids = append([]string{in.Target.ID}, ids...)
	}
	reads := []models.BranchRead{}
	for _, id := range ids {
		if known[id] {
			continue
		}
		known[id] = true
		o, err := e.onto.Object(ctx, nil, id)
		if err != nil {
			return nil, fmt.Errorf("read %s on the main ontology: %w", id, err)
		}
		r := models.BranchRead{ObjectID: id}
		if o != nil {
			r.UpdatedAt = TimePtr(o.UpdatedAt)
		}
		reads = append(reads, r)
	}
	return reads, nil
}

// mentioned lists every object edits name (changed objects and link ends).
func mentioned(edits []models.Edit) []string {
	var out []string
	for _, ed := range edits {
		for _, id := range []string{ed.ObjectID, ed.SourceID, ed.TargetID} {
			if id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// errBranchMoved asks the step to run again: another step was stacked on
// the branch while this one ran over the branch without it.
var errBranchMoved = errors.New("another execution was stacked on the branch meanwhile; running again over it")

// recordWhatIf records the step on the branch and the execution as
// succeeded, in one transaction that first locks the execution row (a
// retried step finds it succeeded and answers from the record) and then
// the branch row (stacking is serialized: a step replayed over replayed
// steps that are no longer the branch's last is run again).
func (e *Engine) recordWhatIf(ctx context.Context, ex0 *models.Execution, in *input, replayed int, sim *simulation, preview map[string]any, reads []models.BranchRead) (*Outcome, *models.Execution, error) {
	var out *Outcome
	var done *models.Execution
	err := e.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ex, err := e.execs.Lock(ctx, tx, ex0.ID)
		if err != nil {
			return err
		}
		if finished(ex) {
			out = &Outcome{Edits: ex.Edits.V, Result: ex.Result.V}
			return replayOutcome(ex)
		}
		b, err := lockBranch(tx, *ex.BranchID)
		if err != nil {
			return err
		}
		if b.Steps != replayed {
			return errBranchMoved
		}
		st := models.BranchStep{ID: uuid.NewString(), BranchID: b.ID, Position: b.Steps + 1, ExecutionID: ex.ID,
			ActionTypeID: in.Action.ID, ActionTypeName: in.Action.Name, TargetObjectID: ex.TargetObjectID,
			Parameters: ex.Parameters, Justification: ex.Justification, Edits: models.NewNumJSON(sim.edits),
			Reads: models.NewJSON(reads), Preview: models.NewNumJSON(preview)}
		if err := tx.Create(&st).Error; err != nil {
			return fmt.Errorf("record step %d of branch %s: %w", st.Position, b.ID, err)
		}
		if err := tx.Model(b).Updates(map[string]any{"steps": st.Position, "updated_at": e.now()}).Error; err != nil {
			return fmt.Errorf("record branch %s: %w", b.ID, err)
		}
		out = &Outcome{Edits: sim.edits, Result: map[string]any{"branch_id": b.ID, "position": st.Position}}
		done, err = e.recordSucceeded(ctx, tx, ex, in, out)
		return err
	})
	return out, done, err
}

// lockBranch reads an open, unexpired branch row inside tx, locking it on
// Postgres (SQLite runs one write transaction at a time).
func lockBranch(tx *gorm.DB, id string) (*models.Branch, error) {
	var b models.Branch
	err := lockForUpdate(tx).Take(&b, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && !time.Now().Before(b.ExpiresAt)) {
		return nil, apperr.New(apperr.BranchNotFound, "branch %q not found (deleted or expired)", id)
	}
	if err != nil {
		return nil, fmt.Errorf("lock branch %s: %w", id, err)
	}
	if b.Status != models.BranchOpen {
		return nil, apperr.New(apperr.Conflict, "branch %s is %s: nothing more can be stacked on it", id, b.Status)
	}
	return &b, nil
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
