package secrets_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

func keyring(t *testing.T, primary string, previous ...string) *secrets.Keyring {
	t.Helper()
	p, err := secrets.ParseKey(primary)
	if err != nil {
		t.Fatal(err)
	}
	var prev [][]byte
	for _, s := range previous {
		raw, err := secrets.ParseKey(s)
		if err != nil {
			t.Fatal(err)
		}
		prev = append(prev, raw)
	}
	k, err := secrets.NewKeyring(p, prev...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ptr(s string) *string { return &s }

func TestStoreEncryptsAndResolves(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		st := secrets.NewStore(db, keyring(t, secrets.GenerateKey()))
		const value = "https://hooks.example.invalid/services/T000/B000/very-secret-token"
		if _, err := st.Create(ctx, "SLACK_HOOK", secrets.Spec{Value: ptr(value), Description: ptr("ops channel")}, "u1"); err != nil {
			t.Fatal(err)
		}
		got, err := st.Resolve(ctx, "SLACK_HOOK")
		if err != nil || got != value {
			t.Fatalf("resolve: %q %v", got, err)
		}
		var row models.Secret
		if err := db.Where("name = ?", "SLACK_HOOK").Take(&row).Error; err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(row.Ciphertext, []byte("very-secret-token")) || len(row.Ciphertext) != 12+len(value)+16 {
			t.Fatalf("ciphertext holds the value or has the wrong size (%d)", len(row.Ciphertext))
		}
		// Same value again: a fresh nonce gives another ciphertext.
		if _, err := st.Create(ctx, "SLACK_HOOK_2", secrets.Spec{Value: ptr(value)}, "u1"); err != nil {
			t.Fatal(err)
		}
		var row2 models.Secret
		db.Where("name = ?", "SLACK_HOOK_2").Take(&row2)
		if bytes.Equal(row.Ciphertext[:12], row2.Ciphertext[:12]) || bytes.Equal(row.Ciphertext, row2.Ciphertext) {
			t.Fatal("two values share a nonce")
		}
		// The name is bound as additional data: a ciphertext copied to
		// another name does not decrypt.
		if err := db.Model(&models.Secret{}).Where("name = ?", "SLACK_HOOK_2").Update("ciphertext", row.Ciphertext).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := st.Resolve(ctx, "SLACK_HOOK_2"); err == nil || strings.Contains(err.Error(), value) {
			t.Fatalf("a ciphertext moved to another name decrypted (or the error shows the value): %v", err)
		}
		// Another key cannot read it.
		other := secrets.NewStore(db, keyring(t, secrets.GenerateKey()))
		if _, err := other.Resolve(ctx, "SLACK_HOOK"); err == nil {
			t.Fatal("resolved with the wrong key")
		}
	})
}

func TestStoreErrors(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		st := secrets.NewStore(db, keyring(t, secrets.GenerateKey()))
		if _, err := st.Create(ctx, "A", secrets.Spec{Value: ptr("v1")}, ""); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			err  error
			code apperr.Code
		}{
			{"duplicate", func() error { _, err := st.Create(ctx, "A", secrets.Spec{Value: ptr("v2")}, ""); return err }(), apperr.Conflict},
			{"bad name", func() error { _, err := st.Create(ctx, "1abc", secrets.Spec{Value: ptr("v")}, ""); return err }(), apperr.InvalidArgument},
			{"dash", func() error { _, err := st.Create(ctx, "a-b", secrets.Spec{Value: ptr("v")}, ""); return err }(), apperr.InvalidArgument},
			{"too long", func() error {
				_, err := st.Create(ctx, strings.Repeat("a", 65), secrets.Spec{Value: ptr("v")}, "")
				return err
			}(), apperr.InvalidArgument},
			{"no value", func() error { _, err := st.Create(ctx, "B", secrets.Spec{}, ""); return err }(), apperr.InvalidArgument},
			{"empty value", func() error { _, err := st.Create(ctx, "B", secrets.Spec{Value: ptr("")}, ""); return err }(), apperr.InvalidArgument},
			{"huge value", func() error {
				_, err := st.Create(ctx, "B", secrets.Spec{Value: ptr(strings.Repeat("x", secrets.MaxValueBytes+1))}, "")
				return err
			}(), apperr.InvalidArgument},
			{"description with newline", func() error {
				_, err := st.Create(ctx, "B", secrets.Spec{Value: ptr("v"), Description: ptr("a\nb")}, "")
				return err
			}(), apperr.InvalidArgument},
			{"update missing", func() error { _, err := st.Update(ctx, "NOPE", secrets.Spec{Value: ptr("v")}, ""); return err }(), apperr.SecretNotFound},
			{"update nothing", func() error { _, err := st.Update(ctx, "A", secrets.Spec{}, ""); return err }(), apperr.InvalidArgument},
			{"resolve missing", func() error { _, err := st.Resolve(ctx, "NOPE"); return err }(), apperr.SecretNotFound},
			{"delete missing", st.Delete(ctx, "NOPE"), apperr.SecretNotFound},
		}
		for _, c := range cases {
			if apperr.CodeOf(c.err) != c.code {
				t.Errorf("%s: got %v, want %s", c.name, c.err, c.code)
			}
		}
		var n int64
		db.Model(&models.Secret{}).Count(&n)
		if n != 1 {
			t.Fatalf("refused calls left %d rows, want 1", n)
		}
		noKey := secrets.NewStore(db, nil)
		if _, err := noKey.Create(ctx, "C", secrets.Spec{Value: ptr("v")}, ""); apperr.CodeOf(err) != apperr.Unavailable {
			t.Fatalf("create without a key: %v", err)
		}
		if _, err := noKey.Get(ctx, "A"); err != nil {
			t.Fatalf("metadata without a key: %v", err)
		}
	})
}

func TestRotateKey(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		oldKey, newKey := secrets.GenerateKey(), secrets.GenerateKey()
		old := secrets.NewStore(db, keyring(t, oldKey))
		for _, n := range []string{"A", "B", "C"} {
			if _, err := old.Create(ctx, n, secrets.Spec{Value: ptr("value-of-" + n)}, ""); err != nil {
				t.Fatal(err)
			}
		}
		// The new key alone cannot read the old rows.
		if _, err := secrets.NewStore(db, keyring(t, newKey)).Resolve(ctx, "A"); err == nil {
			t.Fatal("new key read an old row before rotation")
		}
		both := secrets.NewStore(db, keyring(t, newKey, oldKey))
		if v, err := both.Resolve(ctx, "B"); err != nil || v != "value-of-B" {
			t.Fatalf("previous key not used for reading: %q %v", v, err)
		}
		n, err := both.RotateKey(ctx)
		if err != nil || n != 3 {
			t.Fatalf("rotate: %d %v", n, err)
		}
		if n, err := both.RotateKey(ctx); err != nil || n != 0 {
			t.Fatalf("second rotate: %d %v", n, err)
		}
		fresh := secrets.NewStore(db, keyring(t, newKey))
		for _, n := range []string{"A", "B", "C"} {
			if v, err := fresh.Resolve(ctx, n); err != nil || v != "value-of-"+n {
				t.Fatalf("after rotation, %s: %q %v", n, v, err)
			}
		}
		if _, err := old.Resolve(ctx, "A"); err == nil {
			t.Fatal("the old key still reads rotated rows")
		}
	})
}

func TestLoadKeyring(t *testing.T) {
	dir := t.TempDir()
	if _, err := secrets.LoadKeyring(secrets.KeyConfig{}); apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("no key: %v", err)
	}
	if _, err := secrets.LoadKeyring(secrets.KeyConfig{DevDir: dir}); apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("dev dir without a file and without CreateDevKey: %v", err)
	}
	k1, err := secrets.LoadKeyring(secrets.KeyConfig{DevDir: dir, CreateDevKey: true})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, secrets.DevKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Fatalf("dev key file mode %v, want 0600", fi.Mode().Perm())
	}
	k2, err := secrets.LoadKeyring(secrets.KeyConfig{DevDir: dir, CreateDevKey: true})
	if err != nil || k2.PrimaryID() != k1.PrimaryID() {
		t.Fatalf("second start made another key: %v", err)
	}
	key := secrets.GenerateKey()
	k3, err := secrets.LoadKeyring(secrets.KeyConfig{Key: key, DevDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := secrets.ParseKey(key)
	if k3.PrimaryID() != secrets.KeyID(raw) {
		t.Fatal("ONTOFLOW_SECRET_KEY does not win over the dev key file")
	}
	file := filepath.Join(dir, "k")
	os.WriteFile(file, []byte(key+"\n"), 0o600)
	if k4, err := secrets.LoadKeyring(secrets.KeyConfig{KeyFile: file}); err != nil || k4.PrimaryID() != k3.PrimaryID() {
		t.Fatalf("key file: %v", err)
	}
	for _, bad := range []secrets.KeyConfig{
		{Key: "not base64!"},
		{Key: "c2hvcnQ="}, // "short"
		{Key: key, KeyFile: file},
		{Key: key, Previous: []string{"c2hvcnQ="}},
		{KeyFile: filepath.Join(dir, "missing")},
	} {
		if _, err := secrets.LoadKeyring(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestRotateDevKeyFile(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		dir := t.TempDir()
		dev := secrets.KeyConfig{DevDir: dir, CreateDevKey: true}
		k1, err := secrets.LoadKeyring(dev)
		if err != nil {
			t.Fatal(err)
		}
		st := secrets.NewStore(db, k1)
		for _, n := range []string{"A", "B"} {
			if _, err := st.Create(ctx, n, secrets.Spec{Value: ptr("value-of-" + n)}, ""); err != nil {
				t.Fatal(err)
			}
		}
		admin := secrets.KeyConfig{DevDir: dir} // as 'ontoflow secrets rotate-key' sees it
		n, err := secrets.Rotate(ctx, db, admin)
		if err != nil || n != 2 {
			t.Fatalf("rotate: %d %v", n, err)
		}
		if _, err := os.Stat(filepath.Join(dir, secrets.DevNextKeyFile)); !os.IsNotExist(err) {
			t.Fatalf("the next key file is left behind: %v", err)
		}
		k2, err := secrets.LoadKeyring(dev)
		if err != nil || k2.PrimaryID() == k1.PrimaryID() {
			t.Fatalf("key file not replaced: %v", err)
		}
		fresh := secrets.NewStore(db, k2)
		for _, n := range []string{"A", "B"} {
			if v, err := fresh.Resolve(ctx, n); err != nil || v != "value-of-"+n {
				t.Fatalf("%s after rotation: %q %v", n, v, err)
			}
		}
		if _, err := st.Resolve(ctx, "A"); err == nil {
			t.Fatal("the old key still reads")
		}

		// A rotation cut short after writing the next key and
		// re-encrypting: the next start reads both keys, and running the
		// command again finishes it with the same next key.
		next := secrets.GenerateKey()
		os.WriteFile(filepath.Join(dir, secrets.DevNextKeyFile), []byte(next+"\n"), 0o600)
		nextRaw, _ := secrets.ParseKey(next)
		cur, _ := os.ReadFile(filepath.Join(dir, secrets.DevKeyFile))
		curRaw, _ := secrets.ParseKey(string(cur))
		half, _ := secrets.NewKeyring(nextRaw, curRaw)
		if _, err := secrets.NewStore(db, half).Update(ctx, "A", secrets.Spec{Value: ptr("value-of-A")}, ""); err != nil {
			t.Fatal(err) // A now sealed under the next key, B under the current one
		}
		k3, err := secrets.LoadKeyring(dev)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"A", "B"} {
			if v, err := secrets.NewStore(db, k3).Resolve(ctx, n); err != nil || v != "value-of-"+n {
				t.Fatalf("%s mid-rotation: %q %v", n, v, err)
			}
		}
		if n, err := secrets.Rotate(ctx, db, admin); err != nil || n != 1 {
			t.Fatalf("finishing rotate: %d %v", n, err)
		}
		k4, _ := secrets.LoadKeyring(dev)
		if k4.PrimaryID() != secrets.KeyID(nextRaw) {
			t.Fatal("the interrupted rotation's key was not installed")
		}

		if _, err := secrets.Rotate(ctx, db, secrets.KeyConfig{DevDir: t.TempDir()}); err == nil {
			t.Fatal("rotating without any key succeeded")
		}
	})
}
