// Package execstore is the execution store: the only code that writes
// models.Execution rows — creating them, moving their status, recording
// their outcome, deliveries and revert link. Adding a status or a column
// means changing this package alone (owner_test.go checks that no other
// package writes the rows).
//
// Two rules hold on every write. A status change is guarded by the status
// it expects, in the same statement, so a retried step, a replayed
// workflow or a racing sweep never moves a row that already moved. And a
// write that must commit with an operation's edits (success, a revert,
// deliveries recorded with in-app notifications) takes the transaction
// the caller holds, in which the caller first locked the row with Lock:
// the edits and the status change commit together or not at all, so they
// happen exactly once.
//
// The store also keeps the rollups of the rows' counts and durations
// (rollup.go) in the transaction of each create and status change.
package execstore

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/models"
)

// Store writes execution rows.
type Store struct{ db *gorm.DB }

// New returns a Store over db.
func New(db *gorm.DB) *Store { return &Store{db: db} }

// Run is the workflow run executing a step, which a status change records
// on the row it finishes (nil: the caller did not say).
type Run struct{ WorkflowID, RunID string }

// ownRun is the run id column after a write by run r, in SQL since the
// row is not loaded: only the execution's own workflow records its run
// (not a batch chunk running an item), and only once.
func ownRun(r *Run) clause.Expr {
	return gorm.Expr("CASE WHEN workflow_id = ? AND (run_id IS NULL OR run_id = '') THEN ? ELSE run_id END", r.WorkflowID, r.RunID)
}

// finishedStatuses are the statuses a row never leaves.
var finishedStatuses = []string{models.StatusSucceeded, models.StatusFailed}

// Failure is how an execution failed.
type Failure struct {
	Code, Message string
	// Details is recorded as the row's error details (nil: the column is
	// left as it is).
	Details any
	At      time.Time
}

// cols are the columns of a row recorded failed with f.
func (f Failure) cols() map[string]any {
	at := f.At
	cols := map[string]any{"status": models.StatusFailed, "error_code": f.Code, "error_message": f.Message, "finished_at": &at}
	if f.Details != nil {
		cols["error_details"] = models.NewJSON[any](f.Details)
	}
	return cols
}

// Create records a new execution (the request, before its workflow
// starts). A key already used by the actor is gorm.ErrDuplicatedKey
// (wrapped), which the caller answers from the row that holds it.
func (s *Store) Create(ctx context.Context, ex *models.Execution) error {
	stampTrace(ctx, ex)
	var err error
	if models.IsPostgres(s.db) {
		err = s.createOne(ctx, ex)
	} else {
		err = s.inTx(ctx, func(tx *gorm.DB) error {
			if err := tx.Create(ex).Error; err != nil {
				return err
			}
			d := deltas{}
			d.addRow(ex, 1)
			return d.apply(ctx, tx)
		})
	}
	if err != nil {
		return fmt.Errorf("record execution %s: %w", ex.ID, err)
	}
	return nil
}

// pgParam is a bound parameter in a statement gorm rendered for
// Postgres.
var pgParam = regexp.MustCompile(`\$[0-9]+`)

// createOne is Create on Postgres: the INSERT and its counts as one
// statement (applyAfter), without a transaction of its own: one round
// trip where BEGIN, the INSERT, the counts and COMMIT took four. gorm
// renders the INSERT (DryRun, which also stamps CreatedAt, which the
// counts need; without its default transaction, which a dry run still
// begins and commits: two round trips) with Postgres' $n, turned back
// into its ? to sit among the counts' parameters.
func (s *Store) createOne(ctx context.Context, ex *models.Execution) error {
	stmt := s.db.WithContext(ctx).Session(&gorm.Session{DryRun: true, NewDB: true, SkipDefaultTransaction: true}).Create(ex).Statement
	if stmt.Error != nil {
		return stmt.Error
	}
	g := guard{sql: pgParam.ReplaceAllString(stmt.SQL.String(), "?"), vals: stmt.Vars}
	d := deltas{}
	d.addRow(ex, 1)
	_, err := d.applyAfter(ctx, s.db, g)
	return err
}

// CreateBatch records a batch and its items in one transaction.
func (s *Store) CreateBatch(ctx context.Context, batch *models.Execution, items []models.Execution) error {
	stampTrace(ctx, batch)
	for i := range items {
		stampTrace(ctx, &items[i])
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(batch).Error; err != nil {
			return err
		}
		if err := tx.CreateInBatches(items, 500).Error; err != nil {
			return err
		}
		d := deltas{}
		d.addRow(batch, 1)
		for i := range items {
			d.addRow(&items[i], 1)
		}
		return d.apply(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("record batch %s: %w", batch.ID, err)
	}
	return nil
}

// MarkRunning moves a queued execution to running at at, with run's id
// when it is the execution's own workflow. A row already running or
// finished is left alone.
func (s *Store) MarkRunning(ctx context.Context, id string, at time.Time, run *Run) error {
	cols := map[string]any{"status": models.StatusRunning, "started_at": &at}
	if run != nil {
		cols["run_id"] = ownRun(run)
	}
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		_, err := move(ctx, tx, cols, "id = ? AND status = ?", id, models.StatusQueued)
		return err
	})
	if err != nil {
		return fmt.Errorf("record execution %s running: %w", id, err)
	}
	return nil
}

// Start is MarkRunning for ex, a row the caller has just read: it moves
// queued to running without reading the row again. The guard on status
// makes the old status known, and the columns that place a row in the
// rollup (action, actor, creation hour, error code) do not change while
// it is queued, so ex's copy of them counts it right. Each execution's
// first step calls this, so it is one UPDATE and one upsert rather than
// MarkRunning's locked read, UPDATE and upsert. ex is updated when it
// moved.
func (s *Store) Start(ctx context.Context, ex *models.Execution, at time.Time, run *Run) error {
	if ex.Status != models.StatusQueued {
		return nil
	}
	set, vals := "status = ?, started_at = ?", []any{models.StatusRunning, at}
	if run != nil {
		set += ", run_id = CASE WHEN workflow_id = ? AND (run_id IS NULL OR run_id = '') THEN ? ELSE run_id END"
		vals = append(vals, run.WorkflowID, run.RunID)
	}
	g := guard{sql: "UPDATE executions SET " + set + " WHERE id = ? AND status = ?", vals: append(vals, ex.ID, models.StatusQueued)}
	d := deltas{}
	d.addRow(ex, -1)
	d.add(keyOf(ex), rowCols{models.StatusRunning, ex.ErrorCode, ex.FinishedAt}, 1)
	moved, err := s.write(ctx, d, g)
	if err != nil {
		return fmt.Errorf("record execution %s running: %w", ex.ID, err)
	}
	if moved {
		ex.Status, ex.StartedAt = models.StatusRunning, &at
		if run != nil && ex.WorkflowID == run.WorkflowID && ex.RunID == "" {
			ex.RunID = run.RunID
		}
	}
	return nil
}

// write runs g and writes d if it changed a row, as one statement
// without a transaction of its own when the dialect allows (Postgres:
// one round trip, where BEGIN, the update, two upserts and COMMIT took
// five), else in a transaction; moved says whether g changed a row.
func (s *Store) write(ctx context.Context, d deltas, g guard) (moved bool, err error) {
	if rollup, totals := d.sorted(); oneStatement(s.db, rollup, totals) {
		return d.applyAfter(ctx, s.db, g)
	}
	err = s.inTx(ctx, func(tx *gorm.DB) (err error) {
		moved, err = d.applyAfter(ctx, tx, g)
		return err
	})
	return moved, err
}

// Lock reads an execution row inside tx, locking it until tx ends on
// Postgres (SQLite runs one write transaction at a time). Every write in
// tx that depends on the row's status comes after it.
func (s *Store) Lock(ctx context.Context, tx *gorm.DB, id string) (*models.Execution, error) {
	q := tx.WithContext(ctx)
	if models.IsPostgres(q) {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var ex models.Execution
	if err := q.Take(&ex, "id = ?", id).Error; err != nil {
		return nil, fmt.Errorf("lock execution %s: %w", id, err)
	}
	return &ex, nil
}

// Success is what a succeeded execution records.
type Success struct {
	At     time.Time
	Edits  []models.Edit
	Result map[string]any
	// Ran, for an execution that ran an action (not a revert), is the
	// action version and the materialized parameters it ran with.
	Ran *Ran
	// RunID is the run to record ("" = leave the column).
	RunID string
}

// Ran is what an execution ran: its action's version and parameters.
type Ran struct {
	ActionVersion int
	Parameters    map[string]any
}

// Succeed records ex (locked in tx by Lock) succeeded with s, inside tx,
// so the status change commits with the operation's edits. ex is updated
// to the row as written.
func (s *Store) Succeed(ctx context.Context, tx *gorm.DB, ex *models.Execution, r Success) error {
	at := r.At
	d := deltas{}
	d.addRow(ex, -1)
	ex.Status, ex.FinishedAt = models.StatusSucceeded, &at
	d.addRow(ex, 1)
	set, vals := []string{"status = ?", "finished_at = ?"}, []any{ex.Status, at}
	if r.Ran != nil {
		ex.ActionVersion = r.Ran.ActionVersion
		set, vals = append(set, "action_version = ?"), append(vals, ex.ActionVersion)
	}
	ex.Edits, ex.Result = models.NewNumJSON(r.Edits), models.NewJSON(r.Result)
	set, vals = append(set, "edits = ?", "result = ?"), append(vals, ex.Edits, ex.Result)
	if r.Ran != nil {
		ex.Parameters = models.NewNumJSON(r.Ran.Parameters)
		set, vals = append(set, "parameters = ?"), append(vals, ex.Parameters)
	}
	if r.RunID != "" {
		ex.RunID = r.RunID
		set, vals = append(set, "run_id = ?"), append(vals, ex.RunID)
	}
	// The update and the counts in one statement on Postgres (applyAfter).
	g := guard{sql: "UPDATE executions SET " + strings.Join(set, ", ") + " WHERE id = ?", vals: append(vals, ex.ID)}
	moved, err := d.applyAfter(ctx, tx, g)
	if err == nil && !moved {
		err = fmt.Errorf("no row %s to update", ex.ID)
	}
	if err != nil {
		return fmt.Errorf("record execution %s: %w", ex.ID, err)
	}
	return nil
}

// MarkReverted links execution id to the revert that undid it, inside the
// revert's transaction (tx, in which both rows are locked).
func (s *Store) MarkReverted(ctx context.Context, tx *gorm.DB, id, revertID string) error {
	if err := tx.WithContext(ctx).Model(&models.Execution{}).Where("id = ?", id).Update("reverted_by", revertID).Error; err != nil {
		return fmt.Errorf("mark %s reverted: %w", id, err)
	}
	return nil
}

// RecordDeliveries records an execution's delivery outcomes (all of them
// so far) inside tx, in which the caller locked the row and checked that
// this channel's were not recorded yet; notifiedAt, when set, says every
// channel is done.
func (s *Store) RecordDeliveries(ctx context.Context, tx *gorm.DB, id string, outcomes []models.NotificationOutcome, notifiedAt *time.Time) error {
	cols := map[string]any{"notifications": models.NewJSON(outcomes)}
	if notifiedAt != nil {
		cols["notified_at"] = notifiedAt
	}
	if err := tx.WithContext(ctx).Model(&models.Execution{}).Where("id = ?", id).Updates(cols).Error; err != nil {
		return fmt.Errorf("record delivery outcomes of %s: %w", id, err)
	}
	return nil
}

// Fail records an execution failed with f unless it already finished,
// with run's id when it is the execution's own workflow, and reports
// whether it did.
func (s *Store) Fail(ctx context.Context, id string, f Failure, run *Run) (bool, error) {
	cols := f.cols()
	if run != nil {
		cols["run_id"] = ownRun(run)
	}
	var moved int64
	err := s.inTx(ctx, func(tx *gorm.DB) (err error) {
		moved, err = move(ctx, tx, cols, "id = ? AND status NOT IN ?", id, finishedStatuses)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record failure of %s: %w", id, err)
	}
	return moved > 0, nil
}

// FailUnstarted records an execution whose workflow could not be started
// and will not be resumed failed with f: a single execution, or a batch
// with every item, in one write, so no row stays queued. Rows that
// already finished are left alone.
func (s *Store) FailUnstarted(ctx context.Context, id string, f Failure) error {
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		_, err := move(ctx, tx, f.cols(), "(id = ? OR batch_id = ?) AND status NOT IN ?", id, id, finishedStatuses)
		return err
	})
	if err != nil {
		return fmt.Errorf("record unstarted execution %s as failed: %w", id, err)
	}
	return nil
}

// Abandon records execution id (a batch with its items) failed with f if
// it is still queued without a run id — no workflow has taken it up — and
// reports whether it did. The check and the write are one statement.
func (s *Store) Abandon(ctx context.Context, id string, f Failure) (bool, error) {
	cols := f.cols()
	failed := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		d := deltas{}
		moved, err := moveCounting(ctx, tx, d, cols, "id = ? AND status = ? AND (run_id IS NULL OR run_id = '')", id, models.StatusQueued)
		if err != nil || moved == 0 {
			return err
		}
		failed = true
		if _, err = moveCounting(ctx, tx, d, cols, "batch_id = ? AND status NOT IN ?", id, finishedStatuses); err != nil {
			return err
		}
		return d.apply(ctx, tx)
	})
	if err != nil {
		return false, fmt.Errorf("record never-started execution %s as failed: %w", id, err)
	}
	return failed, nil
}

// FailOpenItems records every unfinished item of a batch failed with f
// (a batch closes with no open items).
func (s *Store) FailOpenItems(ctx context.Context, batchID string, f Failure) (int64, error) {
	var moved int64
	err := s.inTx(ctx, func(tx *gorm.DB) (err error) {
		moved, err = move(ctx, tx, f.cols(), "batch_id = ? AND status NOT IN ?", batchID, finishedStatuses)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("close open items of batch %s: %w", batchID, err)
	}
	return moved, nil
}

// CloseBatch records a batch finished with status at at, by run (the
// run that closes it; nil: not said), unless it already finished, and
// reports whether it did.
func (s *Store) CloseBatch(ctx context.Context, batchID, status string, at time.Time, run *Run) (bool, error) {
	cols := map[string]any{"status": status, "finished_at": &at}
	if run != nil {
		cols["run_id"] = run.RunID
	}
	var moved int64
	err := s.inTx(ctx, func(tx *gorm.DB) (err error) {
		moved, err = move(ctx, tx, cols, "id = ? AND finished_at IS NULL", batchID)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("close batch %s: %w", batchID, err)
	}
	return moved > 0, nil
}

// RecordParameters records the materialized parameters of a running
// execution as its validate step resolved them (media references pinned
// to a file version), so the later steps, on any worker, and the action
// log see the version validated. A row no longer running is left alone.
func (s *Store) RecordParameters(ctx context.Context, id string, params map[string]any) error {
	err := s.db.WithContext(ctx).Model(&models.Execution{}).Where("id = ? AND status = ?", id, models.StatusRunning).
		Update("parameters", models.NewNumJSON(params)).Error
	if err != nil {
		return fmt.Errorf("record the parameters of execution %s: %w", id, err)
	}
	return nil
}
