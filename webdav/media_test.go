package webdav

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/media"
)

// TestMediaStore: each store (POSIX; tree mode over the local directory
// and over S3, on each database) describes and opens regular files of a
// user's tree only; everything else is media.ErrNoFile, one error.
func TestMediaStore(t *testing.T) {
	t.Run("posix", testPosixMedia)
	t.Run("tree", func(t *testing.T) { eachTreeStore(t, testTreeMedia) })
}

func testPosixMedia(t *testing.T) {
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
	m, err := NewMedia(dir, testdb.Open(t, "sqlite"), false)
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

// testTreeMedia: files written over WebDAV in tree mode are described as
// the handler serves them (ETag, size, mtime) with the SHA-256 recorded
// at the PUT, and read from the contents store.
func testTreeMedia(t *testing.T, db *gorm.DB, opts Options) {
	e := newEnv(t, db, t.TempDir(), opts)
	alice, bob := addUser(t, db, "alice", 0), addUser(t, db, "bob", 0)
	content := "quarterly numbers"
	e.want(http.StatusCreated, "alice", "MKCOL", "/reports", "")
	e.want(http.StatusCreated, "alice", "PUT", "/reports/q3.txt", content)
	e.want(http.StatusCreated, "alice", "PUT", "/empty.txt", "")
	e.want(http.StatusCreated, "bob", "PUT", "/secret.txt", "bob's")
	m, err := NewTreeMedia(db, opts.Contents)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sum := sha256.Sum256([]byte(content))
	hdr, _ := e.want(http.StatusOK, "alice", "GET", "/reports/q3.txt", "")
	served, err := e.h.Stat(ctx, alice.ID, "/reports/q3.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Stat(ctx, alice.ID, "/reports/q3.txt")
	if err != nil || f.Path != "/reports/q3.txt" || f.Size != int64(len(content)) || f.SHA256 != hex.EncodeToString(sum[:]) ||
		f.ETag != hdr.Get("ETag") || f.ETag != served.ETag || !f.ModTime.Equal(served.ModTime) || f.ModTime.Location() != time.UTC {
		t.Fatalf("stat = %+v, %v; served %+v, ETag %s", f, err, served, hdr.Get("ETag"))
	}
	rc, f2, err := m.Open(ctx, alice.ID, "reports//q3.txt")
	if err != nil || f2 != f {
		t.Fatalf("open = %+v, %v", f2, err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != content {
		t.Fatalf("read %q", b)
	}
	rc, ef, err := m.Open(ctx, alice.ID, "/empty.txt")
	if err != nil || ef.Size != 0 || ef.SHA256 != emptySHA256 {
		t.Fatalf("open an empty file = %+v, %v", ef, err)
	}
	b, _ = io.ReadAll(rc)
	rc.Close()
	if len(b) != 0 {
		t.Fatalf("read %q from an empty file", b)
	}
	// A row written before the tree kept SHA-256 is hashed from its contents.
	if err := db.Exec("UPDATE dav_nodes SET sha256 = '' WHERE user_id = ? AND name = ?", alice.ID, "q3.txt").Error; err != nil {
		t.Fatal(err)
	}
	if f3, err := m.Stat(ctx, alice.ID, "/reports/q3.txt"); err != nil || f3 != f {
		t.Fatalf("stat without a recorded sum = %+v, %v", f3, err)
	}
	if _, f3, err := m.Open(ctx, alice.ID, "/reports/q3.txt"); err != nil || f3 != f {
		t.Fatalf("open without a recorded sum = %+v, %v", f3, err)
	}
	e.want(http.StatusNoContent, "alice", "PUT", "/reports/q3.txt", "restated")
	if f3, err := m.Stat(ctx, alice.ID, "/reports/q3.txt"); err != nil || f3.SHA256 == f.SHA256 || f3.ETag == f.ETag || f3.Size != 8 {
		t.Fatalf("after a change: %+v %v", f3, err)
	}
	e.want(http.StatusCreated, "alice", "MOVE", "/reports/q3.txt", "", "Destination", e.base+"/reports/q4.txt")
	if f4, err := m.Stat(ctx, alice.ID, "/reports/q4.txt"); err != nil || f4.Path != "/reports/q4.txt" || f4.Size != 8 {
		t.Fatalf("after a move: %+v %v", f4, err)
	}
	for _, c := range []struct{ user, p string }{
		{alice.ID, "/secret.txt"}, {alice.ID, "/reports/q3.txt"}, {alice.ID, "/missing"}, {alice.ID, "/reports"}, {alice.ID, "/"},
		{alice.ID, "/reports/q4.txt/x"}, {alice.ID, "/../" + bob.ID + "/secret.txt"}, {alice.ID, "/reports/../../" + bob.ID + "/secret.txt"},
		{alice.ID, "/" + tmpPrefix + "upload"}, {alice.ID, "/a\x00b"}, {"..", "/secret.txt"}, {"", "/x"}, {"carol", "/x"}, {bob.ID + "/..", "/secret.txt"},
	} {
		if _, err := m.Stat(ctx, c.user, c.p); !errors.Is(err, media.ErrNoFile) {
			t.Errorf("stat %s %q: %v, want media.ErrNoFile", c.user, c.p, err)
		}
		if _, _, err := m.Open(ctx, c.user, c.p); !errors.Is(err, media.ErrNoFile) {
			t.Errorf("open %s %q: %v, want media.ErrNoFile", c.user, c.p, err)
		}
	}
	var rows int64
	if err := db.Table("dav_nodes").Where("user_id = ?", "carol").Count(&rows).Error; err != nil || rows != 0 {
		t.Fatalf("asking for a user with no tree made %d rows (%v)", rows, err)
	}
}
