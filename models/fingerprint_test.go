package models_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// ddlLog keeps the statements that create, alter or drop a table.
type ddlLog struct {
	logger.Interface
	mu    sync.Mutex
	stmts []string
}

func (l *ddlLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	sql, _ := fc()
	up := strings.ToUpper(sql)
	if strings.Contains(up, "CREATE TABLE") || strings.Contains(up, "ALTER TABLE") || strings.Contains(up, "DROP TABLE") {
		l.mu.Lock()
		l.stmts = append(l.stmts, sql)
		l.mu.Unlock()
	}
}

// A restart against a database already at this binary's schema changes no
// table, even with rows in them (gorm's SQLite migrator copied every table
// with a NOT NULL sized string column holding a row, on every start);
// nor does a new version whose tables are the recorded ones; a schema
// that differs from the recorded one is still migrated.
func TestMigrateLeavesAnUnchangedSchemaAlone(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		rows := []any{
			&models.User{ID: "u1", Username: "alice", PasswordHash: "h", Clearance: "public"},
			&models.ActionType{ID: "a1", Name: "triage", OperationKind: "update_object"},
			&models.Execution{ID: "e1", Kind: models.KindExecute, Status: models.StatusQueued, ActionTypeID: "a1",
				ActionTypeName: "triage", ActorID: "u1"},
		}
		for _, r := range rows {
			if err := db.Create(r).Error; err != nil {
				t.Fatal(err)
			}
		}
		ddl := &ddlLog{Interface: logger.Discard}
		if err := models.Migrate(ctx, db.Session(&gorm.Session{Logger: ddl})); err != nil {
			t.Fatal(err)
		}
		if len(ddl.stmts) > 0 {
			t.Errorf("a restart on an unchanged schema ran %d table statements, first: %s", len(ddl.stmts), ddl.stmts[0])
		}

		// As the version before left it over the same tables (4 → 5
		// changed what the rows hold, not the tables): the new version is
		// recorded, no table touched.
		if err := db.Model(&models.SchemaState{}).Where("id = 1").Update("version", models.SchemaVersion-1).Error; err != nil {
			t.Fatal(err)
		}
		ddl = &ddlLog{Interface: logger.Discard}
		if err := models.Migrate(ctx, db.Session(&gorm.Session{Logger: ddl})); err != nil {
			t.Fatal(err)
		}
		if len(ddl.stmts) > 0 {
			t.Errorf("a new version over unchanged tables ran %d table statements, first: %s", len(ddl.stmts), ddl.stmts[0])
		}
		if v, err := models.StoredSchemaVersion(ctx, db); err != nil || v != models.SchemaVersion {
			t.Errorf("after the version-only upgrade: version %d (%v), want %d", v, err, models.SchemaVersion)
		}

		// As an older binary left it: another fingerprint, an index of
		// this one's models missing.
		if err := db.Migrator().DropIndex(&models.Execution{}, "idx_exec_window"); err != nil {
			t.Fatal(err)
		}
		if err := db.Model(&models.SchemaState{}).Where("id = 1").Update("fingerprint", "older").Error; err != nil {
			t.Fatal(err)
		}
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if !db.Migrator().HasIndex(&models.Execution{}, "idx_exec_window") {
			t.Error("a schema that differs from the recorded one was not migrated: idx_exec_window is missing")
		}
		var st models.SchemaState
		if err := db.Take(&st, "id = 1").Error; err != nil || st.Fingerprint == "older" || st.Fingerprint == "" {
			t.Errorf("recorded schema after the migration: %+v (%v), want this binary's fingerprint", st, err)
		}
		var n int64
		if db.Model(&models.Execution{}).Count(&n); n != 1 {
			t.Errorf("%d executions after the migrations, want the 1 kept", n)
		}
	})
}
