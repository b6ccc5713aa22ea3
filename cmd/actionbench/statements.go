package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// statements counts what one phase asks of the app database: the SQL
// statements gorm sends (its callbacks, one per statement) and, on
// Postgres, the transactions the server committed (pg_stat_database,
// which counts each autocommitted statement as one too), so that round
// trips and commits per execution are figures of the run (issue 45).
type statements struct {
	db    *gorm.DB
	stmts atomic.Int64
}

func countStatements(db *gorm.DB) (*statements, error) {
	s := &statements{db: db}
	inc := func(*gorm.DB) { s.stmts.Add(1) }
	cb := db.Callback()
	for name, err := range map[string]error{
		"create": cb.Create().After("gorm:create").Register("actionbench:count", inc),
		"query":  cb.Query().After("gorm:query").Register("actionbench:count", inc),
		"update": cb.Update().After("gorm:update").Register("actionbench:count", inc),
		"delete": cb.Delete().After("gorm:delete").Register("actionbench:count", inc),
		"row":    cb.Row().After("gorm:row").Register("actionbench:count", inc),
		"raw":    cb.Raw().After("gorm:raw").Register("actionbench:count", inc),
	} {
		if err != nil {
			return nil, fmt.Errorf("count %s statements: %w", name, err)
		}
	}
	return s, nil
}

// mark is a point to measure from: statements sent and transactions
// committed so far (-1 where the dialect does not tell).
type mark struct{ stmts, xacts int64 }

func (s *statements) mark() mark {
	m := mark{stmts: s.stmts.Load(), xacts: -1}
	if !models.IsPostgres(s.db) {
		return m
	}
	// The statistics collector publishes a backend's counts when it goes
	// idle, at most once a second.
	time.Sleep(1100 * time.Millisecond)
	_ = s.db.Raw("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Row().Scan(&m.xacts)
	return m
}

// per is "statements / transactions" per unit of n since from (the
// transactions include this reading's own: one per mark, negligible).
func (s *statements) per(from mark, n int) string {
	to := s.mark()
	out := fmt.Sprintf("%.1f statements", float64(to.stmts-from.stmts)/float64(n))
	if from.xacts >= 0 && to.xacts >= 0 {
		out += fmt.Sprintf(", %.1f commits", float64(to.xacts-from.xacts)/float64(n))
	}
	return out
}
