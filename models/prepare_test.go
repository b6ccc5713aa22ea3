package models_test

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// A statement gorm first prepares inside a transaction outlives the
// commit, on both dialects, so later transactions run it without parsing
// it again (models/postgres.go, models/sqlite.go). Before the Postgres
// pool prepared on itself, the cached statement was closed at the commit
// and every transaction re-parsed it.
func TestStatementsPreparedInTransactionsOutliveThem(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		var n int
		for i := range 3 {
			err := db.Transaction(func(tx *gorm.DB) error {
				return tx.Raw("SELECT 40 + ? + 0 * 7919", 2).Scan(&n).Error
			})
			if err != nil || n != 42 {
				t.Fatalf("transaction %d: %d %v", i, n, err)
			}
		}
		pdb, ok := db.ConnPool.(*gorm.PreparedStmtDB)
		if !ok {
			t.Fatalf("the pool is %T, not gorm's prepared-statement pool", db.ConnPool)
		}
		found := false
		for _, k := range pdb.Stmts.Keys() {
			st, ok := pdb.Stmts.Get(k)
			if !ok || st.Stmt == nil || !strings.Contains(k, "SELECT 40 +") || !strings.Contains(k, "7919") {
				continue
			}
			found = true
			var m int
			if err := st.Stmt.QueryRow(1).Scan(&m); err != nil || m != 41 {
				t.Errorf("the cached statement after its transactions: %d %v (closed at the commit?)", m, err)
			}
		}
		if !found {
			t.Fatalf("the statement is not in gorm's cache: %v", pdb.Stmts.Keys())
		}
	})
}
