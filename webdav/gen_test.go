package webdav

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// Two servers on one SQLite file, as two processes would be (each with its
// own connection pool): a lock taken through one is enforced by the other
// at once, although the other had cached that the user held no locks, and
// its release is seen at once too.
func TestLockCacheAcrossReplicas(t *testing.T) {
	dsn := testdb.DSN(t, "sqlite")
	ctx := context.Background()
	db1, err := models.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := models.Migrate(ctx, db1); err != nil {
		t.Fatal(err)
	}
	db2, err := models.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := db1.DB(); err == nil {
			s.Close()
		}
		if s, err := db2.DB(); err == nil {
			s.Close()
		}
	})
	addUser(t, db1, "alice", 0)
	dir := t.TempDir()
	a := newEnv(t, db1, dir, Options{})
	b := newEnv(t, db2, dir, Options{})
	if !a.h.gen.shared || !b.h.gen.shared {
		t.Fatalf("SQLite change counters are not shared (a %v, b %v)", a.h.gen.shared, b.h.gen.shared)
	}
	if _, err := os.Stat(strings.TrimPrefix(dsn, "sqlite:") + genFileSuffix); err != nil {
		t.Fatalf("counters file beside the database: %v", err)
	}
	a.want(http.StatusCreated, "alice", "PUT", "/f", "1")
	a.want(http.StatusNoContent, "alice", "PUT", "/f", "2") // a has now cached "no locks"
	tok := b.lock("alice", "/f", "exclusive", "0")
	a.want(http.StatusLocked, "alice", "PUT", "/f", "3")
	a.want(http.StatusNoContent, "alice", "PUT", "/f", "3", "If", "(<"+tok+">)")
	b.want(http.StatusOK, "alice", "LOCK", "/f", "", "If", "(<"+tok+">)", "Timeout", "Second-600")
	a.want(http.StatusLocked, "alice", "DELETE", "/f", "")
	b.want(http.StatusNoContent, "alice", "UNLOCK", "/f", "", "Lock-Token", "<"+tok+">")
	a.want(http.StatusNoContent, "alice", "PUT", "/f", "4")
	// A lock dropped by a DELETE on one server frees the path on the other.
	tok = a.lock("alice", "/f", "exclusive", "0")
	b.want(http.StatusLocked, "alice", "PUT", "/f", "5")
	a.want(http.StatusNoContent, "alice", "DELETE", "/f", "", "If", "(<"+tok+">)")
	b.want(http.StatusCreated, "alice", "PUT", "/f", "5")
}

// A lock row committed without the counter moving (a replica that died
// between the two) is enforced once the cache's time bound has passed.
func TestLockCacheTimeBound(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	u := addUser(t, db, "alice", 0)
	e := newEnv(t, db, t.TempDir(), Options{})
	e.h.lockTTL = 100 * time.Millisecond
	e.want(http.StatusCreated, "alice", "PUT", "/f", "1")
	e.want(http.StatusNoContent, "alice", "PUT", "/f", "2")
	if err := db.Create(&models.DavLock{Token: "opaquelocktoken:behind-the-counter", UserID: u.ID, Path: "/f",
		TimeoutSeconds: 600, Expires: time.Now().Add(10 * time.Minute).Unix()}).Error; err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	e.want(http.StatusLocked, "alice", "PUT", "/f", "3")
}

// On Postgres, whose replicas may run on several hosts, locks are read
// from the database on every write.
func TestLockCacheOffOnPostgres(t *testing.T) {
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Log("TEST_DATABASE_URL is not set: nothing to check without Postgres (CI sets it)")
		return
	}
	db := testdb.Open(t, "postgres")
	u := addUser(t, db, "alice", 0)
	e := newEnv(t, db, t.TempDir(), Options{})
	if e.h.gen.shared {
		t.Fatal("change counters claim to be shared on Postgres")
	}
	e.want(http.StatusCreated, "alice", "PUT", "/f", "1")
	if _, ok := e.h.lockCache.Load(u.ID); ok {
		t.Fatal("locks were cached on Postgres")
	}
}
