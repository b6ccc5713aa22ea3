package webdav

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// RFC 4918 §9.1, §14.8: allprop with include returns the included live
// properties that allprop alone leaves out (quota, checksums), beside the
// usual ones and the dead properties.
func TestAllpropInclude(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 1<<20)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/f.txt", "hello")
		e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/f.txt", `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><x:color xmlns:x="urn:x">blue</x:color></D:prop></D:set></D:propertyupdate>`)
		_, plain := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/f.txt", `<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`, "Depth", "0")
		if strings.Contains(plain, "quota-used-bytes") || strings.Contains(plain, "checksums") {
			t.Fatalf("allprop without include returned on-request properties: %s", plain)
		}
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/f.txt", `<D:propfind xmlns:D="DAV:" xmlns:oc="http://owncloud.org/ns"><D:allprop/><D:include><D:quota-used-bytes/><D:quota-available-bytes/><oc:checksums/></D:include></D:propfind>`, "Depth", "0")
		for _, s := range []string{
			// 5 bytes of file + 14 of the dead property (urn:x, color, blue).
			"<D:quota-used-bytes>19</D:quota-used-bytes>", "<D:quota-available-bytes>1048557</D:quota-available-bytes>",
			"<checksum>SHA1:aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d MD5:5d41402abc4b2a76b9719d911017c592</checksum>",
			"<D:getcontentlength>5</D:getcontentlength>", "<D:lockdiscovery>", ">blue</",
		} {
			if !strings.Contains(b, s) {
				t.Fatalf("allprop+include lacks %s: %s", s, b)
			}
		}
	})
}

var etagRE = regexp.MustCompile(`<D:getetag>([^<]+)</D:getetag>`)

// Collections have a getetag: unchanged while the membership is, changed
// when a member is added or removed; also in propname.
func TestCollectionETag(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "MKCOL", "/c", "")
		etag := func() string {
			t.Helper()
			_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/c", `<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>`, "Depth", "0")
			m := etagRE.FindStringSubmatch(b)
			if m == nil {
				t.Fatalf("collection has no getetag: %s", b)
			}
			return html.UnescapeString(m[1])
		}
		e1 := etag()
		if e2 := etag(); e2 != e1 {
			t.Fatalf("collection ETag not stable: %s then %s", e1, e2)
		}
		e.want(http.StatusCreated, "alice", "PUT", "/c/new", "x")
		e2 := etag()
		if e2 == e1 {
			t.Fatalf("collection ETag unchanged after a member was added: %s", e2)
		}
		e.want(http.StatusNoContent, "alice", "DELETE", "/c/new", "")
		if e3 := etag(); e3 == e2 {
			t.Fatalf("collection ETag unchanged after a member was removed: %s", e3)
		}
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/c", `<D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`, "Depth", "0")
		if !strings.Contains(b, "<D:getetag/>") {
			t.Fatalf("propname of a collection lacks getetag: %s", b)
		}
		// An If header with the collection's ETag is evaluated against it.
		e4 := etag()
		e.want(http.StatusPreconditionFailed, "alice", "MKCOL", "/c/sub", "", "If", `<`+e.base+`/c> (["other"])`)
		e.want(http.StatusCreated, "alice", "MKCOL", "/c/sub", "", "If", "<"+e.base+"/c> (["+e4+"])")
	})
}

// Users' files, active content above all, are served inert on the API's
// origin: CSP sandbox and nosniff on every GET and HEAD (issue 13 item 10).
func TestActiveContentSandboxed(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		files := map[string]string{
			"/p.html": "text/html", "/i.svg": "image/svg+xml", "/x.xhtml": "application/xhtml+xml",
			"/t.txt": "text/plain", "/noext": "",
		}
		for p := range files {
			e.want(http.StatusCreated, "alice", "PUT", p, `<script>alert(document.cookie)</script>`)
		}
		e.want(http.StatusCreated, "alice", "MKCOL", "/d", "")
		for _, p := range []string{"/p.html", "/i.svg", "/x.xhtml", "/t.txt", "/noext", "/d/"} {
			for _, m := range []string{"GET", "HEAD"} {
				h, _ := e.want(http.StatusOK, "alice", m, p, "")
				if csp := h.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") {
					t.Fatalf("%s %s: Content-Security-Policy %q, want sandbox", m, p, csp)
				}
				if h.Get("X-Content-Type-Options") != "nosniff" {
					t.Fatalf("%s %s: no nosniff", m, p)
				}
				if want := files[p]; want != "" && !strings.HasPrefix(h.Get("Content-Type"), want) {
					t.Fatalf("%s %s: Content-Type %q", m, p, h.Get("Content-Type"))
				}
			}
		}
	})
}
