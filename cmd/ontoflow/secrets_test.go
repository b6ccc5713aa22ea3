package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

// TestSecretsCommand drives 'ontoflow secrets gen-key' and 'rotate-key'
// (both forms) as a child process on a SQLite database.
func TestSecretsCommand(t *testing.T) {
	out, err := ontoflow(t, "", nil, "secrets", "gen-key")
	if err != nil {
		t.Fatalf("gen-key: %v\n%s", err, out)
	}
	if _, err := secrets.ParseKey(out); err != nil {
		t.Fatalf("gen-key printed %q: %v", out, err)
	}

	ctx := context.Background()
	dir := t.TempDir()
	db, err := models.Open(ctx, "sqlite:"+filepath.Join(dir, "ontoflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sql, _ := db.DB(); sql.Close() }()
	if err := models.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	devKeys, err := secrets.LoadKeyring(secrets.KeyConfig{DevDir: dir, CreateDevKey: true}) // as 'ontoflow dev' does
	if err != nil {
		t.Fatal(err)
	}
	v := "hook-value"
	if _, err := secrets.NewStore(db, devKeys).Create(ctx, "HOOK", secrets.Spec{Value: &v}, ""); err != nil {
		t.Fatal(err)
	}
	noKey := []string{"ONTOFLOW_SECRET_KEY=", "ONTOFLOW_SECRET_KEY_PREVIOUS=", "ONTOFLOW_SECRET_KEY_FILE=", "DATABASE_URL="}

	// The dev key file.
	out, err = ontoflow(t, "", noKey, "secrets", "rotate-key", "--data-dir", dir)
	if err != nil || !strings.Contains(out, "1 secrets re-encrypted") {
		t.Fatalf("rotate-key (dev): %v\n%s", err, out)
	}
	k2, err := secrets.LoadKeyring(secrets.KeyConfig{DevDir: dir})
	if err != nil || k2.PrimaryID() == devKeys.PrimaryID() {
		t.Fatalf("the dev key file was not replaced: %v", err)
	}
	if got, err := secrets.NewStore(db, k2).Resolve(ctx, "HOOK"); err != nil || got != v {
		t.Fatalf("after rotate-key (dev): %q %v", got, err)
	}

	// A configured key: the new one in ONTOFLOW_SECRET_KEY, the old one in
	// a previous-key file.
	cur, _ := os.ReadFile(filepath.Join(dir, secrets.DevKeyFile))
	prevFile := filepath.Join(t.TempDir(), "prev")
	os.WriteFile(prevFile, cur, 0o600)
	newKey := secrets.GenerateKey()
	env := append(append([]string{}, noKey...), "ONTOFLOW_SECRET_KEY="+newKey)
	out, err = ontoflow(t, "", env, "secrets", "rotate-key", "--data-dir", dir, "--secret-key-previous-file", prevFile)
	if err != nil || !strings.Contains(out, "1 secrets re-encrypted") {
		t.Fatalf("rotate-key (configured): %v\n%s", err, out)
	}
	raw, _ := secrets.ParseKey(newKey)
	k3, _ := secrets.NewKeyring(raw)
	if got, err := secrets.NewStore(db, k3).Resolve(ctx, "HOOK"); err != nil || got != v {
		t.Fatalf("after rotate-key (configured): %q %v", got, err)
	}
	// Without the old key the value cannot be opened: refused, nothing lost.
	wrong := append(append([]string{}, noKey...), "ONTOFLOW_SECRET_KEY="+secrets.GenerateKey())
	out, err = ontoflow(t, "", wrong, "secrets", "rotate-key", "--data-dir", dir)
	if err == nil || !strings.Contains(out, "not configured") {
		t.Fatalf("rotate-key without the old key: %v\n%s", err, out)
	}
	if got, err := secrets.NewStore(db, k3).Resolve(ctx, "HOOK"); err != nil || got != v {
		t.Fatalf("a refused rotation changed the row: %q %v", got, err)
	}
	// Nothing configured and no dev key file.
	out, err = ontoflow(t, "", noKey, "secrets", "rotate-key", "--data-dir", t.TempDir())
	if err == nil || !strings.Contains(out, "nothing to rotate") {
		t.Fatalf("rotate-key without any key: %v\n%s", err, out)
	}
}
