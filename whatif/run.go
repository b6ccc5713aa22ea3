package whatif

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// simulation is what a what-if's operation did in the rolled-back
// transaction.
type simulation struct {
	// effect is the previewed effect (nil for kinds without one).
	effect        json.RawMessage
	edits         []models.Edit
	result        map[string]any
	before, after map[string]*engine.Object
}

// Run is the run step of a what-if execution (run.Execution unfinished):
// the simulation over the branch, then the record of the step and of the
// execution. done is the row it recorded succeeded (nil when it answered
// the record).
func (b *Branches) Run(ctx context.Context, run *engine.BranchRun) (*engine.Outcome, *models.Execution, error) {
	steps, err := b.steps(ctx, *run.Execution.BranchID)
	if err != nil {
		return nil, nil, err
	}
	if len(steps) != run.BranchSteps {
		// Validated over fewer steps than the branch now has: the retry
		// validates again over all of them.
		return nil, nil, errBranchMoved
	}
	sim, err := b.simulate(ctx, run, steps)
	if err != nil {
		return nil, nil, err
	}
	preview := b.preview(ctx, run, sim)
	reads, err := b.reads(ctx, run, steps, sim.edits)
	if err != nil {
		return nil, nil, err
	}
	return b.record(ctx, run, len(steps), sim, preview, reads)
}

// previewEffect describes the effect of an effect kind without performing
// it (nil for other kinds; JSON null for an effect kind that cannot
// describe its effect: previewed as having none).
func previewEffect(ctx context.Context, kind engine.Kind, op *engine.Op) (json.RawMessage, error) {
	if _, ok := kind.(engine.EffectKind); !ok {
		return nil, nil
	}
	pv, ok := kind.(engine.EffectPreviewer)
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
func (b *Branches) simulate(ctx context.Context, run *engine.BranchRun, steps []models.BranchStep) (*simulation, error) {
	var edits []models.Edit
	for _, st := range steps {
		edits = append(edits, st.Edits.V...)
	}
	op := run.Op
	sim := &simulation{}
	err := b.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := b.onto.ReplayEdits(ctx, tx, edits); err != nil {
			return err
		}
		target, err := b.reloadTarget(ctx, tx, run.Target)
		if err != nil {
			return err
		}
		if err := tx.SavePoint("whatif").Error; err != nil {
			return fmt.Errorf("what-if savepoint: %w", err)
		}
		op.Target, op.Tx = target, models.InTx(tx)
		// The effect is previewed here, over the branch: a function reads
		// the objects as the earlier steps left them (through op.Tx), and
		// the stale-read check of its Apply compares within the same
		// transaction. A preview does no I/O (a function runs with network
		// refused, bounded by its time limit).
		if sim.effect, err = previewEffect(ctx, run.Kind, op); err != nil {
			return err
		}
		op.Effect = sim.effect
		out, err := run.Kind.Apply(ctx, op)
		if err != nil {
			return err
		}
		sim.edits, sim.result = out.Edits, out.Result
		ids := Touched(out.Edits)
		if sim.after, err = b.readAll(ctx, tx, ids); err != nil {
			return err
		}
		if err := tx.RollbackTo("whatif").Error; err != nil {
			return fmt.Errorf("what-if rollback to savepoint: %w", err)
		}
		if sim.before, err = b.readAll(ctx, tx, ids); err != nil {
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
func (b *Branches) reloadTarget(ctx context.Context, tx *gorm.DB, target *engine.Object) (*engine.Object, error) {
	if target == nil {
		return nil, nil
	}
	t, err := b.onto.In(models.InTx(tx)).Object(ctx, target.ID)
	if err != nil {
		return nil, fmt.Errorf("reload target in the branch: %w", err)
	}
	if t == nil {
		return nil, apperr.New(apperr.ObjectNotFound, "object %q not found", target.ID)
	}
	return t, nil
}

func (b *Branches) readAll(ctx context.Context, tx *gorm.DB, ids []string) (map[string]*engine.Object, error) {
	out := map[string]*engine.Object{}
	for _, id := range ids {
		o, err := b.onto.In(models.InTx(tx)).Object(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("read %s in the branch: %w", id, err)
		}
		out[id] = o
	}
	return out, nil
}

// reads are the objects this step read from the main ontology — the
// target and every object its edits name, unless an earlier step already
// read or changed it (then this step saw the branch's version) or this
// step created it — with the update time each has there now. Apply
// refuses when one of them changed since. They are read right after the
// simulation: a change in between is not seen.
func (b *Branches) reads(ctx context.Context, run *engine.BranchRun, steps []models.BranchStep, edits []models.Edit) ([]models.BranchRead, error) {
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
	if run.Target != nil {
		ids = append([]string{run.Target.ID}, ids...)
	}
	reads := []models.BranchRead{}
	for _, id := range ids {
		if known[id] {
			continue
		}
		known[id] = true
		o, err := b.onto.In(models.Tx{}).Object(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("read %s on the main ontology: %w", id, err)
		}
		r := models.BranchRead{ObjectID: id}
		if o != nil {
			r.UpdatedAt = engine.TimePtr(o.UpdatedAt)
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

// record records the step on the branch and the execution as succeeded,
// in one transaction that first locks the execution row (a retried step
// finds it succeeded and answers from the record) and then the branch row
// (stacking is serialized: a step replayed over replayed steps that are
// no longer the branch's last is run again).
func (b *Branches) record(ctx context.Context, run *engine.BranchRun, replayed int, sim *simulation, preview map[string]any, reads []models.BranchRead) (*engine.Outcome, *models.Execution, error) {
	var out *engine.Outcome
	var done *models.Execution
	err := b.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ex, recorded, err := run.Lock(ctx, tx)
		if recorded != nil || err != nil {
			out = recorded
			return err
		}
		br, err := lockBranch(tx, *ex.BranchID)
		if err != nil {
			return err
		}
		if br.Steps != replayed {
			return errBranchMoved
		}
		st := models.BranchStep{ID: uuid.NewString(), BranchID: br.ID, Position: br.Steps + 1, ExecutionID: ex.ID,
			ActionTypeID: run.Action.ID, ActionTypeName: run.Action.Name, TargetObjectID: ex.TargetObjectID,
			Parameters: ex.Parameters, Justification: ex.Justification, Edits: models.NewNumJSON(sim.edits),
			Reads: models.NewJSON(reads), Preview: models.NewNumJSON(preview)}
		if err := tx.Create(&st).Error; err != nil {
			return fmt.Errorf("record step %d of branch %s: %w", st.Position, br.ID, err)
		}
		if err := tx.Model(br).Updates(map[string]any{"steps": st.Position, "updated_at": b.now()}).Error; err != nil {
			return fmt.Errorf("record branch %s: %w", br.ID, err)
		}
		out = &engine.Outcome{Edits: sim.edits, Result: map[string]any{"branch_id": br.ID, "position": st.Position}}
		if err := run.Succeed(ctx, tx, ex, out); err != nil {
			return err
		}
		done = ex
		return nil
	})
	return out, done, err
}

// lockBranch reads an open, unexpired branch row inside tx, locking it on
// Postgres (SQLite runs one write transaction at a time).
func lockBranch(tx *gorm.DB, id string) (*models.Branch, error) {
	var b models.Branch
	err := engine.LockForUpdate(tx).Take(&b, "id = ?", id).Error
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
