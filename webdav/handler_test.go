package webdav

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

const lockBody = `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:%s/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>%s</D:owner></D:lockinfo>`

func lockXML(scope, owner string) string { return fmt.Sprintf(lockBody, scope, owner) }

var tokenRE = regexp.MustCompile(`<(opaquelocktoken:[^>]+)>`)

// lock takes a lock and returns its token.
func (e *env) lock(user, path, scope, depth string) string {
	e.t.Helper()
	h, _ := e.want(http.StatusOK, user, "LOCK", path, lockXML(scope, "me"), "Depth", depth, "Timeout", "Second-600")
	m := tokenRE.FindStringSubmatch(h.Get("Lock-Token"))
	if m == nil {
		e.t.Fatalf("LOCK %s: no Lock-Token header in %v", path, h)
	}
	return m[1]
}

func TestAuthAndOptions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		h, _ := e.want(http.StatusUnauthorized, "", "PROPFIND", "/", "", "Depth", "0")
		if !strings.HasPrefix(h.Get("WWW-Authenticate"), `Basic realm="`) {
			t.Fatalf("WWW-Authenticate = %q", h.Get("WWW-Authenticate"))
		}
		req, _ := http.NewRequest("GET", e.base+"/", nil)
		req.SetBasicAuth("alice", "wrong password")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong password: %d", resp.StatusCode)
		}
		// Guessing on: the throttle refuses with 429 and Retry-After (a
		// 401 would make a client prompt again), and while the window
		// lasts even the right password is refused.
		addUser(t, db, "bob", 0)
		var last *http.Response
		for i := 0; i < 10; i++ {
			req, _ := http.NewRequest("PROPFIND", e.base+"/", nil)
			req.SetBasicAuth("bob", "wrong password")
			if last, err = http.DefaultClient.Do(req); err != nil {
				t.Fatal(err)
			}
			last.Body.Close()
		}
		if last.StatusCode != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
			t.Fatalf("after 10 wrong passwords: %d, Retry-After %q", last.StatusCode, last.Header.Get("Retry-After"))
		}
		if code, _, _ := e.do("bob", "PROPFIND", "/", "", "Depth", "0"); code != http.StatusTooManyRequests {
			t.Fatalf("right password inside the throttle window: %d, want 429", code)
		}
		// Basic only: a valid bearer token (a guest session's or a full
		// one) does not open the user's files.
		alice := &models.User{}
		if err := db.Where("username = ?", "alice").Take(alice).Error; err != nil {
			t.Fatal(err)
		}
		for _, guest := range []bool{true, false} {
			secret, _, err := auth.NewService(db, auth.Options{}).IssueToken(context.Background(), alice, "t", time.Hour, guest)
			if err != nil {
				t.Fatal(err)
			}
			if code, h, _ := e.do("", "PROPFIND", "/", "", "Depth", "0", "Authorization", "Bearer "+secret); code != http.StatusUnauthorized || h.Get("WWW-Authenticate") == "" {
				t.Fatalf("bearer token (guest %v) on WebDAV: %d, want 401 with WWW-Authenticate", guest, code)
			}
		}
		for _, u := range []string{e.base + "/", e.srv.URL + "/", e.srv.URL + "/webdav"} {
			h, _ := e.want(http.StatusOK, "alice", "OPTIONS", u, "")
			if h.Get("DAV") != "1, 2" || h.Get("MS-Author-Via") != "DAV" || !strings.Contains(h.Get("Allow"), "PROPFIND") {
				t.Fatalf("OPTIONS %s headers: %v", u, h)
			}
		}
		// Windows and Finder probe "/" and the mount point without slash.
		_, b := e.want(http.StatusMultiStatus, "", "PROPFIND", e.srv.URL+"/", "", "Depth", "1")
		if !strings.Contains(b, "<D:href>/webdav/</D:href>") {
			t.Fatalf("PROPFIND / does not list /webdav/: %s", b)
		}
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", e.srv.URL+"/webdav", "", "Depth", "0")
		if !strings.Contains(b, "<D:collection/>") {
			t.Fatalf("PROPFIND /webdav: %s", b)
		}
		e.want(http.StatusMethodNotAllowed, "alice", "POST", "/x", "data")
		e.want(http.StatusNotImplemented, "alice", "BREW", "/x", "")
	})
}

func TestPutGetSemantics(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{MaxUploadBytes: 1 << 20})
		e.want(http.StatusCreated, "alice", "PUT", "/a.txt", "one")
		h, _ := e.want(http.StatusNoContent, "alice", "PUT", "/a.txt", "two")
		etag := h.Get("ETag")
		if !strings.HasPrefix(etag, `"`) {
			t.Fatalf("strong ETag expected, got %q", etag)
		}
		gh, body := e.want(http.StatusOK, "alice", "GET", "/a.txt", "")
		if body != "two" || gh.Get("ETag") != etag || gh.Get("X-Content-Type-Options") != "nosniff" || gh.Get("Last-Modified") == "" {
			t.Fatalf("GET: %q %v", body, gh)
		}
		e.want(http.StatusNotModified, "alice", "GET", "/a.txt", "", "If-None-Match", etag)
		_, part := e.want(http.StatusPartialContent, "alice", "GET", "/a.txt", "", "Range", "bytes=1-")
		if part != "wo" {
			t.Fatalf("range: %q", part)
		}
		e.want(http.StatusPreconditionFailed, "alice", "PUT", "/a.txt", "x", "If-Match", `"nope"`)
		e.want(http.StatusPreconditionFailed, "alice", "PUT", "/a.txt", "x", "If-None-Match", "*")
		e.want(http.StatusNoContent, "alice", "PUT", "/a.txt", "three", "If-Match", etag)
		e.want(http.StatusCreated, "alice", "PUT", "/b.txt", "new", "If-None-Match", "*")
		e.want(http.StatusConflict, "alice", "PUT", "/missing/c.txt", "x")
		e.want(http.StatusRequestEntityTooLarge, "alice", "PUT", "/big", strings.Repeat("x", 1<<20+1))
		// X-OC-Mtime sets the modification time, as ownCloud does.
		h, _ = e.want(http.StatusCreated, "alice", "PUT", "/m.txt", "m", "X-OC-Mtime", "1500000000")
		if h.Get("X-OC-Mtime") != "accepted" {
			t.Fatalf("X-OC-Mtime not accepted: %v", h)
		}
		gh, _ = e.want(http.StatusOK, "alice", "HEAD", "/m.txt", "")
		if gh.Get("Last-Modified") != time.Unix(1500000000, 0).UTC().Format(http.TimeFormat) {
			t.Fatalf("mtime: %s", gh.Get("Last-Modified"))
		}
		e.want(http.StatusCreated, "alice", "MKCOL", "/d", "")
		e.want(http.StatusMethodNotAllowed, "alice", "MKCOL", "/d", "")
		e.want(http.StatusConflict, "alice", "MKCOL", "/x/y", "")
		e.want(http.StatusUnsupportedMediaType, "alice", "MKCOL", "/e", "<x/>")
		e.want(http.StatusMethodNotAllowed, "alice", "PUT", "/d", "x")
		e.want(http.StatusNoContent, "alice", "DELETE", "/d", "")
		e.want(http.StatusNotFound, "alice", "DELETE", "/d", "")
		e.want(http.StatusNotFound, "alice", "GET", "/d", "")
		ents, _ := os.ReadDir(filepath.Join(e.dir))
		for _, u := range ents {
			files, _ := os.ReadDir(filepath.Join(e.dir, u.Name()))
			for _, f := range files {
				if strings.HasPrefix(f.Name(), tmpPrefix) {
					t.Fatalf("temporary file left behind: %s", f.Name())
				}
			}
		}
	})
}

func TestQuota(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 100)
		addUser(t, db, "bob", 0)
		e := newEnv(t, db, t.TempDir(), Options{DefaultQuota: 10})
		e.want(http.StatusCreated, "alice", "PUT", "/a", strings.Repeat("a", 60))
		e.want(http.StatusInsufficientStorage, "alice", "PUT", "/b", strings.Repeat("b", 60))
		// Replacing a file counts only the difference.
		e.want(http.StatusNoContent, "alice", "PUT", "/a", strings.Repeat("a", 90))
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:quota-available-bytes/><D:quota-used-bytes/></D:prop></D:propfind>`, "Depth", "0")
		if !strings.Contains(b, "<D:quota-available-bytes>10</D:quota-available-bytes>") || !strings.Contains(b, "<D:quota-used-bytes>90</D:quota-used-bytes>") {
			t.Fatalf("quota props: %s", b)
		}
		// COPY counts too: the source's size less what it replaces.
		e.want(http.StatusInsufficientStorage, "alice", "COPY", "/a", "", "Destination", e.base+"/c")
		e.want(http.StatusCreated, "alice", "MKCOL", "/t", "")
		e.want(http.StatusCreated, "alice", "PUT", "/t/s", "12345")
		e.want(http.StatusCreated, "alice", "COPY", "/t", "", "Destination", e.base+"/t2")
		e.want(http.StatusInsufficientStorage, "alice", "COPY", "/t", "", "Destination", e.base+"/t3")
		e.want(http.StatusNoContent, "alice", "COPY", "/t", "", "Destination", e.base+"/t2")
		e.want(http.StatusNotFound, "alice", "GET", "/c", "")
		e.want(http.StatusNotFound, "alice", "GET", "/t3/s", "")
		// A shrinking replacement frees its room for the next upload.
		e.want(http.StatusNoContent, "alice", "PUT", "/a", strings.Repeat("a", 10))
		e.want(http.StatusCreated, "alice", "PUT", "/c", strings.Repeat("c", 80))
		e.want(http.StatusInsufficientStorage, "alice", "PUT", "/c2", "c")
		// bob has no quota of his own: the default (10 bytes) applies.
		e.want(http.StatusInsufficientStorage, "bob", "PUT", "/a", strings.Repeat("a", 11))
		e.want(http.StatusCreated, "bob", "PUT", "/a", strings.Repeat("a", 10))
		e.want(http.StatusInsufficientStorage, "bob", "COPY", "/a", "", "Destination", e.base+"/b")
	})
}

// Concurrent uploads cannot share one quota's room: both are let in while
// their sizes are unknown (chunked bodies), and the second to finish is
// refused (507) because the first took the room.
func TestQuotaConcurrentPuts(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		carol := addUser(t, db, "carol", 100)
		dir := t.TempDir()
		e := newEnv(t, db, dir, Options{})
		e.want(http.StatusCreated, "carol", "MKCOL", "/x", "")
		w1, d1 := e.slowPut("carol", "/x/one")
		w2, d2 := e.slowPut("carol", "/x/two")
		w1.Write(bytes.Repeat([]byte("1"), 60))
		w2.Write(bytes.Repeat([]byte("2"), 60))
		// Both are past the quota check once their staging files exist.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			ents, _ := os.ReadDir(filepath.Join(dir, carol.ID, "x"))
			if len(ents) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("uploads not staged: %v", ents)
			}
		}
		w1.Close()
		if s := <-d1; s != http.StatusCreated {
			t.Fatalf("first upload: %d", s)
		}
		w2.Close()
		if s := <-d2; s != http.StatusInsufficientStorage {
			t.Fatalf("second upload into the room the first took: %d, want 507", s)
		}
		_, b := e.want(http.StatusMultiStatus, "carol", "PROPFIND", "/", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:quota-used-bytes/></D:prop></D:propfind>`, "Depth", "0")
		if !strings.Contains(b, "<D:quota-used-bytes>60</D:quota-used-bytes>") {
			t.Fatalf("usage after the refused upload: %s", b)
		}
		if ents, _ := os.ReadDir(filepath.Join(dir, carol.ID, "x")); len(ents) != 1 {
			t.Fatalf("the refused upload left files behind: %v", ents)
		}
	})
}

func TestBadInput(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{MaxXMLBytes: 4096, MaxXMLDepth: 8})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "x")
		deep := strings.Repeat("<a>", 20) + strings.Repeat("</a>", 20)
		big := `<D:propfind xmlns:D="DAV:"><D:prop>` + strings.Repeat("<D:x/>", 1000) + `</D:prop></D:propfind>`
		for _, m := range []string{"PROPFIND", "PROPPATCH", "LOCK"} {
			hdr := []string{"Depth", "0"}
			e.want(http.StatusBadRequest, "alice", m, "/f", "<D:propfind xmlns:D='DAV:'><D:prop>", hdr...)
			e.want(http.StatusBadRequest, "alice", m, "/f", `<D:propfind xmlns:D="DAV:"><x:prop/></D:propfind>`, hdr...)
			e.want(http.StatusBadRequest, "alice", m, "/f", `<D:propfind xmlns:D="DAV:" xmlns:z=""><D:allprop/></D:propfind>`, hdr...)
			e.want(http.StatusBadRequest, "alice", m, "/f", deep, hdr...)
			e.want(http.StatusRequestEntityTooLarge, "alice", m, "/f", big, hdr...)
			e.want(http.StatusBadRequest, "alice", m, "/f", `<!DOCTYPE x [<!ENTITY a "b">]><x/>`, hdr...)
		}
		_, b := e.want(http.StatusForbidden, "alice", "PROPFIND", "/", "", "Depth", "infinity")
		if !strings.Contains(b, "propfind-finite-depth") {
			t.Fatalf("Depth infinity: %s", b)
		}
		e.want(http.StatusForbidden, "alice", "PROPFIND", "/", "")
		e.want(http.StatusBadRequest, "alice", "PROPFIND", "/", "", "Depth", "2")
		e.want(http.StatusNotFound, "alice", "PROPFIND", "/nope", "", "Depth", "0")
		e.want(http.StatusBadRequest, "alice", "PROPPATCH", "/f", "")
		e.want(http.StatusBadRequest, "alice", "LOCK", "/f", `<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:bogus/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`)
		e.want(http.StatusBadRequest, "alice", "LOCK", "/f", lockXML("exclusive", ""), "Depth", "1")
		e.want(http.StatusPreconditionFailed, "alice", "LOCK", "/f", "", "If", "(<opaquelocktoken:unknown>)")
		e.want(http.StatusBadRequest, "alice", "UNLOCK", "/f", "")
		e.want(http.StatusConflict, "alice", "UNLOCK", "/f", "", "Lock-Token", "<opaquelocktoken:unknown>")
		e.want(http.StatusBadRequest, "alice", "PUT", "/f", "y", "If", "(garbage")
		e.want(http.StatusBadRequest, "alice", "COPY", "/f", "")
		e.want(http.StatusBadRequest, "alice", "COPY", "/f", "", "Destination", e.base+"/g", "Overwrite", "maybe")
		e.want(http.StatusBadRequest, "alice", "MOVE", "/f", "", "Destination", e.base+"/g", "Depth", "0")
		e.want(http.StatusForbidden, "alice", "MOVE", "/f", "", "Destination", e.base+"/f")
		e.want(http.StatusConflict, "alice", "COPY", "/f", "", "Destination", e.base+"/no/g")
		e.want(http.StatusNotFound, "alice", "COPY", "/nope", "", "Destination", e.base+"/g")
		e.want(http.StatusForbidden, "alice", "DELETE", "/", "")
	})
}

func TestTraversal(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		alice := addUser(t, db, "alice", 0)
		bob := addUser(t, db, "bob", 0)
		dir := t.TempDir()
		e := newEnv(t, db, dir, Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/secret", "alice's")
		e.want(http.StatusCreated, "bob", "PUT", "/mine", "bob's")
		if err := os.WriteFile(filepath.Join(dir, "outside"), []byte("outside"), 0o644); err != nil {
			t.Fatal(err)
		}
		// A symlink planted in bob's tree (e.g. by an operator or a
		// restored backup) must not lead anywhere outside it.
		if err := os.Symlink(filepath.Join(dir, alice.ID), filepath.Join(dir, bob.ID, "link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc/passwd", filepath.Join(dir, bob.ID, "passwd")); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{
			"/webdav/../outside",
			"/webdav/%2e%2e/outside",
			"/webdav/%2E%2E%2Foutside",
			"/webdav/..%2f..%2foutside",
			"/webdav/x/../../outside",
			"/webdav/" + alice.ID + "/secret",
			"/webdav//" + filepath.Join(dir, alice.ID, "secret"),
			"/webdav/link/secret",
			"/webdav/passwd",
			"/webdav/%00",
		} {
			conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\nConnection: close\r\n\r\n", p, basic("bob"))
			resp, _ := io.ReadAll(conn)
			conn.Close()
			s := string(resp)
			if strings.HasPrefix(s, "HTTP/1.1 200") || strings.Contains(s, "alice's") || strings.Contains(s, "outside") || strings.Contains(s, "root:") {
				t.Fatalf("GET %s escaped the tree: %.300s", p, s)
			}
		}
		// PROPFIND does not list the escaping links' targets.
		_, b := e.want(http.StatusMultiStatus, "bob", "PROPFIND", "/", "", "Depth", "1")
		if strings.Contains(b, "/webdav/link/") || strings.Contains(b, "/webdav/passwd") {
			t.Fatalf("escaping symlinks listed: %s", b)
		}
		// Destinations on another host or outside the tree.
		e.want(http.StatusBadGateway, "bob", "COPY", "/mine", "", "Destination", "http://evil.example/webdav/x")
		e.want(http.StatusForbidden, "bob", "COPY", "/mine", "", "Destination", e.srv.URL+"/other/x")
		e.want(http.StatusBadRequest, "bob", "MOVE", "/mine", "", "Destination", e.base+"/../x")
		e.want(http.StatusBadRequest, "bob", "MOVE", "/mine", "", "Destination", e.base+"/%2e%2e/x")
		if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
			t.Fatal("a MOVE reached the data directory")
		}
		if b, _ := os.ReadFile(filepath.Join(dir, alice.ID, "secret")); string(b) != "alice's" {
			t.Fatalf("alice's file changed: %q", b)
		}
	})
}

func basic(user string) string {
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth(user, testPass)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

func TestIsolation(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		addUser(t, db, "bob", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "MKCOL", "/private", "")
		e.want(http.StatusCreated, "alice", "PUT", "/private/doc", "alice's")
		// bob sees his own (empty) tree under the same URLs.
		e.want(http.StatusNotFound, "bob", "GET", "/private/doc", "")
		_, b := e.want(http.StatusMultiStatus, "bob", "PROPFIND", "/", "", "Depth", "1")
		if strings.Contains(b, "private") {
			t.Fatalf("bob lists alice's tree: %s", b)
		}
		e.want(http.StatusConflict, "bob", "LOCK", "/private/doc", lockXML("exclusive", "bob"))
		e.want(http.StatusNotFound, "bob", "MOVE", "/private/doc", "", "Destination", e.base+"/stolen")
		e.want(http.StatusNotFound, "bob", "COPY", "/private/doc", "", "Destination", e.base+"/stolen")
		// Copying into "alice's" path lands in bob's tree.
		e.want(http.StatusCreated, "bob", "MKCOL", "/private", "")
		e.want(http.StatusCreated, "bob", "PUT", "/mine", "bob's")
		e.want(http.StatusCreated, "bob", "COPY", "/mine", "", "Destination", e.base+"/private/doc2")
		e.want(http.StatusNotFound, "alice", "GET", "/private/doc2", "")
		_, got := e.want(http.StatusOK, "alice", "GET", "/private/doc", "")
		if got != "alice's" {
			t.Fatalf("alice's file: %q", got)
		}
		// A lock of alice does not show up for, or block, bob.
		tok := e.lock("alice", "/private/doc", "exclusive", "0")
		e.want(http.StatusCreated, "bob", "PUT", "/private/doc", "bob's")
		e.want(http.StatusConflict, "bob", "UNLOCK", "/private/doc", "", "Lock-Token", "<"+tok+">")
		e.want(http.StatusLocked, "alice", "PUT", "/private/doc", "x")
	})
}

func TestAbortedPutKeepsOldFile(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		u := addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "old content")
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "PUT /webdav/f HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\nContent-Length: 1000000\r\n\r\n", basic("alice"))
		conn.Write(bytes.Repeat([]byte("n"), 300000))
		conn.Close()
		// The server notices the cut when it reads; wait until the
		// temporary file is gone.
		deadline := time.Now().Add(30 * time.Second)
		for {
			left := false
			files, _ := os.ReadDir(filepath.Join(e.dir, u.ID))
			for _, f := range files {
				left = left || strings.HasPrefix(f.Name(), tmpPrefix)
			}
			if !left {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("temporary upload file never removed")
			}
			time.Sleep(20 * time.Millisecond)
		}
		_, b := e.want(http.StatusOK, "alice", "GET", "/f", "")
		if b != "old content" {
			t.Fatalf("after aborted PUT: %q", b)
		}
	})
}

// slowPut starts a PUT whose body the test feeds through the returned
// writer; the result arrives on the channel.
func (e *env) slowPut(user, path string) (*io.PipeWriter, chan int) {
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("PUT", e.base+path, pr)
	req.SetBasicAuth(user, testPass)
	done := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	return pw, done
}

func TestGetDuringPutAndConcurrentPuts(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "old")
		chunk := 1 << 20
		w1, d1 := e.slowPut("alice", "/f")
		w2, d2 := e.slowPut("alice", "/f")
		for i := 0; i < 4; i++ {
			w1.Write(bytes.Repeat([]byte("a"), chunk))
			w2.Write(bytes.Repeat([]byte("b"), chunk))
			_, b := e.want(http.StatusOK, "alice", "GET", "/f", "")
			if b != "old" {
				t.Fatalf("GET during PUT saw %d bytes of new content", len(b))
			}
		}
		w1.Close()
		w2.Close()
		s1, s2 := <-d1, <-d2
		if s1 != http.StatusNoContent || s2 != http.StatusNoContent {
			t.Fatalf("concurrent PUTs: %d, %d", s1, s2)
		}
		_, b := e.want(http.StatusOK, "alice", "GET", "/f", "")
		if b != strings.Repeat("a", 4*chunk) && b != strings.Repeat("b", 4*chunk) {
			t.Fatalf("concurrent PUTs mixed: %d bytes", len(b))
		}
		// Many small concurrent PUTs to one path: every one succeeds.
		var wg sync.WaitGroup
		codes := make(chan int, 16)
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				req, _ := http.NewRequest("PUT", e.base+"/g", strings.NewReader(strings.Repeat(fmt.Sprint(i%10), 1000)))
				req.SetBasicAuth("alice", testPass)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					codes <- -1
					return
				}
				resp.Body.Close()
				codes <- resp.StatusCode
			}(i)
		}
		wg.Wait()
		close(codes)
		for c := range codes {
			if c != http.StatusCreated && c != http.StatusNoContent {
				t.Fatalf("concurrent small PUT: %d", c)
			}
		}
		_, b = e.want(http.StatusOK, "alice", "GET", "/g", "")
		if len(b) != 1000 || strings.Count(b, b[:1]) != 1000 {
			t.Fatalf("concurrent small PUTs mixed: %q", b)
		}
	})
}

func TestPropfindAndProppatch(t *testing.T) {
	eachStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		e.want(http.StatusCreated, "alice", "MKCOL", "/dir", "")
		e.want(http.StatusCreated, "alice", "PUT", "/dir/"+escapeSegment("a b#?%.txt"), "hello")
		e.want(http.StatusCreated, "alice", "PUT", "/dir/"+escapeSegment("é 🎉.png"), "png")
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/dir/", "", "Depth", "1")
		for _, s := range []string{
			"<D:href>/webdav/dir/</D:href>", "<D:href>/webdav/dir/a%20b%23%3F%25.txt</D:href>",
			"<D:getcontentlength>5</D:getcontentlength>", "<D:getcontenttype>text/plain; charset=utf-8</D:getcontenttype>",
			"<D:getcontenttype>image/png</D:getcontenttype>", "<D:creationdate>", "<D:supportedlock><D:lockentry>",
			"<D:displayname>é 🎉.png</D:displayname>", "<D:getetag>&#34;",
		} {
			if !strings.Contains(b, s) && !(strings.HasPrefix(s, "<D:getetag>") && strings.Contains(b, `<D:getetag>"`)) {
				t.Fatalf("PROPFIND Depth 1 lacks %s:\n%s", s, b)
			}
		}
		// Checksums the way rclone (owncloud vendor) asks for them.
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/dir/a%20b%23%3F%25.txt", `<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><d:getlastmodified/><oc:checksums/><oc:nope/></d:prop></d:propfind>`, "Depth", "0")
		if !strings.Contains(b, "SHA1:aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d MD5:5d41402abc4b2a76b9719d911017c592") || !strings.Contains(b, "404 Not Found") {
			t.Fatalf("checksums: %s", b)
		}
		// Dead properties, Windows properties on a folder, mtime.
		patch := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:" xmlns:x="urn:x"><D:set><D:prop>` +
			`<Z:Win32CreationTime>Mon, 01 Jan 2024 00:00:00 GMT</Z:Win32CreationTime><Z:Win32FileAttributes>00000010</Z:Win32FileAttributes>` +
			`<x:color xml:lang="en">blue <x:b>and</x:b> green</x:color></D:prop></D:set></D:propertyupdate>`
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/dir", patch)
		if strings.Contains(b, "403") || strings.Contains(b, "424") {
			t.Fatalf("PROPPATCH on folder: %s", b)
		}
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/dir/a%20b%23%3F%25.txt",
			`<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:lastmodified>1600000000</D:lastmodified></D:prop></D:set></D:propertyupdate>`)
		if !strings.Contains(b, "200 OK") {
			t.Fatalf("PROPPATCH lastmodified: %s", b)
		}
		h, _ := e.want(http.StatusOK, "alice", "HEAD", "/dir/a%20b%23%3F%25.txt", "")
		if h.Get("Last-Modified") != time.Unix(1600000000, 0).UTC().Format(http.TimeFormat) {
			t.Fatalf("mtime after PROPPATCH: %s", h.Get("Last-Modified"))
		}
		// The checksum stays valid: the content did not change.
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/dir/a%20b%23%3F%25.txt", `<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:checksums/></d:prop></d:propfind>`, "Depth", "0")
		if !strings.Contains(b, "SHA1:") {
			t.Fatalf("checksum lost after mtime change: %s", b)
		}
		// Protected live properties: 403 for them, 424 for the rest.
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/dir", `<D:propertyupdate xmlns:D="DAV:" xmlns:x="urn:x"><D:set><D:prop><D:getetag>x</D:getetag><x:other>1</x:other></D:prop></D:set></D:propertyupdate>`)
		if !strings.Contains(b, "403 Forbidden") || !strings.Contains(b, "424 Failed Dependency") {
			t.Fatalf("protected property: %s", b)
		}
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/dir", `<D:propfind xmlns:D="DAV:"><D:prop><x:other xmlns:x="urn:x"/><x:color xmlns:x="urn:x"/></D:prop></D:propfind>`, "Depth", "0")
		if !strings.Contains(b, `<color xmlns="urn:x" xml:lang="en">blue <b xmlns="urn:x">and</b> green</color>`) || !strings.Contains(b, "404") {
			t.Fatalf("dead property: %s", b)
		}
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/dir", `<D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`, "Depth", "0")
		if !strings.Contains(b, `<Win32FileAttributes xmlns="urn:schemas-microsoft-com:"/>`) || !strings.Contains(b, "<D:resourcetype/>") {
			t.Fatalf("propname: %s", b)
		}
		// Properties travel with COPY and MOVE and die with DELETE.
		e.want(http.StatusCreated, "alice", "COPY", "/dir", "", "Destination", e.base+"/copy")
		e.want(http.StatusCreated, "alice", "MOVE", "/copy", "", "Destination", e.base+"/moved")
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/moved", "", "Depth", "0")
		if !strings.Contains(b, `<color xmlns="urn:x" xml:lang="en">`) {
			t.Fatalf("properties not carried by COPY+MOVE: %s", b)
		}
		e.want(http.StatusNoContent, "alice", "DELETE", "/moved", "")
		e.want(http.StatusCreated, "alice", "MKCOL", "/moved", "")
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/moved", "", "Depth", "0")
		if strings.Contains(b, `urn:x`) {
			t.Fatalf("properties survived DELETE: %s", b)
		}
	})
}

func TestLocks(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		dir := t.TempDir()
		e := newEnv(t, db, dir, Options{MaxLockTimeout: time.Hour})
		e.want(http.StatusCreated, "alice", "MKCOL", "/d", "")
		e.want(http.StatusCreated, "alice", "PUT", "/d/f", "x")
		tok := e.lock("alice", "/d", "exclusive", "infinity")
		e.want(http.StatusLocked, "alice", "PUT", "/d/f", "y")
		e.want(http.StatusLocked, "alice", "DELETE", "/d/f", "")
		e.want(http.StatusLocked, "alice", "MOVE", "/d/f", "", "Destination", e.base+"/g")
		e.want(http.StatusLocked, "alice", "PROPPATCH", "/d/f", `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><x xmlns="urn:x">1</x></D:prop></D:set></D:propertyupdate>`)
		if _, b := e.want(http.StatusLocked, "alice", "LOCK", "/d/f", lockXML("shared", "x"), "Depth", "0"); !strings.Contains(b, "<D:no-conflicting-lock><D:href>/webdav/d</D:href>") {
			t.Fatalf("LOCK conflict body: %s", b)
		}
		e.want(http.StatusNoContent, "alice", "PUT", "/d/f", "y", "If", "(<"+tok+">)")
		// Tagged list with an ETag, and Not.
		h, _ := e.want(http.StatusOK, "alice", "HEAD", "/d/f", "")
		etag := h.Get("ETag")
		e.want(http.StatusNoContent, "alice", "PUT", "/d/f", "z", "If", "<"+e.base+"/d/f> (<"+tok+"> ["+etag+"])")
		e.want(http.StatusPreconditionFailed, "alice", "PUT", "/d/f", "z", "If", `(<`+tok+`> ["bogus"])`)
		e.want(http.StatusNoContent, "alice", "PUT", "/d/f", "w", "If", `(<`+tok+`> ["bogus"]) (<`+tok+`> Not ["bogus"])`)
		// Lock discovery, capped timeout, refresh.
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/d/f", `<D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>`, "Depth", "0")
		if !strings.Contains(b, tok) || !strings.Contains(b, "<D:depth>infinity</D:depth>") {
			t.Fatalf("lockdiscovery: %s", b)
		}
		_, b = e.want(http.StatusOK, "alice", "LOCK", "/d", "", "If", "(<"+tok+">)", "Timeout", "Infinite")
		if !strings.Contains(b, "<D:timeout>Second-3600</D:timeout>") && !strings.Contains(b, "<D:timeout>Second-3599</D:timeout>") {
			t.Fatalf("refresh did not cap the timeout at 1h: %s", b)
		}
		// A restart (new Handler, same database and directory) and a
		// second replica both see the lock.
		e2 := newEnv(t, db, dir, Options{})
		e2.want(http.StatusLocked, "alice", "PUT", "/d/f", "v")
		e2.want(http.StatusNoContent, "alice", "UNLOCK", "/d", "", "Lock-Token", "<"+tok+">")
		e.want(http.StatusNoContent, "alice", "PUT", "/d/f", "v")
		// Shared locks coexist; an exclusive one does not join them.
		s1 := e.lock("alice", "/d/f", "shared", "0")
		s2 := e2.lock("alice", "/d/f", "shared", "0")
		e.want(http.StatusLocked, "alice", "LOCK", "/d/f", lockXML("exclusive", "x"), "Depth", "0")
		e.want(http.StatusNoContent, "alice", "PUT", "/d/f", "u", "If", "(<"+s2+">)")
		// DELETE releases the locks of what it removes.
		e.want(http.StatusNoContent, "alice", "DELETE", "/d/f", "", "If", "(<"+s1+">)")
		e.want(http.StatusCreated, "alice", "PUT", "/d/f", "again")
		// LOCK on an unmapped URL creates an empty file.
		e.want(http.StatusCreated, "alice", "LOCK", "/d/new", lockXML("exclusive", "x"), "Depth", "0")
		// MOVE does not move locks: the lock of the source is dropped.
		e.want(http.StatusCreated, "alice", "PUT", "/m", "m")
		mt := e.lock("alice", "/m", "exclusive", "0")
		e.want(http.StatusCreated, "alice", "MOVE", "/m", "", "Destination", e.base+"/m2", "If", "(<"+mt+">)")
		e.want(http.StatusNoContent, "alice", "PUT", "/m2", "free")
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/m2", `<D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>`, "Depth", "0")
		if strings.Contains(b, "activelock") {
			t.Fatalf("lock moved with its resource: %s", b)
		}
	})
}

func TestDeadPropsAfterRestart(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		dir := t.TempDir()
		e := newEnv(t, db, dir, Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "x")
		e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/f", `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><k xmlns="urn:k">v</k></D:prop></D:set></D:propertyupdate>`)
		e.srv.Close()
		e2 := newEnv(t, db, dir, Options{})
		_, b := e2.want(http.StatusMultiStatus, "alice", "PROPFIND", "/f", "", "Depth", "0")
		if !strings.Contains(b, `<k xmlns="urn:k">v</k>`) {
			t.Fatalf("dead property lost on restart: %s", b)
		}
	})
}

func TestBigTreeCopyMove(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		u := addUser(t, db, "alice", 0)
		dir := t.TempDir()
		e := newEnv(t, db, dir, Options{})
		e.want(http.StatusCreated, "alice", "MKCOL", "/big", "")
		for i := 0; i < 3000; i++ {
			if err := os.WriteFile(filepath.Join(dir, u.ID, "big", fmt.Sprintf("f%04d", i)), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		e.want(http.StatusCreated, "alice", "COPY", "/big", "", "Destination", e.base+"/big2")
		e.want(http.StatusCreated, "alice", "MOVE", "/big2", "", "Destination", e.base+"/big3")
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/big3", `<D:propfind xmlns:D="DAV:"><D:prop><D:getcontentlength/></D:prop></D:propfind>`, "Depth", "1")
		if n := strings.Count(b, "<D:response>"); n != 3001 {
			t.Fatalf("PROPFIND after COPY+MOVE lists %d entries, want 3001", n)
		}
		e.want(http.StatusNoContent, "alice", "DELETE", "/big3", "")
	})
}

func TestMetricsAndLogs(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		reg := prometheus.NewRegistry()
		var logs bytes.Buffer
		var mu sync.Mutex
		e := newEnv(t, db, t.TempDir(), Options{Registerer: reg, Logger: newTestLogger(&logs, &mu)})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "abc")
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
		for _, n := range []string{"ontoflow_webdav_requests_total", "ontoflow_webdav_request_duration_seconds", "ontoflow_webdav_request_bytes_total"} {
			if !names[n] {
				t.Fatalf("metric %s missing: %v", n, names)
			}
		}
		mu.Lock()
		line := logs.String()
		mu.Unlock()
		for _, s := range []string{"user=alice", "method=PUT", "path=/webdav/f", "status=201", "bytes_in=3", "duration_ms="} {
			if !strings.Contains(line, s) {
				t.Fatalf("access log lacks %s: %s", s, line)
			}
		}
	})
}

// TestLargeUploadChecksum: a large upload is answered before it is hashed;
// its checksum shows up once the background hash is recorded, and only
// for the content that was hashed.
func TestLargeUploadChecksum(t *testing.T) {
	eachStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		data := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
		e.want(http.StatusCreated, "alice", "PUT", "/big.bin", data)
		const ask = `<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:checksums/></d:prop></d:propfind>`
		want := fmt.Sprintf("SHA1:%x MD5:%x", sha1.Sum([]byte(data)), md5.Sum([]byte(data)))
		deadline := time.Now().Add(time.Minute)
		for {
			_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/big.bin", ask, "Depth", "0")
			if strings.Contains(b, "<checksum>") {
				if !strings.Contains(b, want) {
					t.Fatalf("checksum of large upload: %s, want %s", b, want)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("large upload never got a checksum: %s", b)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// A replacement drops the old checksum at once.
		e.want(http.StatusNoContent, "alice", "PUT", "/big.bin", data+"x")
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/big.bin", ask, "Depth", "0")
		if strings.Contains(b, want) {
			t.Fatalf("stale checksum published after replace: %s", b)
		}
	})
}

// TestChecksumFollowsFile: a checksum is published for the content it was
// computed from and no other, through listings, COPY, MOVE, a change
// behind the server's back and a replacement, in both stores.
func TestChecksumFollowsFile(t *testing.T) {
	eachStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		u := addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		const ask = `<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:checksums/></d:prop></d:propfind>`
		sumOf := func(s string) string { return fmt.Sprintf("SHA1:%x MD5:%x", sha1.Sum([]byte(s)), md5.Sum([]byte(s))) }
		e.want(http.StatusCreated, "alice", "MKCOL", "/d", "")
		e.want(http.StatusCreated, "alice", "PUT", "/d/a.txt", "alpha")
		e.want(http.StatusCreated, "alice", "PUT", "/d/b.txt", "beta")
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/d/", ask, "Depth", "1")
		if !strings.Contains(b, sumOf("alpha")) || !strings.Contains(b, sumOf("beta")) {
			t.Fatalf("listing lacks checksums: %s", b)
		}
		e.want(http.StatusCreated, "alice", "COPY", "/d", "", "Destination", e.base+"/c")
		e.want(http.StatusCreated, "alice", "MOVE", "/c/a.txt", "", "Destination", e.base+"/moved.txt")
		for p, content := range map[string]string{"/c/b.txt": "beta", "/moved.txt": "alpha"} {
			_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", p, ask, "Depth", "0")
			if !strings.Contains(b, sumOf(content)) {
				t.Fatalf("checksum of %s after COPY/MOVE: %s", p, b)
			}
		}
		// Changed on disk behind the server's back: never the old hash.
		disk := filepath.Join(e.dir, u.ID, "d", "b.txt")
		if err := os.WriteFile(disk, []byte("BETA!"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/d/b.txt", ask, "Depth", "0")
		if strings.Contains(b, sumOf("beta")) {
			t.Fatalf("stale checksum after an out-of-band change: %s", b)
		}
		// ... and the background hash catches up with the new content.
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(b, sumOf("BETA!")) {
			if time.Now().After(deadline) {
				t.Fatalf("changed file never hashed again: %s", b)
			}
			time.Sleep(20 * time.Millisecond)
			_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/d/b.txt", ask, "Depth", "0")
		}
		// Where the checksums live: the attribute store writes no rows.
		var rows int64
		if err := db.Model(&models.DavChecksum{}).Where("user_id = ?", u.ID).Count(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if sumsOnFiles(e.h) != (rows == 0) {
			t.Fatalf("xattr store %v, %d checksum rows in the database", sumsOnFiles(e.h), rows)
		}
	})
}

// TestNewFileDropsStaleProps: properties left at a path whose file was
// removed behind the server's back do not attach to a new file there.
func TestNewFileDropsStaleProps(t *testing.T) {
	eachStore(t, func(t *testing.T, db *gorm.DB, opts Options) {
		u := addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), opts)
		e.want(http.StatusCreated, "alice", "PUT", "/f.txt", "one")
		e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/f.txt", `<D:propertyupdate xmlns:D="DAV:" xmlns:x="urn:x"><D:set><D:prop><x:tag>old</x:tag></D:prop></D:set></D:propertyupdate>`)
		if err := os.Remove(filepath.Join(e.dir, u.ID, "f.txt")); err != nil {
			t.Fatal(err)
		}
		e.want(http.StatusCreated, "alice", "PUT", "/f.txt", "two")
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/f.txt", "", "Depth", "0")
		if strings.Contains(b, "urn:x") {
			t.Fatalf("new file inherited a stale property: %s", b)
		}
	})
}

// TestSumAttributeFormat: the attribute round-trips, fits ext4's in-inode
// space, and anything else found under the name is not a checksum.
func TestSumAttributeFormat(t *testing.T) {
	in := models.DavChecksum{Size: 1 << 40, MtimeNs: 1_763_000_000_123_456_789, Gen: 0xfedcba98,
		SHA1: fmt.Sprintf("%x", sha1.Sum([]byte("x"))), MD5: fmt.Sprintf("%x", md5.Sum([]byte("x")))}
	b, err := encodeSum(in)
	if err != nil {
		t.Fatal(err)
	}
	// 60 bytes (the value padded to 4) is what a 256-byte ext4 inode
	// has left beside the entry: measured with st_blocks (0 up to 60, 8
	// from 61).
	if len(b) > 60 {
		t.Fatalf("attribute value is %d bytes; ext4 keeps only 60 in a 256-byte inode", len(b))
	}
	if out, ok := decodeSum(b); !ok || out != in {
		t.Fatalf("round trip: %+v, %v; want %+v", out, ok, in)
	}
	// A large upload's record: a generation, no hashes yet.
	genOnly := models.DavChecksum{Size: 5, MtimeNs: 7, Gen: 3}
	if gb, err := encodeSum(genOnly); err != nil {
		t.Fatal(err)
	} else if out, ok := decodeSum(gb); !ok || out != genOnly || hasHashes(out) {
		t.Fatalf("generation only: %+v, %v", out, ok)
	}
	// Format 1 (no generation) is still read; its generation is its
	// SHA-1's first 32 bits.
	v1 := append(append([]byte{1}, b[1:17]...), b[21:]...)
	if out, ok := decodeSum(v1); !ok || out.Gen != 0 || out.SHA1 != in.SHA1 || recordGen(out) != 0x11f6ad8e {
		t.Fatalf("format 1: %+v, %v (gen %x)", out, ok, recordGen(out))
	}
	for _, bad := range [][]byte{nil, b[:len(b)-1], append(append([]byte{}, b...), 0), append([]byte{3}, b[1:]...), append([]byte{1}, b[1:]...)} {
		if _, ok := decodeSum(bad); ok {
			t.Fatalf("decoded %x", bad)
		}
	}
	if _, err := encodeSum(models.DavChecksum{SHA1: "zz", MD5: in.MD5}); err == nil {
		t.Fatal("encoded a malformed SHA-1")
	}
}

// TestConcurrentPutsToNewPath: uploads racing to create the same new file
// all succeed, one wins whole, and no temporary file is left behind.
func TestConcurrentPutsToNewPath(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		u := addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		const n = 8
		bodies := make([]string, n)
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			bodies[i] = strings.Repeat(string(rune('a'+i)), 64<<10)
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _, _ = e.do("alice", "PUT", "/new.bin", bodies[i])
			}()
		}
		wg.Wait()
		created := 0
		for i, c := range codes {
			if c != http.StatusCreated && c != http.StatusNoContent {
				t.Fatalf("PUT %d: status %d", i, c)
			}
			if c == http.StatusCreated {
				created++
			}
		}
		if created == 0 {
			t.Fatal("no PUT reported creating the file")
		}
		_, got := e.want(http.StatusOK, "alice", "GET", "/new.bin", "")
		whole := false
		for _, b := range bodies {
			whole = whole || got == b
		}
		if !whole {
			t.Fatalf("content is no single upload (%d bytes, starts %q)", len(got), got[:8])
		}
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/new.bin", `<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:checksums/></d:prop></d:propfind>`, "Depth", "0")
		if want := fmt.Sprintf("SHA1:%x MD5:%x", sha1.Sum([]byte(got)), md5.Sum([]byte(got))); !strings.Contains(b, want) {
			t.Fatalf("checksum is not the winner's %s: %s", want, b)
		}
		ents, err := os.ReadDir(filepath.Join(e.dir, u.ID))
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 1 {
			t.Fatalf("user directory holds %d entries, want only new.bin", len(ents))
		}
	})
}

// TestPutIntoMovedCollection: a collection moved while an upload into it
// is under way does not receive the file at its new place (the upload's
// lock checks covered the old path only): the PUT answers 409 and leaves
// nothing behind.
func TestPutIntoMovedCollection(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		u := addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "MKCOL", "/a", "")
		w, done := e.slowPut("alice", "/a/f.txt")
		if _, err := w.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
			t.Fatal(err)
		}
		e.want(http.StatusCreated, "alice", "MOVE", "/a", "", "Destination", e.base+"/b")
		w.Close()
		if code := <-done; code != http.StatusConflict {
			t.Fatalf("PUT into a moved collection: status %d, want 409", code)
		}
		ents, err := os.ReadDir(filepath.Join(e.dir, u.ID, "b"))
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 0 {
			t.Fatalf("moved collection holds %d entries (first %s), want none", len(ents), ents[0].Name())
		}
		e.want(http.StatusNotFound, "alice", "GET", "/a/f.txt", "")
	})
}

// TestStoreSwitchDropsDatabaseChecksums: checksums recorded in the
// database do not outlive a period on the attribute store, where replaced
// files leave their rows untouched; otherwise a later file of the same
// size and mtime would be published with the old file's hash.
func TestStoreSwitchDropsDatabaseChecksums(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		dir := t.TempDir()
		const ask = `<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:checksums/></d:prop></d:propfind>`
		old := fmt.Sprintf("SHA1:%x", sha1.Sum([]byte("aaaa")))
		dbStore := newEnv(t, db, dir, Options{ChecksumsInDB: true})
		dbStore.want(http.StatusCreated, "alice", "PUT", "/f", "aaaa", "X-OC-Mtime", "1600000000")
		if _, b := dbStore.want(http.StatusMultiStatus, "alice", "PROPFIND", "/f", ask, "Depth", "0"); !strings.Contains(b, old) {
			t.Fatalf("database store: %s", b)
		}
		xattrStore := newEnv(t, db, dir, Options{})
		if !sumsOnFiles(xattrStore.h) {
			t.Fatal("the test directory's filesystem keeps no user extended attributes")
		}
		xattrStore.want(http.StatusNoContent, "alice", "PUT", "/f", "bbbb", "X-OC-Mtime", "1600000000")
		back := newEnv(t, db, dir, Options{ChecksumsInDB: true})
		if _, b := back.want(http.StatusMultiStatus, "alice", "PROPFIND", "/f", ask, "Depth", "0"); strings.Contains(b, old) {
			t.Fatalf("the database store published the replaced file's checksum: %s", b)
		}
	})
}

// TestUnhashableMemory: a file version whose checksum could not be
// recorded is not read again until it changes.
func TestUnhashableMemory(t *testing.T) {
	h := &Handler{}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("one"), 0o444); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if h.unhashable("u", "/f", fi) {
		t.Fatal("unhashable before any attempt")
	}
	h.markUnhashable("u", "/f", fi)
	if !h.unhashable("u", "/f", fi) || h.unhashable("v", "/f", fi) {
		t.Fatal("the failed version is not remembered for its user and path only")
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("two!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err = os.Stat(p); err != nil {
		t.Fatal(err)
	}
	if h.unhashable("u", "/f", fi) {
		t.Fatal("a changed file is still taken as unhashable")
	}
}

// TestStaleUploadsSwept: temporary upload files a crash left behind are
// removed when a listing or the quota walk comes across them a day later;
// fresh ones (uploads under way) are left alone and never listed.
func TestStaleUploadsSwept(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		u := addUser(t, db, "alice", 1<<20)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "MKCOL", "/d", "")
		dir := filepath.Join(e.dir, u.ID)
		old := time.Now().Add(-48 * time.Hour)
		mk := func(p string, age time.Time) {
			if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 1000), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, age, age); err != nil {
				t.Fatal(err)
			}
		}
		mk(filepath.Join(dir, "d", tmpPrefix+"crashed"), old)
		mk(filepath.Join(dir, "d", tmpPrefix+"running"), time.Now())
		mk(filepath.Join(dir, tmpPrefix+"crashed-top"), old)
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/d/", "", "Depth", "1")
		if strings.Contains(b, tmpPrefix) {
			t.Fatalf("listing shows a temporary file: %s", b)
		}
		if _, err := os.Stat(filepath.Join(dir, "d", tmpPrefix+"crashed")); !os.IsNotExist(err) {
			t.Fatalf("stale upload file still there after a listing (err %v)", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "d", tmpPrefix+"running")); err != nil {
			t.Fatalf("fresh upload file removed: %v", err)
		}
		// The quota walk (a PUT under a quota) sweeps the top-level one.
		e.want(http.StatusCreated, "alice", "PUT", "/f", "data")
		if _, err := os.Stat(filepath.Join(dir, tmpPrefix+"crashed-top")); !os.IsNotExist(err) {
			t.Fatalf("stale upload file still there after a quota walk (err %v)", err)
		}
	})
}

// MOVE and COPY never destroy their source or a destination they did not
// reach: an ancestor of the source is refused as destination (Overwrite: T
// would delete the source with it), a Destination whose raw '?' or '#'
// would cut the name short is refused, and a file replacing a file keeps
// the old destination's content until the new one is in place.
func TestCopyMoveKeepsSourceAndDestination(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "MKCOL", "/a", "")
		e.want(http.StatusCreated, "alice", "MKCOL", "/a/sub", "")
		e.want(http.StatusCreated, "alice", "PUT", "/a/b.txt", "bee")
		e.want(http.StatusCreated, "alice", "PUT", "/a/sub/c.txt", "sea")
		for _, m := range []string{"MOVE", "COPY"} {
			e.want(http.StatusForbidden, "alice", m, "/a/b.txt", "", "Destination", e.base+"/a")
			e.want(http.StatusForbidden, "alice", m, "/a/sub", "", "Destination", e.base+"/a/")
			e.want(http.StatusForbidden, "alice", m, "/a/sub/c.txt", "", "Destination", e.base+"/a")
			e.want(http.StatusBadRequest, "alice", m, "/a/b.txt", "", "Destination", e.base+"/a/sub/#1.txt")
			e.want(http.StatusBadRequest, "alice", m, "/a/b.txt", "", "Destination", e.base+"/a/sub?x=1")
		}
		if _, b := e.want(http.StatusOK, "alice", "GET", "/a/b.txt", ""); b != "bee" {
			t.Fatalf("source after the refused requests: %q", b)
		}
		if _, b := e.want(http.StatusOK, "alice", "GET", "/a/sub/c.txt", ""); b != "sea" {
			t.Fatalf("sub after the refused requests: %q", b)
		}
		// An encoded '#' is a name like any other.
		e.want(http.StatusCreated, "alice", "COPY", "/a/b.txt", "", "Destination", e.base+"/a/sub/%231.txt")
		if _, b := e.want(http.StatusOK, "alice", "GET", "/a/sub/%231.txt", ""); b != "bee" {
			t.Fatalf("copy to an encoded '#' name: %q", b)
		}
		// File onto file: the old destination's dead property goes with it.
		e.want(http.StatusCreated, "alice", "PUT", "/a/d.txt", "dee")
		e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/a/d.txt", `<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z"><D:set><D:prop><Z:old>1</Z:old></D:prop></D:set></D:propertyupdate>`)
		e.want(http.StatusNoContent, "alice", "COPY", "/a/b.txt", "", "Destination", e.base+"/a/d.txt")
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/a/d.txt", "", "Depth", "0")
		if strings.Contains(b, "urn:z") {
			t.Fatalf("replaced file kept the old destination's property: %s", b)
		}
		e.want(http.StatusNoContent, "alice", "MOVE", "/a/d.txt", "", "Destination", e.base+"/a/b.txt")
		if _, b := e.want(http.StatusOK, "alice", "GET", "/a/b.txt", ""); b != "bee" {
			t.Fatalf("file moved onto a file: %q", b)
		}
		e.want(http.StatusNotFound, "alice", "GET", "/a/d.txt", "")
	})
}

// Names XML cannot carry (invalid UTF-8, control characters) are refused
// with 400 in the request line and in Destination; one already on disk is
// listed with U+FFFD in its displayname, so the folder's PROPFIND stays
// well-formed XML.
func TestNamesXMLCannotCarry(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		alice := addUser(t, db, "alice", 0)
		dir := t.TempDir()
		e := newEnv(t, db, dir, Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/ok-\u00e9\U0001F600.txt", "fine")
		for _, p := range []string{"/%FF", "/a%01b", "/a%7Fb", "/d%0A"} {
			e.want(http.StatusBadRequest, "alice", "PUT", p, "x")
			e.want(http.StatusBadRequest, "alice", "MKCOL", p, "")
			e.want(http.StatusBadRequest, "alice", "COPY", "/ok-\u00e9\U0001F600.txt", "", "Destination", e.base+p)
		}
		if err := os.WriteFile(filepath.Join(dir, alice.ID, "bad\x01\xff.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/", "", "Depth", "1")
		d := xml.NewDecoder(strings.NewReader(b))
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("PROPFIND with a control character on disk is not well-formed XML: %v\n%s", err, b)
			}
		}
		if !strings.Contains(b, "bad\uFFFD\uFFFD.txt") || !strings.Contains(b, "bad%01%FF.txt") {
			t.Fatalf("displayname or href of the odd name: %s", b)
		}
	})
}

// One user's active locks are capped (507 beyond; refreshes and other
// users are not affected), and so is a lock owner's size (400).
func TestLockLimits(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		addUser(t, db, "bob", 0)
		e := newEnv(t, db, t.TempDir(), Options{MaxLocksPerUser: 3})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "x")
		var toks []string
		for i := 0; i < 3; i++ {
			toks = append(toks, e.lock("alice", "/f", "shared", "0"))
		}
		e.want(http.StatusInsufficientStorage, "alice", "LOCK", "/f", lockXML("shared", "x"), "Depth", "0")
		e.want(http.StatusOK, "alice", "LOCK", "/f", "", "If", "(<"+toks[0]+">)", "Timeout", "Second-60")
		e.want(http.StatusCreated, "bob", "LOCK", "/g", lockXML("exclusive", "x"), "Depth", "0")
		e.want(http.StatusNoContent, "alice", "UNLOCK", "/f", "", "Lock-Token", "<"+toks[1]+">")
		e.lock("alice", "/f", "shared", "0")
		e.want(http.StatusBadRequest, "bob", "LOCK", "/h", lockXML("exclusive", strings.Repeat("o", 17<<10)), "Depth", "0")
		e.want(http.StatusNotFound, "bob", "GET", "/h", "")
	})
}

// A lock taken while an upload's body is still arriving wins: the upload,
// checked before the lock existed, is refused at the end (423) and the
// locked file keeps its content.
func TestLockTakenDuringPut(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "old")
		w, done := e.slowPut("alice", "/f")
		for i := 0; i < 8; i++ {
			// More than the socket buffers hold: the server is reading
			// the body, so its first lock check is behind it.
			w.Write(bytes.Repeat([]byte("a"), 1<<20))
		}
		tok := e.lock("alice", "/f", "exclusive", "0")
		w.Close()
		if s := <-done; s != http.StatusLocked {
			t.Fatalf("PUT finishing after another client's LOCK: %d, want 423", s)
		}
		if _, b := e.want(http.StatusOK, "alice", "GET", "/f", ""); b != "old" {
			t.Fatalf("locked file overwritten: %d bytes", len(b))
		}
		e.want(http.StatusNoContent, "alice", "PUT", "/f", "mine", "If", "(<"+tok+">)")
	})
}

// A collection's DELETE that cannot remove a member answers 207 with that
// member's status; everything else goes, and what went loses its locks.
func TestDeletePartialFailure(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		u := addUser(t, db, "alice", 0)
		dir := t.TempDir()
		e := newEnv(t, db, dir, Options{})
		for _, c := range []string{"/d", "/d/keep", "/d/gone"} {
			e.want(http.StatusCreated, "alice", "MKCOL", c, "")
		}
		for _, f := range []string{"/d/keep/f", "/d/gone/g", "/d/h"} {
			e.want(http.StatusCreated, "alice", "PUT", f, "x")
		}
		tok := e.lock("alice", "/d/gone/g", "exclusive", "0")
		undeletable(t, filepath.Join(dir, u.ID, "d", "keep"), "f")
		_, b := e.want(http.StatusMultiStatus, "alice", "DELETE", "/d", "", "If", "</webdav/d/gone/g> (<"+tok+">)")
		if !strings.Contains(b, "<D:href>/webdav/d/keep/f</D:href><D:status>HTTP/1.1 403 Forbidden</D:status>") || strings.Count(b, "<D:response>") != 1 {
			t.Fatalf("207 of the partial DELETE: %s", b)
		}
		e.want(http.StatusOK, "alice", "GET", "/d/keep/f", "")
		e.want(http.StatusNotFound, "alice", "GET", "/d/h", "")
		e.want(http.StatusNotFound, "alice", "GET", "/d/gone/g", "")
		// The removed member's lock went with it.
		e.want(http.StatusCreated, "alice", "MKCOL", "/d/gone", "")
		e.want(http.StatusCreated, "alice", "PUT", "/d/gone/g", "again")
	})
}

// undeletable makes dir/name impossible to remove for this process: the
// immutable attribute as root (who ignores permissions), a read-only
// directory otherwise.
func undeletable(t *testing.T, dir, name string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	p := filepath.Join(dir, name)
	if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i (needs e2fsprogs and a file system with the immutable attribute): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", p).Run() })
}

// The xml:lang in scope at a dead property comes back with its value
// (RFC 4918 §4.3), on the property itself or inherited from an ancestor
// in the request, and travels with a COPY.
func TestDeadPropertyLanguage(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "x")
		e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/f", `<?xml version="1.0"?>
<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z"><D:set><D:prop xml:lang="de"><Z:title>Hallo</Z:title><Z:note xml:lang="fr">Salut</Z:note></D:prop></D:set>
<D:set><D:prop><Z:plain>p</Z:plain></D:prop></D:set></D:propertyupdate>`)
		e.want(http.StatusCreated, "alice", "COPY", "/f", "", "Destination", e.base+"/g")
		for _, p := range []string{"/f", "/g"} {
			_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", p, "", "Depth", "0")
			for _, want := range []string{`<title xmlns="urn:z" xml:lang="de">Hallo</title>`, `<note xmlns="urn:z" xml:lang="fr">Salut</note>`, `<plain xmlns="urn:z">p</plain>`} {
				if !strings.Contains(b, want) {
					t.Fatalf("PROPFIND %s lacks %s: %s", p, want, b)
				}
			}
		}
	})
}

// A body within the byte cap but made of more elements than any request
// needs is refused (413) rather than expanded into memory.
func TestXMLElementCap(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "x")
		many := `<D:propfind xmlns:D="DAV:"><D:prop>` + strings.Repeat("<D:x/>", maxXMLElements) + `</D:prop></D:propfind>`
		e.want(http.StatusRequestEntityTooLarge, "alice", "PROPFIND", "/f", many, "Depth", "0")
		fits := `<D:propfind xmlns:D="DAV:"><D:prop>` + strings.Repeat("<D:x/>", maxXMLElements-2) + `</D:prop></D:propfind>`
		e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/f", fits, "Depth", "0")
	})
}

// With Fsync on, uploads and copies flush file and directory before the
// answer (durability itself needs a power cut to show; this runs the path
// on a real file system and checks what it publishes).
func TestFsyncWrites(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{Fsync: true})
		e.want(http.StatusCreated, "alice", "MKCOL", "/d", "")
		e.want(http.StatusCreated, "alice", "PUT", "/d/f", "one")
		e.want(http.StatusNoContent, "alice", "PUT", "/d/f", "two")
		e.want(http.StatusCreated, "alice", "COPY", "/d", "", "Destination", e.base+"/e")
		e.want(http.StatusCreated, "alice", "PUT", "/top", strings.Repeat("t", 300<<10))
		for p, want := range map[string]string{"/d/f": "two", "/e/f": "two", "/top": strings.Repeat("t", 300<<10)} {
			if _, b := e.want(http.StatusOK, "alice", "GET", p, ""); b != want {
				t.Fatalf("GET %s after fsynced writes: %d bytes", p, len(b))
			}
		}
	})
}
