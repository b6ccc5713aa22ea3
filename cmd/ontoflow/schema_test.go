package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// markNewer migrates the database at dsn and records a schema version
// one above this binary's, as a newer binary would leave it.
func markNewer(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	db, err := models.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if s, err := db.DB(); err == nil {
			s.Close()
		}
	}()
	if err := models.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := db.Model(&models.SchemaState{}).Where("id = 1").Update("version", models.SchemaVersion+1).Error; err != nil {
		t.Fatal(err)
	}
}

// Every command that opens the database exits non-zero on a schema newer
// than it knows, naming both versions; dev refuses before the embedded
// Temporal server writes its state.
func TestCommandsRefuseANewerSchema(t *testing.T) {
	names := []string{fmt.Sprintf("version %d", models.SchemaVersion+1), fmt.Sprintf("version %d", models.SchemaVersion)}
	refused := func(t *testing.T, args ...string) {
		t.Helper()
		out, err := ontoflow(t, "", nil, args...)
		if err == nil {
			t.Fatalf("ontoflow %s started on a newer schema:\n%s", args[0], out)
		}
		for _, n := range names {
			if !strings.Contains(out, n) {
				t.Errorf("ontoflow %s: the refusal does not name %q:\n%s", args[0], n, out)
			}
		}
	}
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := testdb.DSN(t, d)
			markNewer(t, dsn)
			refused(t, "migrate", "--database-url", dsn)
			refused(t, "serve", "--database-url", dsn, "--http-addr", "127.0.0.1:0", "--temporal-address", "127.0.0.1:1")
			refused(t, "worker", "--database-url", dsn, "--temporal-address", "127.0.0.1:1")
			refused(t, "users", "list", "--database-url", dsn)
		})
	}
	t.Run("dev", func(t *testing.T) {
		dir := t.TempDir()
		markNewer(t, "sqlite:"+filepath.Join(dir, "ontoflow.db"))
		refused(t, devArgs(dir)...)
		if _, err := os.Stat(filepath.Join(dir, "temporal")); !os.IsNotExist(err) {
			t.Errorf("the embedded Temporal server started on the refused data directory (%v)", err)
		}
	})
}
