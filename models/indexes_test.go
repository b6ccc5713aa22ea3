package models_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// captureLog sends the default logger to a buffer for the test.
func captureLog(t *testing.T) *syncBuffer {
	t.Helper()
	buf := &syncBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return buf
}

// As a rollback to an older binary and forward again leaves a database:
// indexes the models declare dropped, an obsolete one made again, the
// recorded fingerprint still this binary's. The next migration finds
// that in the catalog, recreates the missing indexes and drops the
// obsolete one, naming them in the log; an index nothing declares (an
// operator's own) is named and left (issue 45).
func TestMigrateRepairsIndexesByCatalog(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		m := db.Migrator()
		dropped := []struct {
			model any
			name  string
		}{
			{&models.Link{}, "idx_link_target"},
			{&models.Execution{}, "idx_exec_window"},
			{&models.Execution{}, "idx_exec_notified"},
			{&models.Object{}, "idx_object_updated"},
			{&models.ObjectValue{}, "idx_object_value"},
		}
		for _, d := range dropped {
			if err := m.DropIndex(d.model, d.name); err != nil {
				t.Fatalf("drop %s: %v", d.name, err)
			}
		}
		for _, q := range []string{
			"CREATE INDEX idx_links_target_id ON links (target_id)",
			"CREATE INDEX ops_links_kind ON links (link_type_id)",
		} {
			if err := db.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}

		logs := captureLog(t)
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		for _, d := range dropped {
			if !m.HasIndex(d.model, d.name) {
				t.Errorf("index %s still missing after the migration", d.name)
			}
		}
		if models.IsPostgres(db) {
			// Recreated as its own statement makes it, not from the tag.
			var def string
			db.Raw("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'idx_object_value'").Scan(&def)
			if strings.Contains(def, "object_id") {
				t.Errorf("idx_object_value recreated from the model's tag: %s", def)
			}
		}
		if m.HasIndex(&models.Link{}, "idx_links_target_id") {
			t.Error("obsolete index idx_links_target_id left in place")
		}
		if !m.HasIndex(&models.Link{}, "ops_links_kind") {
			t.Error("an index the models do not declare was dropped")
		}
		out := logs.String()
		for _, want := range []string{"links.idx_link_target", "executions.idx_exec_window", "executions.idx_exec_notified",
			"objects.idx_object_updated", "object_values.idx_object_value", "links.idx_links_target_id", "links.ops_links_kind"} {
			if !strings.Contains(out, want) {
				t.Errorf("the log does not name %s:\n%s", want, out)
			}
		}

		// The queries that failed with "no such index" run again.
		for _, q := range []string{
			"SELECT id FROM links INDEXED BY idx_link_target WHERE target_id = 'x'",
			"SELECT id FROM executions INDEXED BY idx_exec_window WHERE created_at > '2000-01-01'",
		} {
			if models.IsPostgres(db) {
				break // no INDEXED BY; HasIndex above is the check
			}
			if err := db.Exec(q).Error; err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}

		// A migration of an intact schema changes nothing and says so by
		// saying nothing.
		logs = captureLog(t)
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if out := logs.String(); strings.Contains(out, "recreated") || strings.Contains(out, "dropped") {
			t.Errorf("a second migration repaired again:\n%s", out)
		}
	})
}
