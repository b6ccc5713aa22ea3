package functions

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// recorder writes run records in the background, in batches. A run can
// happen inside the execution's transaction (the re-run after a stale
// read), where a write of its own would wait for the write lock that
// transaction holds (SQLite: one writer per process, models.writerPool);
// and one write per run would add a write transaction to every
// execution. Records are monitoring, best effort: a crash loses the last
// ~50 ms of them, never an execution's outcome.
type recorder struct {
	db   *gorm.DB
	log  *slog.Logger
	mu   sync.Mutex
	rows []models.FunctionRun
	kick chan struct{}
	// flushMu serializes flushes so a reader's flush sees every row
	// added before it.
	flushMu sync.Mutex
}

const recordDelay = 50 * time.Millisecond

func newRecorder(db *gorm.DB, log *slog.Logger) *recorder {
	r := &recorder{db: db, log: log, kick: make(chan struct{}, 1)}
	go r.loop()
	return r
}

func (r *recorder) add(run models.FunctionRun) {
	r.mu.Lock()
	r.rows = append(r.rows, run)
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *recorder) loop() {
	for range r.kick {
		time.Sleep(recordDelay)
		if err := r.flush(context.Background()); err != nil {
			r.log.Warn("record function runs", "err", err)
		}
	}
}

// flush writes what is pending (readers of runs call it first, so a run
// is listed as soon as its action answered).
func (r *recorder) flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	rows := r.rows
	r.rows = nil
	r.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	return r.db.WithContext(ctx).CreateInBatches(rows, 100).Error
}
