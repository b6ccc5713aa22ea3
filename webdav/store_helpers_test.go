package webdav

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/s3test"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// testS3 is the S3 server a test runs against: internal/harness/s3test's
// versitygw on loopback (skipped without the binary, a failure under
// CI=true).
type testS3 struct{ *s3test.Server }

func startTestS3(t *testing.T) *testS3 { return &testS3{s3test.Start(t)} }

// Restart kills the server and starts it again on the same address and
// directory.
func (s *testS3) Restart(t *testing.T) { s.Server.Restart() }

var s3Prefixes atomic.Int64

// contents opens the bucket under a fresh prefix.
func (s *testS3) contents(t *testing.T) *contents.S3 {
	t.Helper()
	st := StoreURL{Kind: "s3", Bucket: s.Bucket, Prefix: fmt.Sprintf("t%d", s3Prefixes.Add(1)), Endpoint: s.Endpoint, Region: "us-east-1", PathStyle: true}
	c, err := contents.OpenS3(context.Background(), st, &contents.Credentials{AccessKey: s.AccessKey, SecretKey: s.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Fatalf("S3 not answering: %v", err)
	}
	return c
}

// eachMode runs fn on each database in POSIX mode and in S3 mode (the
// tree in the database, contents in versitygw).
func eachMode(t *testing.T, fn func(t *testing.T, db *gorm.DB, opts Options)) {
	t.Run("posix", func(t *testing.T) {
		testdb.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, db, Options{}) })
	})
	t.Run("s3", func(t *testing.T) {
		s := startTestS3(t)
		testdb.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, db, Options{Contents: s.contents(t)}) })
	})
}

// eachTreeStore runs fn on each database in tree mode over the local
// directory contents (contents.Dir: no S3 server needed) and, when
// versitygw is available, over S3.
func eachTreeStore(t *testing.T, fn func(t *testing.T, db *gorm.DB, opts Options)) {
	t.Run("dir", func(t *testing.T) {
		testdb.Each(t, func(t *testing.T, db *gorm.DB) {
			c, err := contents.NewDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			fn(t, db, Options{Contents: c})
		})
	})
	t.Run("s3", func(t *testing.T) {
		s := startTestS3(t)
		testdb.Each(t, func(t *testing.T, db *gorm.DB) { fn(t, db, Options{Contents: s.contents(t)}) })
	})
}

// serverTree reads the user's tree below p as the server holds it: from
// the disk in POSIX mode, through Handler.ReadDir/Open in tree mode.
func (e *env) serverTree(userID, p string) map[string][]byte {
	e.t.Helper()
	if !e.nodeMode() {
		return readTree(e.t, filepath.Join(e.dir, userID, filepath.FromSlash(p)))
	}
	out := map[string][]byte{}
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		ents, err := e.h.ReadDir(context.Background(), userID, dir)
		if err != nil {
			e.t.Fatalf("read dir %s: %v", dir, err)
		}
		for _, fi := range ents {
			name := filepath.Base(fi.Path)
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			if fi.Dir {
				walk(fi.Path, r)
				continue
			}
			rc, _, err := e.h.Open(context.Background(), userID, fi.Path, 0, -1)
			if err != nil {
				e.t.Fatalf("open %s: %v", fi.Path, err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				e.t.Fatalf("read %s: %v", fi.Path, err)
			}
			out[r] = b
		}
	}
	walk(p, "")
	return out
}

// nodeMode reports whether e's handler keeps the tree in the database.
func (e *env) nodeMode() bool {
	_, ok := e.h.store.(*nodeBackend)
	return ok
}
