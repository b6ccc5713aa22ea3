package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

// oldSecret is the secrets table as the version before use policies
// wrote it.
type oldSecret struct {
	ID          string `gorm:"primaryKey;size:36"`
	Name        string `gorm:"uniqueIndex;size:64;not null"`
	Description string `gorm:"size:1024"`
	Ciphertext  []byte `gorm:"not null"`
	KeyID       string `gorm:"size:16;not null;index"`
	CreatedBy   string `gorm:"size:36"`
	UpdatedBy   string `gorm:"size:36"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (oldSecret) TableName() string { return "secrets" }

// TestSecretsMigrateAtStart: a database as the older version left it — a
// secret without a use policy, a webhook action type that sends it — is
// upgraded in place by starting the new version: the secret becomes
// admins only with the action's destination, the action still runs for
// anyone its policy admits, and an ontology writer can no longer re-point
// it. SQLite and Postgres; the receiver is on loopback.
func TestSecretsMigrateAtStart(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			rx := newReceiver(t)
			key := secrets.GenerateKey()
			keyFile := filepath.Join(t.TempDir(), "secret.key")
			if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			dsn := testdb.DSN(t, d)
			writeOldVersion(t, dsn, key, rx.srv.URL)
			admin := startDevArgs(t, "", []string{"--database-url", dsn, "--secret-key-file", keyFile, "--outbound-allow", "127.0.0.1/32"})

			var sec map[string]any
			admin.must(http.StatusOK, "GET", "/api/v1/secrets/CRM_TOKEN", nil, &sec)
			if fmt.Sprint(sec["destinations"]) != "["+rx.srv.URL+"/crm/]" || fmt.Sprint(sec["use_users"]) != "[]" ||
				fmt.Sprint(sec["use_roles"]) != "[]" || sec["channel"] != "" {
				t.Fatalf("the migrated policy: %v", sec)
			}
			for _, u := range []map[string]any{
				{"username": "runner", "password": "runner-password-1"},
				{"username": "writer", "password": "writer-password-1", "permissions": []string{"ontology:write"}},
			} {
				admin.must(http.StatusCreated, "POST", "/api/v1/users", u, nil)
			}
			st, body := admin.as("runner", "runner-password-1").do("POST", "/api/v1/ontology/actions/crm_sync/execute",
				map[string]any{"parameters": map[string]any{"id": "7"}})
			if st != http.StatusOK || !strings.Contains(string(body), `"succeeded"`) {
				t.Fatalf("the old action after the upgrade: %d %s", st, body)
			}
			if got := rx.seenAt("/crm/7"); len(got) != 1 || got[0].Header.Get("Authorization") != "Bearer tok-old-version-31c7" {
				t.Fatalf("requests at the receiver: %+v", got)
			}
			st, body = admin.as("writer", "writer-password-1").do("PATCH", "/api/v1/ontology/actions/crm_sync",
				map[string]any{"description": "mine now"})
			if st != http.StatusForbidden || !strings.Contains(string(body), "secret_use_denied") {
				t.Errorf("an ontology writer changing the old action: %d %s", st, body)
			}
		})
	}
}

// writeOldVersion builds the database the older version would have left:
// its schema, the secret sealed under key in its table, and an action
// type that uses it.
func writeOldVersion(t *testing.T, dsn, key, rxURL string) {
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
	raw, _ := secrets.ParseKey(key)
	keys, _ := secrets.NewKeyring(raw)
	v := "tok-old-version-31c7"
	sealed, err := secrets.NewStore(db, keys).Create(ctx, "CRM_TOKEN", secrets.Spec{Value: &v}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrator().DropTable(&models.Secret{}); err != nil {
		t.Fatal(err)
	}
	if err := db.AutoMigrate(&oldSecret{}); err != nil {
		t.Fatal(err)
	}
	testdb.AsOlderBinaryLeftIt(t, db)
	if err := db.Create(&oldSecret{ID: sealed.ID, Name: sealed.Name, Ciphertext: sealed.Ciphertext, KeyID: sealed.KeyID}).Error; err != nil {
		t.Fatal(err)
	}
	op, _ := json.Marshal(map[string]any{"url": rxURL + "/crm/{{ parameters.id }}",
		"headers": map[string]string{"Authorization": "Bearer {{ secrets.CRM_TOKEN }}"}})
	at := &models.ActionType{ID: uuid.NewString(), Name: "crm_sync", OperationKind: domain.KindInvokeWebhook, Version: 1,
		Inputs: models.NewNumJSON([]domain.InputField{{Name: "id", Type: domain.PropertyType{Base: "string"}}}),
		Config: models.NewNumJSON(domain.ActionConfig{Operation: op})}
	if err := db.Create(at).Error; err != nil {
		t.Fatal(err)
	}
}
