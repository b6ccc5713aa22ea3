// Package testdb gives tests a fresh, migrated database: always SQLite (a
// temp file), and Postgres too when TEST_DATABASE_URL is set. Each Postgres
// database is a fresh schema of that database, dropped at the end, so
// packages can run in parallel against one server.
package testdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// Dialects returns the dialects tests should cover: "sqlite", plus
// "postgres" when TEST_DATABASE_URL is set.
func Dialects() []string {
	if os.Getenv("TEST_DATABASE_URL") != "" {
		return []string{"sqlite", "postgres"}
	}
	return []string{"sqlite"}
}

// Each runs fn as a subtest once per dialect, each with its own database.
func Each(t *testing.T, fn func(t *testing.T, db *gorm.DB)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(d, func(t *testing.T) {
			fn(t, Open(t, d))
		})
	}
}

// Open returns a fresh migrated database of dialect, closed at test end.
func Open(t testing.TB, dialect string) *gorm.DB {
	t.Helper()
	dsn := DSN(t, dialect)
	// Migrations of every test schema of one Postgres database take turns
	// on its one advisory lock (models.Migrate); under a loaded `make test`
	// a turn can come late, so the wait is generous.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db, err := models.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open %s test database: %v", dialect, err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	if err := models.Migrate(ctx, db); err != nil {
		t.Fatalf("migrate %s test database: %v", dialect, err)
	}
	return db
}

// DSN returns a DSN for a fresh, empty database of dialect. For Postgres it
// creates a schema (dropped at test end) and points search_path at it.
func DSN(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case "sqlite":
		return "sqlite:" + filepath.Join(t.TempDir(), "app.db")
	case "postgres":
		base := os.Getenv("TEST_DATABASE_URL")
		if base == "" {
			t.Fatalf("TEST_DATABASE_URL is not set")
		}
		schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
		ctx := context.Background()
		admin, err := models.Open(ctx, base)
		if err != nil {
			t.Fatalf("open postgres: %v", err)
		}
		ensureSharedExtensions(t, admin)
		if err := admin.Exec(fmt.Sprintf(`CREATE SCHEMA %q`, schema)).Error; err != nil {
			t.Fatalf("create schema: %v", err)
		}
		t.Cleanup(func() {
			admin.Exec(fmt.Sprintf(`DROP SCHEMA %q CASCADE`, schema))
			if sqlDB, err := admin.DB(); err == nil {
				sqlDB.Close()
			}
		})
		return WithSearchPath(base, schema)
	default:
		t.Fatalf("unknown dialect %q", dialect)
		return ""
	}
}

// ensureSharedExtensions installs pg_trgm in the public schema before any
// test schema exists. Otherwise the first test's migration would install
// it in that test's schema, and dropping the schema at the test's end
// (CASCADE) would drop it under every other test using it ("operator
// class concurrently dropped"). A missing postgresql-contrib is left to
// the migration, which warns and goes on without the index.
func ensureSharedExtensions(t testing.TB, admin *gorm.DB) {
	t.Helper()
	if err := admin.Exec("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public").Error; err != nil {
		// Two test processes creating it at once: one loses with a
		// duplicate key; it exists either way.
		var n int64
		admin.Raw("SELECT COUNT(*) FROM pg_extension WHERE extname = 'pg_trgm'").Scan(&n)
		if n == 0 {
			t.Logf("pg_trgm not installed (substring search unindexed in this test): %v", err)
		}
	}
}

// WithSearchPath adds search_path to a Postgres URL.
func WithSearchPath(base, schema string) string {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		return base + " search_path=" + schema
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// AsOlderBinaryLeftIt marks db's recorded schema as written by a binary
// older than this one (no fingerprint: releases before it recorded none),
// for tests that rebuild a table in an older shape: the next migration
// then brings the tables up to date, as it does for such a database.
func AsOlderBinaryLeftIt(t testing.TB, db *gorm.DB) {
	t.Helper()
	if err := db.Exec("UPDATE schema_version SET fingerprint = ''").Error; err != nil {
		t.Fatalf("forget the recorded schema: %v", err)
	}
}
