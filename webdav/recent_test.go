package webdav

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

// TestRecent: each store lists the user's own files (never folders,
// never another user's), newest first, bounded by the limit, under the
// paths they have now (after a MOVE of a folder above them).
func TestRecent(t *testing.T) {
	eachMode(t, func(t *testing.T, db *gorm.DB, opts Options) {
		e := newEnv(t, db, t.TempDir(), opts)
		alice, bob := addUser(t, db, "alice", 0), addUser(t, db, "bob", 0)
		at := func(sec int) string { return fmt.Sprint(1_700_000_000 + sec) }
		e.want(http.StatusCreated, "alice", "MKCOL", "/reports", "")
		e.want(http.StatusCreated, "alice", "MKCOL", "/reports/deep", "")
		e.want(http.StatusCreated, "alice", "PUT", "/a.txt", "a", "X-OC-Mtime", at(10))
		e.want(http.StatusCreated, "alice", "PUT", "/reports/old.txt", "old", "X-OC-Mtime", at(5))
		e.want(http.StatusCreated, "alice", "PUT", "/reports/deep/new.txt", "new", "X-OC-Mtime", at(20))
		e.want(http.StatusCreated, "bob", "PUT", "/b.txt", "bob's", "X-OC-Mtime", at(30))
		if !db.Migrator().HasIndex(&models.DavNode{}, "idx_dav_nodes_recent") {
			t.Error("no index serves the tree store's recent files")
		}
		ctx := context.Background()
		paths := func(limit int) string {
			t.Helper()
			fis, err := e.h.Recent(ctx, alice.ID, limit)
			if err != nil {
				t.Fatal(err)
			}
			s := ""
			for _, fi := range fis {
				if fi.Dir || fi.ETag == "" {
					t.Errorf("entry %+v", fi)
				}
				s += fi.Path + " "
			}
			return s
		}
		if got, want := paths(2), "/reports/deep/new.txt /a.txt "; got != want {
			t.Errorf("recent 2 = %q, want %q", got, want)
		}
		if got, want := paths(10), "/reports/deep/new.txt /a.txt /reports/old.txt "; got != want {
			t.Errorf("recent 10 = %q, want %q", got, want)
		}
		e.want(http.StatusCreated, "alice", "MOVE", "/reports", "", "Destination", e.base+"/archive")
		if got, want := paths(10), "/archive/deep/new.txt /a.txt /archive/old.txt "; got != want {
			t.Errorf("after a move = %q, want %q", got, want)
		}
		if fis, err := e.h.Recent(ctx, bob.ID, 10); err != nil || len(fis) != 1 || fis[0].Path != "/b.txt" {
			t.Errorf("bob's = %+v, %v", fis, err)
		}
	})
}
