package webdav

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// chunkedPut sends a PUT whose body goes out with Transfer-Encoding:
// chunked and no Content-Length, as Finder uploads, with
// X-Expected-Entity-Length announcing the size the way Finder does.
func (e *env) chunkedPut(user, path string, data []byte, hdr ...string) int {
	e.t.Helper()
	// A reader net/http cannot size, so the request is chunked.
	body := io.NopCloser(struct{ io.Reader }{bytes.NewReader(data)})
	req, err := http.NewRequest("PUT", e.base+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.ContentLength = -1
	req.TransferEncoding = []string{"chunked"}
	req.SetBasicAuth(user, testPass)
	req.Header.Set("X-Expected-Entity-Length", fmt.Sprint(len(data)))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("chunked PUT %s: %v", path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// noTemporaries fails if an upload's temporary file is left in dir.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var left []string
		ents, _ := os.ReadDir(dir)
		for _, en := range ents {
			if strings.HasPrefix(en.Name(), tmpPrefix) {
				left = append(left, en.Name())
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upload temporaries left in %s: %v", dir, left)
		}
	}
}

// Finder uploads with Transfer-Encoding: chunked and announces the size in
// X-Expected-Entity-Length. The server takes the body's length from the
// chunks (the header is not trusted, nor needed): small and large bodies
// land whole, the upload limit and the quota are enforced while the body
// streams, and a chunked body cut short, with or without an OC-Checksum
// the server cannot verify, leaves the old file as it was.
func TestFinderChunkedPut(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		u := addUser(t, db, "finder", 0)
		q := addUser(t, db, "small", 64<<10)
		e := newEnv(t, db, t.TempDir(), Options{MaxUploadBytes: 2 << 20})
		e.want(http.StatusCreated, "finder", "MKCOL", "/d", "")
		for _, size := range []int{0, 4 << 10, smallUpload + 1, 1<<20 + 3} {
			data := make([]byte, size)
			rand.Read(data)
			p := fmt.Sprintf("/d/f%d.bin", size)
			// Create, lock, upload with the token, unlock.
			e.want(http.StatusCreated, "finder", "PUT", p, "")
			tok := e.lock("finder", p, "exclusive", "0")
			if s := e.chunkedPut("finder", p, data, "If", "(<"+tok+">)"); s != http.StatusNoContent {
				t.Fatalf("chunked PUT of %d bytes over the locked empty file: %d", size, s)
			}
			e.want(http.StatusNoContent, "finder", "UNLOCK", p, "", "Lock-Token", "<"+tok+">")
			if _, b := e.want(http.StatusOK, "finder", "GET", p, ""); b != string(data) {
				t.Fatalf("%d bytes uploaded chunked, %d read back (or different)", size, len(b))
			}
		}
		// X-Expected-Entity-Length that disagrees with the body: the
		// chunks decide.
		if s := e.chunkedPut("finder", "/d/liar", []byte("12345"), "X-Expected-Entity-Length", "99"); s != http.StatusCreated {
			t.Fatalf("chunked PUT with a wrong X-Expected-Entity-Length: %d", s)
		}
		if _, b := e.want(http.StatusOK, "finder", "GET", "/d/liar", ""); b != "12345" {
			t.Fatalf("got %q", b)
		}
		// Limits apply while streaming: no Content-Length to refuse early.
		e.want(http.StatusCreated, "finder", "PUT", "/d/keep", "old content")
		if s := e.chunkedPut("finder", "/d/keep", make([]byte, 2<<20+1)); s != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked PUT over --webdav-max-upload: %d, want 413", s)
		}
		e.want(http.StatusCreated, "small", "PUT", "/keep", "old content")
		if s := e.chunkedPut("small", "/keep", make([]byte, 64<<10+1)); s != http.StatusInsufficientStorage {
			t.Fatalf("chunked PUT over the quota: %d, want 507", s)
		}
		if _, b := e.want(http.StatusOK, "small", "GET", "/keep", ""); b != "old content" {
			t.Fatalf("after a refused chunked PUT: %q", b)
		}
		// An announced size that cannot fit is refused before the body is
		// read: the answer comes while the client has sent headers only.
		for _, c := range []struct {
			user, size string
			want       string
		}{{"small", "100000", "507"}, {"finder", "3000000", "413"}} {
			conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "PUT /webdav/big HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"+
				"Transfer-Encoding: chunked\r\nX-Expected-Entity-Length: %s\r\n\r\n", basic(c.user), c.size)
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			if err != nil || !strings.Contains(line, " "+c.want+" ") {
				t.Fatalf("announced %s bytes for %s: %q %v, want %s before any body", c.size, c.user, line, err, c.want)
			}
		}
		// A chunked body cut short (no terminating chunk). With an
		// OC-Checksum of a type the server does not compute (ADLER32) the
		// body used to be taken as complete and published truncated.
		for _, extra := range []string{"", "OC-Checksum: ADLER32:062c0215\r\n"} {
			conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "PUT /webdav/d/keep HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"+
				"Transfer-Encoding: chunked\r\nX-Expected-Entity-Length: 100000\r\n%s\r\n5\r\nhello\r\n", basic("finder"), extra)
			// Let the handler start reading before the cut.
			time.Sleep(100 * time.Millisecond)
			conn.Close()
			noTemporaries(t, filepath.Join(e.dir, u.ID, "d"))
			if _, b := e.want(http.StatusOK, "finder", "GET", "/d/keep", ""); b != "old content" {
				t.Fatalf("after a cut chunked PUT (%q): %q", strings.TrimSpace(extra), b)
			}
		}
		noTemporaries(t, filepath.Join(e.dir, q.ID))
	})
}

const win32Patch = `<?xml version="1.0" encoding="utf-8" ?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:"><D:set><D:prop>%s</D:prop></D:set></D:propertyupdate>`

// Windows Explorer copying a file onto a mapped WebDAV drive, in the order
// a published trace shows it (wsgidav issue #112): PROPFIND (404), an empty
// PUT, LOCK, PROPPATCH of the Win32 times and attributes, HEAD, the PUT of
// the content with the token, PROPPATCH of Win32LastModifiedTime again,
// UNLOCK. A replay of that sequence, not a run of Windows.
func TestWindowsExplorerCopySequence(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "win", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		const mtime = "Thu, 09 Oct 2025 17:54:43 GMT"
		e.want(http.StatusNotFound, "win", "PROPFIND", "/report.docx", "", "Depth", "0")
		e.want(http.StatusCreated, "win", "PUT", "/report.docx", "")
		tok := e.lock("win", "/report.docx", "exclusive", "0")
		ifh := "(<" + tok + ">)"
		_, b := e.want(http.StatusMultiStatus, "win", "PROPPATCH", "/report.docx", fmt.Sprintf(win32Patch,
			"<Z:Win32CreationTime>Thu, 09 Oct 2025 17:50:00 GMT</Z:Win32CreationTime>"+
				"<Z:Win32LastAccessTime>Thu, 09 Oct 2025 17:55:31 GMT</Z:Win32LastAccessTime>"+
				"<Z:Win32LastModifiedTime>"+mtime+"</Z:Win32LastModifiedTime>"+
				"<Z:Win32FileAttributes>00000020</Z:Win32FileAttributes>"), "If", ifh)
		if !strings.Contains(b, "200 OK") || strings.Contains(b, "HTTP/1.1 4") || strings.Contains(b, "HTTP/1.1 5") {
			t.Fatalf("PROPPATCH of the Win32 properties: %s", b)
		}
		e.want(http.StatusOK, "win", "HEAD", "/report.docx", "")
		// Without the token Windows' writes would be refused (423).
		e.want(http.StatusLocked, "win", "PUT", "/report.docx", "x")
		e.want(http.StatusNoContent, "win", "PUT", "/report.docx", "the document", "If", ifh)
		e.want(http.StatusMultiStatus, "win", "PROPPATCH", "/report.docx", fmt.Sprintf(win32Patch,
			"<Z:Win32LastModifiedTime>"+mtime+"</Z:Win32LastModifiedTime><Z:Win32FileAttributes>00000020</Z:Win32FileAttributes>"), "If", ifh)
		e.want(http.StatusNoContent, "win", "UNLOCK", "/report.docx", "", "Lock-Token", "<"+tok+">")

		h, b := e.want(http.StatusOK, "win", "GET", "/report.docx", "")
		if b != "the document" || h.Get("Last-Modified") != mtime {
			t.Fatalf("after the copy: %q, Last-Modified %q (want %q)", b, h.Get("Last-Modified"), mtime)
		}
		_, b = e.want(http.StatusMultiStatus, "win", "PROPFIND", "/report.docx",
			`<D:propfind xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:"><D:prop><Z:Win32CreationTime/><Z:Win32FileAttributes/><D:lockdiscovery/></D:prop></D:propfind>`, "Depth", "0")
		if !strings.Contains(b, "Thu, 09 Oct 2025 17:50:00 GMT") || !strings.Contains(b, "00000020") || strings.Contains(b, "activelock") {
			t.Fatalf("properties after the copy: %s", b)
		}
	})
}

// Microsoft Office opening a document at a URL for editing and saving it,
// as Microsoft's [MS-OCPROTO] §2.1.2.1.2 and SabreDAV's client notes
// describe it: OPTIONS on the folder (it looks for MS-Author-Via: DAV),
// HEAD on the folder, PROPFIND, an exclusive LOCK (without one Office
// opens read-only), GET, lock refreshes while open, PUT with the token on
// save, UNLOCK on close. A replay of that description, not a run of
// Office.
func TestOfficeEditSequence(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "office", 0)
		e := newEnv(t, db, t.TempDir(), Options{MaxLockTimeout: time.Hour})
		e.want(http.StatusCreated, "office", "MKCOL", "/docs", "")
		e.want(http.StatusCreated, "office", "PUT", "/docs/plan.xlsx", "v1")
		h, _ := e.want(http.StatusOK, "office", "OPTIONS", "/docs/", "")
		if h.Get("MS-Author-Via") != "DAV" || !strings.Contains(h.Get("DAV"), "2") || !strings.Contains(h.Get("Allow"), "LOCK") {
			t.Fatalf("OPTIONS on the folder: %v", h)
		}
		e.want(http.StatusOK, "office", "OPTIONS", "/docs/plan.xlsx", "")
		e.want(http.StatusOK, "office", "HEAD", "/docs/", "")
		e.want(http.StatusMultiStatus, "office", "PROPFIND", "/docs/plan.xlsx", "", "Depth", "0")
		lh, b := e.want(http.StatusOK, "office", "LOCK", "/docs/plan.xlsx",
			lockXML("exclusive", "<D:href>DOMAIN\\user</D:href>"), "Depth", "0", "Timeout", "Second-3600")
		m := tokenRE.FindStringSubmatch(lh.Get("Lock-Token"))
		if m == nil || !strings.Contains(b, "<D:timeout>Second-3600</D:timeout>") {
			t.Fatalf("LOCK: %v\n%s", lh, b)
		}
		tok := m[1]
		ifh := "(<" + tok + ">)"
		e.want(http.StatusOK, "office", "GET", "/docs/plan.xlsx", "")
		// A second editor: its LOCK is refused, so it opens read-only.
		e.want(http.StatusLocked, "office", "LOCK", "/docs/plan.xlsx", lockXML("exclusive", "other"), "Depth", "0")
		e.want(http.StatusLocked, "office", "PUT", "/docs/plan.xlsx", "overwritten")
		// Refresh while open: an empty LOCK with the token in If.
		e.want(http.StatusOK, "office", "LOCK", "/docs/plan.xlsx", "", "If", ifh, "Timeout", "Second-3600")
		e.want(http.StatusNoContent, "office", "PUT", "/docs/plan.xlsx", "v2", "If", ifh)
		e.want(http.StatusNoContent, "office", "PUT", "/docs/plan.xlsx", "v3", "If", ifh)
		e.want(http.StatusNoContent, "office", "UNLOCK", "/docs/plan.xlsx", "", "Lock-Token", "<"+tok+">")
		if _, b := e.want(http.StatusOK, "office", "GET", "/docs/plan.xlsx", ""); b != "v3" {
			t.Fatalf("after save and close: %q", b)
		}
		e.want(http.StatusNoContent, "office", "PUT", "/docs/plan.xlsx", "v4")
	})
}
