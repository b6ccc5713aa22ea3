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

// DefaultAbandonAfter is how long a keyed execution whose workflow never
// started waits for the retry with its Idempotency-Key before the sweep
// records it failed: long enough for any client's retry loop, short
// enough that the action log does not show it queued for good.
const DefaultAbandonAfter = time.Hour

// abandonedBatch bounds the rows one sweep looks at.
const abandonedBatch = 100

// FailAbandoned records failed (Unavailable) the keyed executions (single
// or batch, with their items) whose workflow start failed and that no
// retry with their key resumed within AbandonAfter: without it they would
// stay queued for good. A row is failed only when Temporal says its
// workflow does not exist — a workflow that started but waits for a
// worker (every worker down) is left alone, and so is every row while
// Temporal cannot be asked. It returns how many it failed.
func (s *Service) FailAbandoned(ctx context.Context, now time.Time) (int, error) {
	var rows []models.Execution
	err := s.db.WithContext(ctx).Select("id", "workflow_id").
		Where("status = ? AND idempotency_key IS NOT NULL AND batch_id IS NULL AND (run_id IS NULL OR run_id = '') AND created_at < ?",
			models.StatusQueued, now.Add(-s.opts.AbandonAfter)).
		Order("created_at").Limit(abandonedBatch).Find(&rows).Error
	if err != nil {
		return 0, fmt.Errorf("list keyed executions never started: %w", err)
	}
	n := 0
	for _, r := range rows {
		started, err := s.starter.Started(ctx, r.WorkflowID)
		if err != nil {
			return n, fmt.Errorf("ask Temporal for workflow %s: %w", r.WorkflowID, err)
		}
		if started {
			continue
		}
		f := engine.Failure{Code: string(apperr.Unavailable), Message: fmt.Sprintf(
			"the execution's workflow could not be started and no retry with its Idempotency-Key came within %s", s.opts.AbandonAfter)}
		if err := s.eng.FailUnstarted(ctx, r.ID, f); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
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
