package webdav

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/media"
	"github.com/ontoflow/ontoflow/models"

	"github.com/ontoflow/ontoflow/webdav/contents"
)

// TestForgedMtimeCannotKeepAnETag is issue 41's finding 1: a client that
// uploads other bytes of the same size with the same X-OC-Mtime, until the
// file system hands the path its old inode again, must still see a new
// ETag on GET and PROPFIND, fail an If-Match on the old one, get the new
// bytes on a conditional GET, and a media pin must name the new bytes.
// Before the fix POSIX tags were inode-mtime-size, all three reproducible.
func TestForgedMtimeCannotKeepAnETag(t *testing.T) {
	sizes := map[string]int{"small": 2048, "large": smallUpload + 4096}
	run := func(t *testing.T, db *gorm.DB, opts Options) {
		for name, size := range sizes {
			t.Run(name, func(t *testing.T) { forgeETag(t, newEnv(t, db, t.TempDir(), opts), "mallory-"+name, size) })
		}
	}
	t.Run("posix", func(t *testing.T) { eachStore(t, run) })
	t.Run("tree", func(t *testing.T) {
		t.Run("dir", func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, db *gorm.DB) {
				c, err := contents.NewDir(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				run(t, db, Options{Contents: c})
			})
		})
	})
}

func forgeETag(t *testing.T, e *env, user string, size int) {
	u := addUser(t, e.db, user, 0)
	ms := mediaOf(t, e)
	ctx := context.Background()
	mtime := []string{"X-OC-Mtime", "1700000000"}
	put := func(b []byte, hdr ...string) (int, string) {
		code, h, body := e.do(user, "PUT", "/pin.bin", string(b), append(hdr, mtime...)...)
		if code >= 300 && code != http.StatusPreconditionFailed {
			t.Fatalf("PUT: %d %s", code, body)
		}
		return code, h.Get("ETag")
	}
	x := bytes.Repeat([]byte("X"), size)
	_, ex := put(x)
	// Listed once, so the listing's memory of records holds X's.
	if got := propETag(t, e, user, "/pin.bin"); got != ex {
		t.Fatalf("PROPFIND getetag %s, PUT answered %s", got, ex)
	}
	pinX, err := ms.Stat(ctx, u.ID, "/pin.bin")
	if err != nil || pinX.SHA256 != sha(x) {
		t.Fatalf("pin of X: %+v %v", pinX, err)
	}
	ino := inodeOf(e, u.ID)
	// Alternate other bytes until the path holds X's inode again (ext4
	// reuses a freed inode at once; tree mode has none to reuse).
	var y []byte
	var ey string
	for i := 0; i < 8; i++ {
		y = bytes.Repeat([]byte{byte('a' + i)}, size)
		_, ey = put(y)
		if e.nodeMode() || inodeOf(e, u.ID) == ino {
			break
		}
	}
	if !e.nodeMode() && inodeOf(e, u.ID) != ino {
		t.Logf("the file system did not reuse the inode; the tags are compared anyway")
	}
	if ey == ex {
		t.Fatalf("new bytes answered the old ETag %s", ex)
	}
	code, h, body := e.do(user, "GET", "/pin.bin", "")
	if code != 200 || body != string(y) || h.Get("ETag") != ey {
		t.Fatalf("GET: %d, ETag %s (PUT said %s, X had %s), %d bytes", code, h.Get("ETag"), ey, ex, len(body))
	}
	if code, _, body := e.do(user, "GET", "/pin.bin", "", "If-None-Match", ex); code != 200 || body != string(y) {
		t.Fatalf("conditional GET with X's tag: %d, %d bytes; want the new bytes", code, len(body))
	}
	if code, _, _ := e.do(user, "GET", "/pin.bin", "", "If-None-Match", ey); code != http.StatusNotModified {
		t.Fatalf("conditional GET with the current tag: %d, want 304", code)
	}
	if got := propETag(t, e, user, "/pin.bin"); got != ey {
		t.Fatalf("PROPFIND getetag %s, GET %s", got, ey)
	}
	// Other packages (the console) see the same tag.
	if fi, err := e.h.Stat(ctx, u.ID, "/pin.bin"); err != nil || fi.ETag != ey {
		t.Fatalf("Handler.Stat: %+v %v, want ETag %s", fi, err, ey)
	}
	if ents, err := e.h.ReadDir(ctx, u.ID, "/"); err != nil || len(ents) != 1 || ents[0].ETag != ey {
		t.Fatalf("Handler.ReadDir: %+v %v, want one entry with ETag %s", ents, err, ey)
	}
	pinY, err := ms.Stat(ctx, u.ID, "/pin.bin")
	if err != nil || pinY.SHA256 != sha(y) || pinY.ETag == pinX.ETag {
		t.Fatalf("pin after the overwrite: %+v %v; want sha256 %s and a tag other than %s", pinY, err, sha(y), pinX.ETag)
	}
	if code, _ := put(x, "If-Match", ex); code != http.StatusPreconditionFailed {
		t.Fatalf("PUT If-Match with the old version's tag: %d, want 412", code)
	}
	if code, _ := put(x, "If-Match", ey); code >= 300 {
		t.Fatalf("PUT If-Match with the current tag: %d", code)
	}
	if size > smallUpload {
		stableAfterHashing(t, e, user)
	}
}

// stableAfterHashing: a large upload is hashed after its answer; adding
// the hashes to its record must not move its tag (a sync client would
// download it again).
func stableAfterHashing(t *testing.T, e *env, user string) {
	t.Helper()
	before := propETag(t, e, user, "/pin.bin")
	re := regexp.MustCompile(`SHA1:[0-9a-f]{40}`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, body := e.do(user, "PROPFIND", "/pin.bin",
			`<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:checksums/></d:prop></d:propfind>`, "Depth", "0")
		if re.MatchString(body) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never hashed: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after := propETag(t, e, user, "/pin.bin"); after != before {
		t.Fatalf("the tag moved when the file was hashed: %s -> %s", before, after)
	}
}

var getetagRe = regexp.MustCompile(`<D:getetag>([^<]*)</D:getetag>`)

func propETag(t *testing.T, e *env, user, p string) string {
	t.Helper()
	_, body := e.want(207, user, "PROPFIND", p,
		`<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/></d:prop></d:propfind>`, "Depth", "0")
	m := getetagRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no getetag in %s", body)
	}
	return m[1]
}

func inodeOf(e *env, userID string) uint64 {
	if e.nodeMode() {
		return 0
	}
	fi, err := os.Stat(filepath.Join(e.dir, userID, "pin.bin"))
	if err != nil {
		e.t.Fatal(err)
	}
	return fileID(fi)
}

// mediaOf is the media store the app would build beside e's handler.
func mediaOf(t *testing.T, e *env) media.Store {
	t.Helper()
	if e.nodeMode() {
		m, err := NewTreeMedia(e.db, e.h.opts.Contents)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m, err := NewMedia(e.dir, e.db, e.h.opts.ChecksumsInDB)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestHashingKeepsANewerRecord: CI once saw a large upload's ETag move
// under a client. The background hasher of an earlier version stat'ed the
// path, an upload of bytes with the same size and forged mtime committed
// its record, and the hasher then wrote the earlier version's record (and
// generation) over it. The stat cannot tell the two apart, so the
// database store must replace only the record it read before hashing. The
// upload's commit is staged here by writing its record between the read
// and the write, which is where the race put it.
func TestHashingKeepsANewerRecord(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, t.TempDir(), Options{ChecksumsInDB: true})
		u := addUser(t, e.db, "hasher", 0)
		body := strings.Repeat("v", smallUpload+4096)
		if code, _, out := e.do("hasher", "PUT", "/race.bin", body, "X-OC-Mtime", "1700000000"); code >= 300 {
			t.Fatalf("PUT: %d %s", code, out)
		}
		ctx := context.Background()
		root, err := e.h.openRoot(u.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		f, err := root.Open("race.bin")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		before, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		prior, had, err := e.h.meta.recordOf(ctx, u.ID, "/race.bin", f)
		if err != nil || !had || prior.Gen == 0 {
			t.Fatalf("the upload's record: %+v %v %v", prior, had, err)
		}
		newer := prior
		newer.Gen = prior.Gen ^ 0x5a5a
		if err := db.Save(&newer).Error; err != nil {
			t.Fatal(err)
		}
		hashed := prior
		hashed.SHA1, hashed.MD5 = strings.Repeat("1", 40), strings.Repeat("2", 32)
		if err := e.h.meta.recordSum(ctx, root, f, before, hashed, &prior); err != nil {
			t.Fatal(err)
		}
		var got models.DavChecksum
		if err := db.Where("user_id = ? AND path = ?", u.ID, "/race.bin").First(&got).Error; err != nil {
			t.Fatal(err)
		}
		if got.Gen != newer.Gen || got.SHA1 != newer.SHA1 {
			t.Fatalf("the newer record was overwritten: gen %x sha1 %q, want gen %x sha1 %q", got.Gen, got.SHA1, newer.Gen, newer.SHA1)
		}
		// With nothing written in between, the hashes are added and the
		// generation (and so the tag) stays.
		hashed.Gen = newer.Gen
		if err := e.h.meta.recordSum(ctx, root, f, before, hashed, &newer); err != nil {
			t.Fatal(err)
		}
		if err := db.Where("user_id = ? AND path = ?", u.ID, "/race.bin").First(&got).Error; err != nil {
			t.Fatal(err)
		}
		if got.SHA1 != hashed.SHA1 || got.Gen != newer.Gen {
			t.Fatalf("hashes of the unchanged record not recorded: %+v", got)
		}
	})
}
