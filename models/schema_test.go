package models_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

func storedVersion(t *testing.T, db *gorm.DB) int {
	t.Helper()
	v, err := models.StoredSchemaVersion(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A database migrated by a newer binary is refused before anything is
// changed, with both versions in the error.
func TestMigrateRefusesANewerSchema(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		newer := models.SchemaVersion + 1
		if err := db.Model(&models.SchemaState{}).Where("id = 1").Update("version", newer).Error; err != nil {
			t.Fatal(err)
		}
		// A table the newer schema dropped: a migration would create it again.
		if err := db.Migrator().DropTable(&models.DavChecksum{}); err != nil {
			t.Fatal(err)
		}
		err := models.Migrate(ctx, db)
		var tooNew *models.SchemaTooNewError
		if !errors.As(err, &tooNew) || tooNew.Found != newer || tooNew.Known != models.SchemaVersion {
			t.Fatalf("migrate: %v, want a SchemaTooNewError", err)
		}
		for _, v := range []int{newer, models.SchemaVersion} {
			if !strings.Contains(err.Error(), fmt.Sprintf("version %d", v)) {
				t.Errorf("%q does not name version %d", err, v)
			}
		}
		if got := storedVersion(t, db); got != newer {
			t.Errorf("version %d after the refusal, want %d kept", got, newer)
		}
		if db.Migrator().HasTable(&models.DavChecksum{}) {
			t.Error("the refused migration changed the schema")
		}
	})
}

// A fresh database is migrated and records the version; so is one made
// before versions were recorded (no schema_version table), taken for
// version 1 and upgraded in place with its rows.
func TestMigrateRecordsTheVersion(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			db, err := models.Open(ctx, testdb.DSN(t, d))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if s, err := db.DB(); err == nil {
					s.Close()
				}
			})
			if v := storedVersion(t, db); v != 0 {
				t.Fatalf("empty database: version %d, want 0", v)
			}
			if err := models.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			if v := storedVersion(t, db); v != models.SchemaVersion {
				t.Fatalf("fresh database: version %d, want %d", v, models.SchemaVersion)
			}

			// As the version before this one left it.
			if err := db.Migrator().DropTable(&models.SchemaState{}); err != nil {
				t.Fatal(err)
			}
			if err := db.Create(&models.User{ID: "u1", Username: "alice", PasswordHash: "h", Clearance: "public"}).Error; err != nil {
				t.Fatal(err)
			}
			if v := storedVersion(t, db); v != 1 {
				t.Fatalf("database without a version: %d, want 1", v)
			}
			before := time.Now().Add(-time.Second)
			if err := models.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			var st models.SchemaState
			if err := db.Take(&st, "id = 1").Error; err != nil || st.Version != models.SchemaVersion || st.MigratedAt.Before(before) {
				t.Fatalf("after the upgrade: %+v (%v), want version %d", st, err, models.SchemaVersion)
			}
			var n int64
			if db.Model(&models.User{}).Count(&n); n != 1 {
				t.Errorf("%d users after the upgrade, want the 1 kept", n)
			}
		})
	}
}

// An upgrade drops the single-column indexes of links' ends that
// idx_link_source and idx_link_target replaced.
func TestMigrateDropsObsoleteLinkIndexes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, q := range []string{"CREATE INDEX idx_links_source_id ON links (source_id)", "CREATE INDEX idx_links_target_id ON links (target_id)"} {
			if err := db.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}
		testdb.AsOlderBinaryLeftIt(t, db)
		if err := models.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		for _, idx := range []string{"idx_links_source_id", "idx_links_target_id", "idx_link_source", "idx_link_target"} {
			want := strings.HasPrefix(idx, "idx_link_")
			if got := db.Migrator().HasIndex(&models.Link{}, idx); got != want {
				t.Errorf("index %s exists: %v, want %v", idx, got, want)
			}
		}
	})
}
