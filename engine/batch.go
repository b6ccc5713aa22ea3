package engine

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// BatchTotals counts a batch's item outcomes.
type BatchTotals struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// Pending counts the items not finished yet; Running, those of them
	// whose first step has started.
	Pending int    `json:"pending"`
	Running int    `json:"running"`
	Status  string `json:"status"`
}

// Totals counts the items of a batch by status (progress while it runs,
// which clients poll): an index-only count over (batch_id, status).
func (e *Engine) Totals(ctx context.Context, batchID string) (*BatchTotals, error) {
	var rows []struct {
		Status string
		N      int
	}
	err := e.db.WithContext(ctx).Model(&models.Execution{}).Select("status, count(*) AS n").
		Where("batch_id = ?", batchID).Group("status").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count batch %s: %w", batchID, err)
	}
	t := &BatchTotals{}
	for _, r := range rows {
		t.Total += r.N
		switch r.Status {
		case models.StatusSucceeded:
			t.Succeeded += r.N
		case models.StatusFailed:
			t.Failed += r.N
		case models.StatusRunning:
			t.Running += r.N
			t.Pending += r.N
		default:
			t.Pending += r.N
		}
	}
	switch {
	case t.Pending > 0:
		t.Status = models.StatusRunning
	case t.Failed == 0:
		t.Status = models.StatusSucceeded
	case t.Succeeded == 0:
		t.Status = models.StatusFailed
	default:
		t.Status = models.StatusPartial
	}
	return t, nil
}

// ListBatchChunk lists the unfinished item executions of batch items
// [from, to), in order. A retried chunk skips what already finished.
func (e *Engine) ListBatchChunk(ctx context.Context, batchID string, from, to int) ([]string, error) {
	// The batch runs from its first chunk's first step.
	if err := e.MarkRunning(ctx, batchID); err != nil {
		return nil, err
	}
	var ids []string
	err := e.db.WithContext(ctx).Model(&models.Execution{}).
		Where("batch_id = ? AND batch_index >= ? AND batch_index < ? AND status NOT IN ?", batchID, from, to,
			[]string{models.StatusSucceeded, models.StatusFailed}).
		Order("batch_index").Pluck("id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("list batch %s items %d-%d: %w", batchID, from, to, err)
	}
	return ids, nil
}

// FinishBatch closes a batch row with its totals. Items still pending
// (their chunk gave up) are marked failed first, so a closed batch has no
// open items.
func (e *Engine) FinishBatch(ctx context.Context, batchID string) (*BatchTotals, error) {
	now := e.now()
	db := e.db.WithContext(ctx)
	closed := db.Model(&models.Execution{}).
		Where("batch_id = ? AND status NOT IN ?", batchID, []string{models.StatusSucceeded, models.StatusFailed}).
		Updates(map[string]any{"status": models.StatusFailed, "error_code": "Internal",
			"error_message": "the item's batch chunk gave up", "finished_at": &now})
	if closed.Error != nil {
		return nil, fmt.Errorf("close open items of batch %s: %w", batchID, closed.Error)
	}
	e.metrics.batchItems.WithLabelValues(models.StatusFailed).Add(float64(closed.RowsAffected))
	t, err := e.Totals(ctx, batchID)
	if err != nil {
		return nil, err
	}
	cols := map[string]any{"status": t.Status, "finished_at": &now}
	if r, ok := runOf(ctx); ok {
		// The run that closes the batch, in the write that closes it.
		cols["run_id"] = r.runID
	}
	res := db.Model(&models.Execution{}).Where("id = ? AND finished_at IS NULL", batchID).Updates(cols)
	if res.Error != nil {
		return nil, fmt.Errorf("close batch %s: %w", batchID, res.Error)
	}
	if res.RowsAffected > 0 {
		if ex, err := e.execution(ctx, e.db, batchID); err == nil {
			e.finished(ex, t.Status)
		}
	}
	return t, nil
}

// FailNeverStarted records execution id (a batch with its items) failed
// with f if it is still queued without a run id — no workflow has taken
// it up — and reports whether it did. The check and the write are one
// statement. A retry that started the workflow before the workflow's
// first step recorded its run id may still find the row failed: that
// workflow then answers from the failed record and applies nothing.
func (e *Engine) FailNeverStarted(ctx context.Context, id string, f Failure) (bool, error) {
	cols := e.failedCols(f)
	failed := false
	err := e.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&models.Execution{}).
			Where("id = ? AND status = ? AND (run_id IS NULL OR run_id = '')", id, models.StatusQueued).Updates(cols)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		failed = true
		return tx.Model(&models.Execution{}).
			Where("batch_id = ? AND status NOT IN ?", id, []string{models.StatusSucceeded, models.StatusFailed}).Updates(cols).Error
	})
	if err != nil {
		return false, fmt.Errorf("record never-started execution %s as failed: %w", id, err)
	}
	if failed {
		e.settle(id)
	}
	return failed, nil
}

// failedCols are the columns of an execution recorded failed with f now.
func (e *Engine) failedCols(f Failure) map[string]any {
	now := e.now()
	return map[string]any{"status": models.StatusFailed, "error_code": f.Code, "error_message": f.Message,
		"error_details": models.NewJSON[any](f), "finished_at": &now}
}

// FailUnstarted records an execution whose workflow could not be started
// and will not be resumed (no Idempotency-Key) as failed with f: a single
// execution, or a batch with every item, in one write, so no row stays
// queued. Rows that already finished are left alone.
func (e *Engine) FailUnstarted(ctx context.Context, id string, f Failure) error {
	res := e.db.WithContext(ctx).Model(&models.Execution{}).
		Where("(id = ? OR batch_id = ?) AND status NOT IN ?", id, id, []string{models.StatusSucceeded, models.StatusFailed}).
		Updates(e.failedCols(f))
	if res.Error != nil {
		return fmt.Errorf("record unstarted execution %s as failed: %w", id, res.Error)
	}
	e.settle(id)
	return nil
}
