package engine

import (
	"context"
	"fmt"

	"github.com/ontoflow/ontoflow/execstore"
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
	gaveUp, err := e.execs.FailOpenItems(ctx, batchID, execstore.Failure{Code: "Internal",
		Message: "the item's batch chunk gave up", At: now})
	if err != nil {
		return nil, err
	}
	e.metrics.batchItems.WithLabelValues(models.StatusFailed).Add(float64(gaveUp))
	t, err := e.Totals(ctx, batchID)
	if err != nil {
		return nil, err
	}
	// The run that closes the batch, in the write that closes it.
	closed, err := e.execs.CloseBatch(ctx, batchID, t.Status, now, storeRun(ctx))
	if err != nil {
		return nil, err
	}
	if closed {
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
	failed, err := e.execs.Abandon(ctx, id, e.storeFailure(f))
	if err != nil {
		return false, err
	}
	if failed {
		e.settle(id)
	}
	return failed, nil
}

// storeFailure is f as the execution store records it now (f itself as
// the error details).
func (e *Engine) storeFailure(f Failure) execstore.Failure {
	return execstore.Failure{Code: f.Code, Message: f.Message, Details: f, At: e.now()}
}

// FailUnstarted records an execution whose workflow could not be started
// and will not be resumed (no Idempotency-Key) as failed with f: a single
// execution, or a batch with every item, in one write, so no row stays
// queued. Rows that already finished are left alone.
func (e *Engine) FailUnstarted(ctx context.Context, id string, f Failure) error {
	if err := e.execs.FailUnstarted(ctx, id, e.storeFailure(f)); err != nil {
		return err
	}
	e.settle(id)
	return nil
}
