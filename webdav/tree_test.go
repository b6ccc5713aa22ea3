package webdav

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/models"
)

func countRows(t *testing.T, db *gorm.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// In tree mode a PUT lands whole (multipart beyond one part), reads back
// with ranges and the checksums computed on the way, a COPY shares the
// object instead of writing another, a MOVE of a folder rewrites one row,
// and a DELETE drops the rows at once and leaves the object to the sweep.
func TestTreeModeBasics(t *testing.T) {
	eachTreeStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		u := addUser(t, db, "tree", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		big := make([]byte, 20<<20+12345) // three parts in S3
		rand.Read(big)
		e.want(http.StatusCreated, "tree", "MKCOL", "/d", "")
		e.want(http.StatusCreated, "tree", "PUT", "/d/big.bin", string(big))
		_, body := e.want(http.StatusOK, "tree", "GET", "/d/big.bin", "")
		if !bytes.Equal([]byte(body), big) {
			t.Fatalf("GET returned %d bytes that differ from the %d put", len(body), len(big))
		}
		_, part := e.want(http.StatusPartialContent, "tree", "GET", "/d/big.bin", "", "Range", "bytes=9000000-9000009")
		if part != string(big[9000000:9000010]) {
			t.Fatalf("range read %q", part)
		}
		sum := sha1.Sum(big)
		_, pf := e.want(http.StatusMultiStatus, "tree", "PROPFIND", "/d/big.bin", `<?xml version="1.0"?><propfind xmlns="DAV:"><prop><checksums xmlns="http://owncloud.org/ns"/></prop></propfind>`, "Depth", "0")
		if !strings.Contains(pf, "SHA1:"+hex.EncodeToString(sum[:])) {
			t.Fatalf("PROPFIND checksums: %s", pf)
		}
		for i := 0; i < 50; i++ {
			e.want(http.StatusCreated, "tree", "PUT", fmt.Sprintf("/d/f%02d.txt", i), fmt.Sprintf("file %d", i))
		}
		blobsBefore := countRows(t, db, "SELECT COUNT(*) FROM dav_blobs")
		e.want(http.StatusCreated, "tree", "COPY", "/d", "", "Destination", e.base+"/copy")
		if n := countRows(t, db, "SELECT COUNT(*) FROM dav_blobs"); n != blobsBefore {
			t.Fatalf("COPY wrote objects: %d blob rows, %d before", n, blobsBefore)
		}
		_, c := e.want(http.StatusOK, "tree", "GET", "/copy/f07.txt", "")
		if c != "file 7" {
			t.Fatalf("copied file reads %q", c)
		}
		// MOVE: only the moved folder's row changes.
		var before []models.DavNode
		db.Where("user_id = ?", u.ID).Order("id").Find(&before)
		e.want(http.StatusCreated, "tree", "MOVE", "/copy", "", "Destination", e.base+"/moved")
		var after []models.DavNode
		db.Where("user_id = ?", u.ID).Order("id").Find(&after)
		changed := 0
		for i := range before {
			b, a := before[i], after[i]
			if b.ParentID != a.ParentID || b.Name != a.Name {
				changed++
			}
		}
		if changed != 1 {
			t.Fatalf("MOVE of a folder changed %d rows' place, want 1", changed)
		}
		e.want(http.StatusNotFound, "tree", "GET", "/copy/f07.txt", "")
		e.want(http.StatusOK, "tree", "GET", "/moved/big.bin", "")
		// DELETE: rows now; the objects only /d referenced are live,
		// unreferenced, until the sweep.
		e.want(http.StatusNoContent, "tree", "DELETE", "/moved", "")
		e.want(http.StatusNoContent, "tree", "DELETE", "/d", "")
		if n := countRows(t, db, "SELECT COUNT(*) FROM dav_nodes WHERE user_id = ? AND parent_id <> 0", u.ID); n != 0 {
			t.Fatalf("%d nodes left after DELETE", n)
		}
		st, err := SweepOnce(context.Background(), db, opts.Contents, SweepOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, db, "SELECT COUNT(*) FROM dav_blobs"); n != 0 {
			t.Fatalf("%d blob rows left after the sweep (%+v)", n, st)
		}
		objs, _, err := opts.Contents.Scan(context.Background(), "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 0 {
			t.Fatalf("objects left after the sweep: %+v", objs)
		}
	})
}

// Of two PUTs of one file, the one that commits second over a version it
// did not start from is refused (409), not silently applied; the loser's
// object is deleted and the winner's contents stay.
func TestTreeModeWritersCannotBothWin(t *testing.T) {
	eachTreeStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		addUser(t, db, "w", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		e.want(http.StatusCreated, "w", "PUT", "/f.txt", "v1")
		pw, done := e.slowPut("w", "/f.txt")
		pw.Write([]byte("slow "))
		time.Sleep(100 * time.Millisecond) // the slow PUT has read the node
		e.want(http.StatusNoContent, "w", "PUT", "/f.txt", "fast")
		pw.Write([]byte("writer"))
		pw.Close()
		if got := <-done; got != http.StatusConflict {
			t.Fatalf("the second commit answered %d, want 409", got)
		}
		if _, b := e.want(http.StatusOK, "w", "GET", "/f.txt", ""); b != "fast" {
			t.Fatalf("file reads %q, want the winner's", b)
		}
		deadline := time.Now().Add(5 * time.Second)
		for countRows(t, db, "SELECT COUNT(*) FROM dav_blobs") != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%d blob rows, want 1 (the loser's and v1's objects removed)", countRows(t, db, "SELECT COUNT(*) FROM dav_blobs"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// An upload cut short leaves the old contents and, once the sweep has
// run, nothing of the aborted upload.
func TestTreeModeAbortedUpload(t *testing.T) {
	eachTreeStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		addUser(t, db, "a", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		e.want(http.StatusCreated, "a", "PUT", "/f.bin", "old contents")
		pw, done := e.slowPut("a", "/f.bin")
		chunk := make([]byte, 1<<20)
		for i := 0; i < 12; i++ { // past the first part in S3
			pw.Write(chunk)
		}
		pw.CloseWithError(fmt.Errorf("client gone"))
		<-done
		if _, b := e.want(http.StatusOK, "a", "GET", "/f.bin", ""); b != "old contents" {
			t.Fatalf("after an aborted PUT the file reads %.20q", b)
		}
		if _, err := SweepOnce(context.Background(), db, opts.Contents, SweepOptions{Grace: time.Nanosecond}); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, db, "SELECT COUNT(*) FROM dav_blobs WHERE state <> ?", blobLive); n != 0 {
			t.Fatalf("%d upload rows left", n)
		}
		objs, _, err := opts.Contents.Scan(context.Background(), "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 1 {
			t.Fatalf("objects after the sweep: %+v (want the old contents only)", objs)
		}
	})
}

// The quota counts the tree's rows, as POSIX mode counts the files.
func TestTreeModeQuota(t *testing.T) {
	eachTreeStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		addUser(t, db, "q", 1000)
		e := newEnv(t, db, t.TempDir(), opts)
		e.want(http.StatusCreated, "q", "PUT", "/a", strings.Repeat("a", 600))
		e.want(http.StatusInsufficientStorage, "q", "PUT", "/b", strings.Repeat("b", 600))
		e.want(http.StatusInsufficientStorage, "q", "COPY", "/a", "", "Destination", e.base+"/c")
		e.want(http.StatusNoContent, "q", "DELETE", "/a", "")
		e.want(http.StatusCreated, "q", "PUT", "/b", strings.Repeat("b", 600))
	})
}

// The digests of the pipeline (bodies of 1 MiB or more, or of unknown
// length) and of the inline path equal the plain ones, whatever the
// caller's read size, and a body's error comes through after its bytes.
func TestHashReaderParallel(t *testing.T) {
	data := make([]byte, 3<<20+17)
	rand.Read(data)
	for _, c := range []struct {
		n, hint int64
		read    int
	}{{int64(len(data)), int64(len(data)), 100 << 10}, {int64(len(data)), -1, 32 << 10}, {5000, 5000, 4 << 10}, {hashChunk * 4, hashChunk * 4, 1 << 20}} {
		body := data[:c.n]
		gone := fmt.Errorf("client gone")
		hr := newHashReader(io.MultiReader(bytes.NewReader(body), &failReader{gone}), c.hint)
		var got []byte
		buf := make([]byte, c.read)
		var err error
		for err == nil {
			var k int
			k, err = hr.Read(buf)
			got = append(got, buf[:k]...)
		}
		m5, s1, s256 := hr.sums()
		hr.close()
		w5, w1, w256 := md5.Sum(body), sha1.Sum(body), sha256.Sum256(body)
		if !bytes.Equal(got, body) || err != gone || hr.readErr != gone {
			t.Errorf("size %d hint %d: read %d bytes, err %v, readErr %v", c.n, c.hint, len(got), err, hr.readErr)
		}
		if m5 != hex.EncodeToString(w5[:]) || s1 != hex.EncodeToString(w1[:]) || s256 != hex.EncodeToString(w256[:]) {
			t.Errorf("size %d hint %d read %d: digests %s %s %s, want %x %x %x", c.n, c.hint, c.read, m5, s1, s256, w5, w1, w256)
		}
	}
}
