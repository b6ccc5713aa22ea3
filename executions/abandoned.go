package executions

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
)

// DefaultAbandonAfter is how long a keyed execution whose workflow never
// started waits for the retry with its Idempotency-Key before the sweep
// records it failed: long enough for any client's retry loop, short
// enough that the action log does not show it queued for good.
const DefaultAbandonAfter = defaults.AbandonAfter

// abandonedPage is how many rows one query of the sweep reads; one
// sweep reads at most abandonedPages of them and gives up after
// abandonedErrors failed questions (Temporal down: the next sweep asks
// again), so a sweep stays short whatever the backlog.
const (
	abandonedPage   = 100
	abandonedPages  = 10
	abandonedErrors = 3
)

// FailAbandoned records failed (Unavailable) the keyed executions (single
// or batch, with their items) whose workflow start failed and that no
// retry with their key resumed within AbandonAfter: without it they would
// stay queued for good. A row is failed only when Temporal says its
// workflow does not exist — a workflow that started but waits for a
// worker (every worker down) is left alone, and so is a row Temporal
// cannot answer for (the next sweep asks again). It returns how many it
// failed and the first error met; one row's error does not stop the
// others, a few do.
func (s *Service) FailAbandoned(ctx context.Context, now time.Time) (int, error) {
	n, errs := 0, 0
	var first error
	after := models.Execution{}
	for page := 0; page < abandonedPages; page++ {
		rows, err := s.neverStarted(ctx, now.Add(-s.opts.AbandonAfter), after)
		if err != nil {
			return n, err
		}
		for _, r := range rows {
			failed, err := s.failIfNeverStarted(ctx, r)
			if err != nil {
				if first == nil {
					first = err
				}
				if errs++; errs >= abandonedErrors {
					return n, first
				}
			}
			if failed {
				n++
			}
		}
		if len(rows) < abandonedPage {
			break
		}
		after = rows[len(rows)-1]
	}
	return n, first
}

// neverStarted reads a page of keyed, queued executions without a run id
// created before cutoff, after the row after (by created_at, id).
func (s *Service) neverStarted(ctx context.Context, cutoff time.Time, after models.Execution) ([]models.Execution, error) {
	q := s.db.WithContext(ctx).Select("id", "workflow_id", "created_at").
		Where("status = ? AND idempotency_key IS NOT NULL AND batch_id IS NULL AND (run_id IS NULL OR run_id = '') AND created_at < ?",
			models.StatusQueued, cutoff)
	if after.ID != "" {
		q = q.Where("created_at >= ? AND (created_at > ? OR id > ?)", after.CreatedAt, after.CreatedAt, after.ID)
	}
	var rows []models.Execution
	if err := q.Order("created_at, id").Limit(abandonedPage).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list keyed executions never started: %w", err)
	}
	return rows, nil
}

// failIfNeverStarted fails r when Temporal says its workflow does not
// exist and r is still queued without a run id: a retry that started it
// in the meantime wins.
func (s *Service) failIfNeverStarted(ctx context.Context, r models.Execution) (bool, error) {
	started, err := s.starter.Started(ctx, r.WorkflowID)
	if err != nil || started {
		return false, err
	}
	f := engine.Failure{Code: string(apperr.Unavailable), Message: fmt.Sprintf(
		"the execution's workflow could not be started and no retry with its Idempotency-Key came within %s", s.opts.AbandonAfter)}
	return s.eng.FailNeverStarted(ctx, r.ID, f)
}

// failAbandoned is FailAbandoned for the sweep: failures are logged.
func (s *Service) failAbandoned(ctx context.Context) {
	n, err := s.FailAbandoned(ctx, time.Now().UTC())
	if err != nil {
		slog.WarnContext(ctx, "sweep of abandoned executions", "err", err)
	}
	if n > 0 {
		slog.InfoContext(ctx, "abandoned executions recorded failed", "count", n)
	}
}
