package execstore

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// Load records rows as they are — any status, times and outcome — in one
// transaction, perStatement rows to a statement. It is a loader's path
// (a benchmark seeding a large action log), not an execution's: no
// guard applies. The rollups count the rows in the same transaction.
func (s *Store) Load(ctx context.Context, rows []models.Execution, perStatement int) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.CreateInBatches(rows, perStatement).Error; err != nil {
			return err
		}
		d := deltas{}
		for i := range rows {
			d.addRow(&rows[i], 1)
		}
		return d.apply(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("load %d execution rows: %w", len(rows), err)
	}
	return nil
}

// stampTrace records the trace of the request creating ex on it, unless
// the caller already named one: one id then leads from the record to the
// trace (and the trace's spans carry the workflow id).
func stampTrace(ctx context.Context, ex *models.Execution) {
	if ex.TraceID != "" {
		return
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		ex.TraceID = sc.TraceID().String()
	}
}
