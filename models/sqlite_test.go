package models

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
)

// This process's write transactions take turns on SQLite's write lock:
// concurrent ones all commit, a transaction left open makes the next wait
// for the bound and fail with a clear error, and a turn is given back once
// however the transaction ends.
func TestWriterPool(t *testing.T) {
	ctx := context.Background()
	sqlDB, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "w.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	sqlDB.SetMaxOpenConns(4)
	if _, err := sqlDB.Exec("CREATE TABLE t (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	p := newWriterPool(sqlDB, 10*time.Second)

	var wg sync.WaitGroup
	errs := make(chan error, 16*20)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				c, err := p.BeginTx(ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				tx := c.(*writerTx)
				if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (?)", i); err != nil {
					tx.Rollback()
					errs <- err
					return
				}
				if err := tx.Commit(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent transaction: %v", err)
	}
	var n int
	if err := sqlDB.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 320 {
		t.Fatalf("rows = %d, %v; want 320", n, err)
	}

	p.wait = 200 * time.Millisecond
	held, err := p.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.BeginTx(ctx, nil); err == nil || !strings.Contains(err.Error(), "database is locked") {
		t.Fatalf("second writer while one is open: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.BeginTx(cctx, nil); err == nil {
		t.Fatal("a cancelled context still got the write turn")
	}
	tx := held.(*writerTx)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback() // after Commit: must not hand the turn back twice
	a, err := p.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("turn not given back: %v", err)
	}
	if _, err := p.BeginTx(ctx, nil); err == nil {
		t.Fatal("a second turn was handed out: the first was released twice")
	}
	a.(*writerTx).Rollback()
}

// A statement gorm prepares inside a transaction stays prepared after
// the commit (on the pool, not the transaction), so later transactions
// run it without parsing it again.
func TestTransactionStatementsStayPrepared(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			s.Close()
		}
	})
	if err := db.Exec("CREATE TABLE t (n INTEGER)").Error; err != nil {
		t.Fatal(err)
	}
	const q = "INSERT INTO t (n) VALUES (?)"
	for i := range 2 {
		if err := db.Transaction(func(tx *gorm.DB) error { return tx.Exec(q, i).Error }); err != nil {
			t.Fatal(err)
		}
	}
	st, ok := db.ConnPool.(*gorm.PreparedStmtDB).Stmts.Get(q)
	if !ok {
		t.Fatal("gorm did not cache the statement")
	}
	if _, err := st.ExecContext(ctx, 2); err != nil {
		t.Errorf("the cached statement after the commits: %v, want it open", err)
	}
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM t").Scan(&n).Error; err != nil || n != 3 {
		t.Errorf("%d rows (%v), want 3", n, err)
	}
}
