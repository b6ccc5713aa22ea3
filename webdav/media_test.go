package webdav

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ontoflow/ontoflow/media"
)

// TestMediaStore: the POSIX media store describes and opens regular files
// of a user's tree only; everything else is media.ErrNoFile, one error.
func TestMediaStore(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"alice/reports", "bob"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	content := []byte("quarterly numbers")
	write := func(p string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	write("alice/reports/q3.txt", content)
	write("bob/secret.txt", []byte("bob's"))
	write("alice/"+tmpPrefix+"upload", []byte("in progress"))
	if err := os.Symlink(filepath.Join(dir, "bob", "secret.txt"), filepath.Join(dir, "alice", "out.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("reports/q3.txt", filepath.Join(dir, "alice", "in.txt")); err != nil {
		t.Fatal(err)
	}
	m, err := NewMedia(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sum := sha256.Sum256(content)
	f, err := m.Stat(ctx, "alice", "/reports/q3.txt")
	if err != nil || f.Path != "/reports/q3.txt" || f.Size != int64(len(content)) || f.SHA256 != hex.EncodeToString(sum[:]) || f.ETag == "" {
		t.Fatalf("stat = %+v, %v", f, err)
	}
	rc, f2, err := m.Open(ctx, "alice", "reports//q3.txt")
	if err != nil || f2 != f {
		t.Fatalf("open = %+v, %v", f2, err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != string(content) {
		t.Fatalf("read %q", b)
	}
	if f, err := m.Stat(ctx, "alice", "/in.txt"); err != nil || f.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("a symlink inside the tree: %+v %v", f, err)
	}
	write("alice/reports/q3.txt", []byte("restated"))
	if f3, err := m.Stat(ctx, "alice", "/reports/q3.txt"); err != nil || f3.SHA256 == f.SHA256 || f3.ETag == f.ETag {
		t.Fatalf("after a change: %+v %v", f3, err)
	}
	for _, c := range []struct{ user, p string }{
		{"alice", "/secret.txt"}, {"alice", "/missing"}, {"alice", "/reports"}, {"alice", "/"},
		{"alice", "/../bob/secret.txt"}, {"alice", "/reports/../../bob/secret.txt"}, {"alice", "/out.txt"},
		{"alice", "/" + tmpPrefix + "upload"}, {"alice", "/a\x00b"}, {"..", "/bob/secret.txt"}, {"", "/x"}, {"carol", "/x"},
	} {
		if _, err := m.Stat(ctx, c.user, c.p); !errors.Is(err, media.ErrNoFile) {
			t.Errorf("stat %s %q: %v, want media.ErrNoFile", c.user, c.p, err)
		}
		if _, _, err := m.Open(ctx, c.user, c.p); !errors.Is(err, media.ErrNoFile) {
			t.Errorf("open %s %q: %v, want media.ErrNoFile", c.user, c.p, err)
		}
	}
}
