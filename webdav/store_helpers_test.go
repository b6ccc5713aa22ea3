package webdav

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/testdb"
)

// testS3 is an S3 server a test runs against.
type testS3 struct {
	Endpoint, AccessKey, SecretKey, Bucket string
	cmd                                    *exec.Cmd
	bin, dir, addr                         string
}

// startTestS3 starts versitygw (ONTOFLOW_TEST_VERSITYGW names the binary)
// on a loopback port with one bucket, stopped when the test ends. Without
// the binary the test is skipped, or fails under CI=true. This is the one
// place that starts S3 for the package's tests: it can be pointed at a
// shared harness (internal/s3test) without touching the tests.
func startTestS3(t *testing.T) *testS3 {
	t.Helper()
	bin := os.Getenv("ONTOFLOW_TEST_VERSITYGW")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("S3 mode needs versitygw: set ONTOFLOW_TEST_VERSITYGW to its binary (.ci/run builds it)")
		}
		t.Skip("S3 mode skipped: ONTOFLOW_TEST_VERSITYGW is not set")
	}
	dir := t.TempDir()
	s := &testS3{AccessKey: "ontoflow-test", SecretKey: "ontoflow-test-secret", Bucket: "dav"}
	if err := os.Mkdir(filepath.Join(dir, s.Bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s.Endpoint = "http://" + addr
	s.bin, s.dir, s.addr = bin, dir, addr
	s.start(t)
	t.Cleanup(s.Stop)
	return s
}

func (s *testS3) start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command(s.bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", s.addr, "posix", s.dir)
	s.cmd.Stdout, s.cmd.Stderr = io.Discard, io.Discard
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", s.addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("versitygw did not start listening")
		}
	}
}

// Stop kills the server (kill -9).
func (s *testS3) Stop() {
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart starts the server again on the same address and directory.
func (s *testS3) Restart(t *testing.T) {
	s.Stop()
	s.start(t)
}

var s3Prefixes atomic.Int64

// contents opens the bucket under a fresh prefix.
func (s *testS3) contents(t *testing.T) *S3Contents {
	t.Helper()
	st := StoreURL{Kind: "s3", Bucket: s.Bucket, Prefix: fmt.Sprintf("t%d", s3Prefixes.Add(1)), Endpoint: s.Endpoint, Region: "us-east-1", PathStyle: true}
	c, err := OpenS3(context.Background(), st, &Credentials{AccessKey: s.AccessKey, SecretKey: s.SecretKey})
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
// directory contents (DirContents: no S3 server needed) and, when
// versitygw is available, over S3.
func eachTreeStore(t *testing.T, fn func(t *testing.T, db *gorm.DB, opts Options)) {
	t.Run("dir", func(t *testing.T) {
		testdb.Each(t, func(t *testing.T, db *gorm.DB) {
			c, err := NewDirContents(t.TempDir())
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
	if e.h.nodes == nil {
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
