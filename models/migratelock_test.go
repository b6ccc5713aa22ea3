package models_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// A process that migrated a Postgres database (as `dev` does at start:
// a fresh schema, so the tables are created) keeps running without the
// migration lock: a second process's migration on the same database
// completes while the first one's pool stays open. Before, the unlock
// went through gorm's handle, which had moved back to the pool, so it
// reached another connection and the lock stayed with an idle one for
// the life of the process (issue 45).
func TestMigrationLockReleasedOnItsConnection(t *testing.T) {
	if !slices.Contains(testdb.Dialects(), "postgres") {
		t.Skip("TEST_DATABASE_URL is not set (CI sets it)")
	}
	dsn := testdb.DSN(t, "postgres")
	open := func() *gorm.DB {
		db, err := models.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if sqlDB, err := db.DB(); err == nil {
				sqlDB.Close()
			}
		})
		return db
	}

	first := open()
	// Twice, as a process that runs several commands' worth of start-up
	// on one pool might.
	for range 2 {
		if err := models.Migrate(context.Background(), first); err != nil {
			t.Fatalf("first process's migration: %v", err)
		}
	}
	var held int64
	if err := first.Raw(`SELECT COUNT(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.classid = ? AND a.datname = current_database()`, 0x6f6e746f).Scan(&held).Error; err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("after its migrations the first process still holds %d migration locks", held)
	}

	// The first process's connections stay open (its pool is not closed)
	// while the second migrates.
	second := open()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	if err := models.Migrate(ctx, second); err != nil {
		t.Fatalf("a second process's migration while the first runs: %v (after %s)", err, time.Since(start).Round(time.Millisecond))
	}
	if err := models.Ping(context.Background(), first); err != nil {
		t.Fatalf("the first process's pool: %v", err)
	}
}
