package webdav

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// putSpy records, for every Put, how many dav_blobs rows named its key
// when the object began to be written.
type putSpy struct {
	contents.Store
	db   *gorm.DB
	mu   sync.Mutex
	rows map[string]int64
	keys []string
}

func (s *putSpy) Put(ctx context.Context, key string, r io.Reader, sizeHint int64, hooks contents.PutHooks) (int64, error) {
	var n int64
	if err := s.db.Raw("SELECT COUNT(*) FROM dav_blobs WHERE blob_key = ?", key).Scan(&n).Error; err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.rows[key], s.keys = n, append(s.keys, key)
	s.mu.Unlock()
	return s.Store.Put(ctx, key, r, sizeHint, hooks)
}

func (s *putSpy) last(t *testing.T) (string, int64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) == 0 {
		t.Fatal("no Put reached the store")
	}
	k := s.keys[len(s.keys)-1]
	return k, s.rows[k]
}

// A small PUT records its blob in the node commit (one transaction), a
// large one before its first byte; an object written for a small PUT whose
// commit never came (a crash) is removed by the sweep while the file keeps
// its previous contents.
func TestSmallPutRecordsBlobAtCommit(t *testing.T) {
	eachTreeStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		inner := opts.Contents
		spy := &putSpy{Store: inner, db: db, rows: map[string]int64{}}
		opts.Contents = spy
		u := addUser(t, db, "sp", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		small := strings.Repeat("x", 4096)
		e.want(http.StatusCreated, "sp", "PUT", "/f.bin", small)
		key, rows := spy.last(t)
		if rows != 0 {
			t.Fatalf("a 4 KiB PUT had %d dav_blobs rows before its object was written, want 0 (recorded at commit)", rows)
		}
		if n := countRows(t, db, "SELECT COUNT(*) FROM dav_blobs WHERE blob_key = ? AND state = ? AND size = 4096", key, blobLive); n != 1 {
			t.Fatalf("after the PUT, %d live rows of 4096 bytes for its blob, want 1", n)
		}
		big := bytes.Repeat([]byte("y"), 9<<20)
		e.want(http.StatusCreated, "sp", "PUT", "/big.bin", string(big))
		if _, rows := spy.last(t); rows != 1 {
			t.Fatalf("a 9 MiB PUT had %d rows before its object was written, want 1 (recorded first)", rows)
		}

		// A crash after the object of a small PUT, before its commit.
		orphan := newBlobKey(u.ID)
		if _, err := inner.Put(context.Background(), orphan, strings.NewReader("new contents"), 12, contents.PutHooks{}); err != nil {
			t.Fatal(err)
		}
		for pass := 0; pass < 3; pass++ {
			if _, err := SweepOnce(context.Background(), db, inner, SweepOptions{Grace: time.Nanosecond}); err != nil {
				t.Fatal(err)
			}
		}
		if rc, err := inner.Get(context.Background(), orphan, 0, -1); !errors.Is(err, contents.ErrNoObject) {
			if err == nil {
				rc.Close()
			}
			t.Fatalf("the unrecorded object is still there after the sweep (err %v)", err)
		}
		if _, b := e.want(http.StatusOK, "sp", "GET", "/f.bin", ""); b != small {
			t.Fatalf("the file reads %d bytes, want its committed 4096", len(b))
		}
	})
}
