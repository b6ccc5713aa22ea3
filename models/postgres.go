package models

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
)

// preparingPool is Postgres' connection pool as gorm sees it: its
// transactions prepare statements on the pool, as SQLite's writerTx does
// and for the same reason. gorm (PrepareStmt) prepares a statement first
// run inside a transaction through the transaction and caches it;
// prepared there, database/sql closed it at the commit, and every later
// transaction parsed it again (Tx.StmtContext re-prepares a closed
// statement): actionbench on Postgres logged one Parse per statement per
// execution, about 0.1 ms each beside a Bind and an Execute. Prepared on
// the pool, the statement stays open and each connection parses it once.
type preparingPool struct{ *sql.DB }

// openPostgres opens dsn with the session settings and wraps the pool.
func openPostgres(dsn string) (*preparingPool, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse postgres DSN: %w", err)
	}
	return &preparingPool{DB: stdlib.OpenDB(*cfg, stdlib.OptionBeforeConnect(sessionSettings))}, nil
}

// GetDBConn implements gorm.GetDBConnector (gorm.DB.DB()).
func (p *preparingPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// BeginTx implements gorm.ConnPoolBeginner.
func (p *preparingPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := p.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &preparingTx{Tx: tx, pool: p.DB}, nil
}

// poolPrepareWait bounds the wait for a pool connection to prepare on:
// when every connection is inside a transaction, each of them waiting for
// one to prepare on would wait for the others, so past this the statement
// is prepared on the transaction, as before (and again the next time).
const poolPrepareWait = 100 * time.Millisecond

type preparingTx struct {
	*sql.Tx
	pool *sql.DB
}

// PrepareContext prepares query on the pool, or on the transaction when
// the pool has no connection to spare or cannot prepare it (a query
// naming what only this transaction sees).
func (t *preparingTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	pctx, cancel := context.WithTimeout(ctx, poolPrepareWait)
	defer cancel()
	if st, err := t.pool.PrepareContext(pctx, query); err == nil {
		return st, nil
	}
	return t.Tx.PrepareContext(ctx, query)
}
