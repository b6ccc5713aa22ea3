package webdav

import (
	"net/http"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

func setPropBody(value string) string {
	return `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><x:big xmlns:x="urn:x">` + value + `</x:big><x:small xmlns:x="urn:x">s</x:small></D:prop></D:set></D:propertyupdate>`
}

// Dead properties count against the quota and one property is capped at
// maxPropBytes (issue 13 item 9: five 900 KB PROPPATCHes passed a 100 KB
// quota).
func TestDeadPropertiesCountAgainstQuota(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 100<<10)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "PUT", "/f", "x")
		// Over the per-property cap: 507 for it, 424 for the rest, nothing stored.
		_, b := e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/f", setPropBody(strings.Repeat("a", maxPropBytes+1)))
		if !strings.Contains(b, "507 Insufficient Storage") || !strings.Contains(b, "424 Failed Dependency") {
			t.Fatalf("over-cap property: %s", b)
		}
		// 60 KB fits the 100 KB quota once, not twice.
		v := strings.Repeat("b", 60<<10)
		if _, b := e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/f", setPropBody(v)); strings.Contains(b, "507") {
			t.Fatalf("first property refused: %s", b)
		}
		e.want(http.StatusCreated, "alice", "PUT", "/g", "y")
		if _, b := e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/g", setPropBody(v)); !strings.Contains(b, "507 Insufficient Storage") {
			t.Fatalf("property over quota accepted: %s", b)
		}
		// Replacing a property counts only the difference.
		if _, b := e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/f", setPropBody(v+"cc")); strings.Contains(b, "507") {
			t.Fatalf("replacing a property counted it twice: %s", b)
		}
		_, b = e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/", `<D:propfind xmlns:D="DAV:"><D:prop><D:quota-used-bytes/></D:prop></D:propfind>`, "Depth", "0")
		if !strings.Contains(b, "<D:quota-used-bytes>614") { // 2 bytes of files + 61,4xx of properties
			t.Fatalf("quota-used-bytes does not count the properties: %s", b)
		}
		// Files and properties share the room.
		e.want(http.StatusInsufficientStorage, "alice", "PUT", "/h", strings.Repeat("c", 50<<10))
		e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/f", `<D:propertyupdate xmlns:D="DAV:"><D:remove><D:prop><x:big xmlns:x="urn:x"/></D:prop></D:remove></D:propertyupdate>`)
		e.want(http.StatusCreated, "alice", "PUT", "/h", strings.Repeat("c", 50<<10))
		// A fresh handler (a restart) sees the same usage from the database.
		e2 := newEnv(t, db, e.dir, Options{})
		e2.want(http.StatusInsufficientStorage, "alice", "PUT", "/i", strings.Repeat("d", 50<<10))
	})
}
