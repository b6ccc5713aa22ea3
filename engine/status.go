package engine

import (
	"context"
)

// MarkRunning records that an execution's first step has started: queued
// becomes running, with started_at and (for the execution's own workflow)
// its run id, in one conditional write inside the step, so the workflow
// issues no command for it. A row already running or finished (a retried
// step, a replay) is left alone.
func (e *Engine) MarkRunning(ctx context.Context, id string) error {
	return e.execs.MarkRunning(ctx, id, e.now(), storeRun(ctx))
}
