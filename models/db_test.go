package models_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// Migrations run again on an up-to-date schema without error, unique
// violations surface as gorm.ErrDuplicatedKey on both dialects, and JSON
// columns round-trip.
func TestSchema(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		u := models.User{ID: "u1", Username: "alice", PasswordHash: "h", Clearance: "public",
			Roles:      models.NewJSON([]string{"a", "b"}),
			Attributes: models.NewJSON(map[string]any{"n": 1.5, "s": "x", "nested": map[string]any{"k": true}})}
		if err := db.Create(&u).Error; err != nil {
			t.Fatal(err)
		}
		dup := u
		dup.ID = "u2"
		if err := db.Create(&dup).Error; !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Errorf("duplicate username: %v, want ErrDuplicatedKey", err)
		}
		var got models.User
		if err := db.Take(&got, "id = ?", "u1").Error; err != nil {
			t.Fatal(err)
		}
		if len(got.Roles.V) != 2 || got.Attributes.V["n"] != 1.5 || got.Attributes.V["nested"].(map[string]any)["k"] != true {
			t.Errorf("JSON columns round-trip: %+v", got)
		}
		if err := models.Ping(ctx, db); err != nil {
			t.Errorf("ping: %v", err)
		}
	})
}

func TestOpenRefusesBadDSN(t *testing.T) {
	ctx := context.Background()
	if _, err := models.Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"); err == nil {
		t.Error("opened a Postgres server that does not exist")
	}
	if _, err := models.Open(ctx, "sqlite:/proc/no/such/dir/x.db"); err == nil {
		t.Error("opened SQLite in a directory that cannot exist")
	}
}

// Postgres plans each execution of a prepared statement for its values
// (a generic plan of a filter read every index row of a 1% value: 190 ms
// for a page at 100,000 objects), without parallel workers (which read
// past a page) and without JIT (which compiled longer than a page took),
// unless the DSN chooses otherwise.
func TestPostgresSessionSettings(t *testing.T) {
	if !slices.Contains(testdb.Dialects(), "postgres") {
		t.Skip("TEST_DATABASE_URL is not set (CI sets it)")
	}
	ctx := context.Background()
	dsn := testdb.DSN(t, "postgres")
	for _, c := range []struct{ dsn, plans, workers, jit string }{
		{dsn, "force_custom_plan", "0", "off"},
		{dsn + "&plan_cache_mode=auto&max_parallel_workers_per_gather=2&jit=on", "auto", "2", "on"},
	} {
		db, err := models.Open(ctx, c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		var plans, workers, jit string
		if err := db.Raw("SHOW plan_cache_mode").Scan(&plans).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Raw("SHOW jit").Scan(&jit).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Raw("SHOW max_parallel_workers_per_gather").Scan(&workers).Error; err != nil {
			t.Fatal(err)
		}
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
		if plans != c.plans || workers != c.workers || jit != c.jit {
			t.Errorf("plan_cache_mode %q, max_parallel_workers_per_gather %q, jit %q; want %q, %q, %q (DSN %s)", plans, workers, jit, c.plans, c.workers, c.jit, c.dsn)
		}
	}
}
