// Package whatif runs what-if executions: an execution of kind what-if
// runs the same workflow and steps as execute — validate, authorize, run —
// but its run step never commits an edit to the ontology. It opens a
// transaction, replays the branch's recorded edits, runs the operation's
// Apply over them (so the action sees the branch's state), reads every
// touched object after and (through a savepoint) before, and rolls the
// whole transaction back. A second, short transaction then records the
// step on the branch and the execution as succeeded, exactly once under
// the execution's row lock, as Run records an execution. Side effects are
// previewed: the effect by the kind's EffectPreviewer, the notifications
// rendered per channel and recipient and kept with the step, never
// delivered.
//
// The engine core calls it through engine.Branches (engine.Deps.Branches,
// wired by app): at validate, to see the target and references through
// the branch, and at run.
package whatif

import (
	"context"
	"fmt"
	"maps"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// Ontology is what what-if needs of the ontology store: reads with the
// read rule (through In, inside the run's transaction or, with nil,
// outside any), and re-applying a branch's recorded edits inside a
// transaction (ontology.Store implements it).
type Ontology interface {
	In(tx models.Tx) engine.OntologyTx
	CanRead(u *models.User, marking, organization string) bool
	ReplayEdits(ctx context.Context, tx *gorm.DB, edits []models.Edit) error
}

// Branches implements engine.Branches over the branches' rows in db.
type Branches struct {
	db   *gorm.DB
	onto Ontology
	now  func() time.Time
}

var _ engine.Branches = (*Branches)(nil)

// New returns the what-if of the engine over db and onto.
func New(db *gorm.DB, onto Ontology) *Branches {
	return &Branches{db: db, onto: onto, now: func() time.Time { return time.Now().UTC() }}
}

// Request marks a what-if execution's request and loads its branch's
// edits.
func (b *Branches) Request(ctx context.Context, ex *models.Execution, r *engine.Request) error {
	if ex.BranchID == nil {
		return apperr.New(apperr.Internal, "what-if execution %s names no branch", ex.ID)
	}
	steps, err := b.steps(ctx, *ex.BranchID)
	if err != nil {
		return err
	}
	r.WhatIf, r.BranchSteps = true, len(steps)
	for _, st := range steps {
		r.Branch = append(r.Branch, st.Edits.V...)
	}
	return nil
}

// steps reads the steps of branch branchID, in order.
func (b *Branches) steps(ctx context.Context, branchID string) ([]models.BranchStep, error) {
	var steps []models.BranchStep
	// Only what replaying needs: the previews are the larger columns.
	q := b.db.WithContext(ctx).Select("id", "position", "edits", "reads")
	if err := q.Where("branch_id = ?", branchID).Order("position").Find(&steps).Error; err != nil {
		return nil, fmt.Errorf("read the steps of branch %s: %w", branchID, err)
	}
	return steps, nil
}

// Overlay is object id (o as the main ontology has it, nil when absent)
// as the branch's edits leave it. Reads that need no transaction (the
// target of validate and authorize, references) use it; the run step
// replays the edits for real.
func (*Branches) Overlay(o *engine.Object, id string, edits []models.Edit) *engine.Object {
	return overlay(o, id, edits)
}

func overlay(o *engine.Object, id string, edits []models.Edit) *engine.Object {
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
			o = &engine.Object{ID: id, ObjectTypeID: ed.ObjectTypeID, Properties: cloneProps(ed.After), Marking: ed.Marking,
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

// Resolver resolves references as the branch shows objects.
func (b *Branches) Resolver(ctx context.Context, actor *models.User, edits []models.Edit) func(objectTypeID, id string) (bool, error) {
	return func(objectTypeID, id string) (bool, error) {
		o, err := b.onto.In(models.Tx{}).Object(ctx, id)
		if err != nil {
			return false, err
		}
		o = overlay(o, id, edits)
		if o == nil || (objectTypeID != "" && o.ObjectTypeID != objectTypeID) {
			return false, nil
		}
		return b.onto.CanRead(actor, o.Marking, o.Organization), nil
	}
}
