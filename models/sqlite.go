package models

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// writerPool hands SQLite's one write lock from transaction to
// transaction inside the process. Every transaction here begins
// IMMEDIATE (the DSN's _txlock), taking the database's write lock up
// front; when several of this process's connections want it at once,
// SQLite makes the losers sleep and retry (1, 2, 5, 10 ... 100 ms), and
// under load (a batch's chunks committing side by side) the database sat
// idle while they slept. Queueing them on a Go semaphore instead wakes the
// next one as soon as the previous commits. Other processes on the same
// file still meet SQLite's own busy handling. Reads outside transactions
// are untouched (WAL lets them run beside the writer).
type writerPool struct {
	*sql.DB
	sem chan struct{}
	// wait bounds the wait for the lock, as busy_timeout bounds SQLite's.
	wait time.Duration
}

func newWriterPool(db *sql.DB, wait time.Duration) *writerPool {
	return &writerPool{DB: db, sem: make(chan struct{}, 1), wait: wait}
}

// BeginTx implements gorm.ConnPoolBeginner.
func (p *writerPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	t := time.NewTimer(p.wait)
	defer t.Stop()
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("begin transaction: %w", ctx.Err())
	case <-t.C:
		return nil, fmt.Errorf("begin transaction: database is locked (waited %s for this process's other writers)", p.wait)
	}
	tx, err := p.DB.BeginTx(ctx, opts)
	if err != nil {
		<-p.sem
		return nil, err
	}
	wt := &writerTx{Tx: tx, pool: p.DB}
	wt.release = func() { wt.once.Do(func() { <-p.sem }) }
	return wt, nil
}

// GetDBConn implements gorm.GetDBConnector (gorm.DB.DB()).
func (p *writerPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// writerTx releases the write turn when it ends, however it ends.
type writerTx struct {
	*sql.Tx
	// pool is the database the transaction came from.
	pool    *sql.DB
	once    sync.Once
	release func()
}

// PrepareContext prepares query on the pool, not on the transaction.
// gorm (PrepareStmt) prepares a statement first run inside a transaction
// through here and caches it; prepared on the transaction, it was closed
// at the commit, so every later transaction parsed it again
// (database/sql's Tx.StmtContext re-prepares a closed statement): a
// fifth of the CPU of an execution's store writes, most of it the
// rollup upserts (BENCHMARKS.md, Action engine, "Issue 31: without the
// hourly totals"). Prepared on the pool, it stays open, and each
// transaction runs it on its connection, prepared there once
// (Tx.StmtContext keeps one per connection). The pool's connection is
// needed only for a query's first preparation. A query naming what only
// this transaction sees (a table a migration is rebuilding) does not
// prepare on another connection, so it is prepared on the transaction,
// as before.
func (t *writerTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, err := t.pool.PrepareContext(ctx, query); err == nil {
		return st, nil
	}
	return t.Tx.PrepareContext(ctx, query)
}

func (t *writerTx) Commit() error {
	defer t.release()
	return t.Tx.Commit()
}

func (t *writerTx) Rollback() error {
	defer t.release()
	return t.Tx.Rollback()
}
