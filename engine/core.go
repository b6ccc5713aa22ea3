package engine

import (
	"time"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// The core's API for the steps that run on top of it (package revert):
// a step outside the engine records its latency, counts and settles the
// execution it finishes, and looks up kinds and delivery steps exactly as
// the engine's own steps do, so its metrics, waiters and deliveries do
// not drift from theirs.

// Observe records the latency of step, begun at start.
func (e *Engine) Observe(step string, start time.Time) { e.observe(step, start) }

// Finished counts ex, which the caller's transaction finished with
// status (committed).
func (e *Engine) Finished(ex *models.Execution, status string) { e.finished(ex, status) }

// Settle wakes whoever waits in this process for execution id to finish
// (Settled), once nothing follows the caller's step.
func (e *Engine) Settle(id string) { e.settle(id) }

// Kind returns the registered operation kind called name.
func (e *Engine) Kind(name string) (Kind, bool) { return e.kinds.Get(name) }

// DeliveriesOf lists the delivery steps of side effects (a revert's
// notifications are delivered after it as an execution's are).
func (e *Engine) DeliveriesOf(effects []domain.NotificationSideEffect) []Delivery {
	return e.deliveriesOf(effects)
}
