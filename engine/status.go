package engine

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// MarkRunning records that an execution's first step has started: queued
// becomes running, with started_at and (for the execution's own workflow)
// its run id, in one conditional write inside the step, so the workflow
// issues no command for it. A row already running or finished (a retried
// step, a replay) is left alone.
func (e *Engine) MarkRunning(ctx context.Context, id string) error {
	now := e.now()
	cols := map[string]any{"status": models.StatusRunning, "started_at": &now}
	if r, ok := runOf(ctx); ok {
		// runIDFor's rule, in SQL: only the execution's own workflow
		// records its run (not a batch chunk running an item).
		cols["run_id"] = gorm.Expr("CASE WHEN workflow_id = ? AND (run_id IS NULL OR run_id = '') THEN ? ELSE run_id END", r.workflowID, r.runID)
	}
	err := e.db.WithContext(ctx).Model(&models.Execution{}).
		Where("id = ? AND status = ?", id, models.StatusQueued).Updates(cols).Error
	if err != nil {
		return fmt.Errorf("record execution %s running: %w", id, err)
	}
	return nil
}
