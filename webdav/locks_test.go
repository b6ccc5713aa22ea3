package webdav

import (
	"net/http"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// Lock transitions of RFC 4918 §6–7 and §9, one test each, on SQLite and
// Postgres. Status codes are Apache mod_dav's where the RFC leaves a
// choice.

const propLockdiscovery = `<D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>`

// ifTokens builds an untagged If header naming tokens, one list each.
func ifTokens(toks ...string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString("(<" + t + ">) ")
	}
	return strings.TrimSpace(b.String())
}

// lockRoots returns the lockroot hrefs PROPFIND reports on p.
func (e *env) lockRoots(user, p string) string {
	e.t.Helper()
	_, b := e.want(http.StatusMultiStatus, user, "PROPFIND", p, propLockdiscovery, "Depth", "0")
	return b
}

// The davfs2 data-loss case (issue 19 §1): a MOVE or COPY that overwrites
// a locked destination keeps the destination's lock, and the new resource
// comes under it (RFC 4918 §7.5, §9.8.4, §9.9.3).
func TestLockOnDestinationSurvivesOverwrite(t *testing.T) {
	for _, method := range []string{"MOVE", "COPY"} {
		t.Run(method, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, db *gorm.DB) {
				addUser(t, db, "alice", 0)
				e := newEnv(t, db, t.TempDir(), Options{})
				e.want(http.StatusCreated, "alice", "PUT", "/file", "old content")
				e.want(http.StatusCreated, "alice", "PUT", "/tmp", "new content")
				t1 := e.lock("alice", "/file", "exclusive", "0")
				t2 := e.lock("alice", "/tmp", "exclusive", "0")
				e.want(http.StatusNoContent, "alice", method, "/tmp", "",
					"Destination", e.base+"/file", "Overwrite", "T", "If", e.tagged("/file", t1)+" "+e.tagged("/tmp", t2))
				if _, b := e.want(http.StatusOK, "alice", "GET", "/file", ""); b != "new content" {
					t.Fatalf("destination after %s: %q", method, b)
				}
				// The destination's lock is still there and still works.
				if b := e.lockRoots("alice", "/file"); !strings.Contains(b, t1) {
					t.Fatalf("lock %s gone from the destination after %s: %s", t1, method, b)
				}
				e.want(http.StatusOK, "alice", "LOCK", "/file", "", "If", ifTokens(t1), "Timeout", "Second-600")
				e.want(http.StatusNoContent, "alice", "PUT", "/file", "saved", "If", ifTokens(t1))
				e.want(http.StatusLocked, "alice", "PUT", "/file", "someone else")
				e.want(http.StatusLocked, "alice", "DELETE", "/file", "")
				if _, b := e.want(http.StatusOK, "alice", "GET", "/file", ""); b != "saved" {
					t.Fatalf("content after the locked PUTs: %q", b)
				}
				e.want(http.StatusNoContent, "alice", "UNLOCK", "/file", "", "Lock-Token", "<"+t1+">")
				e.want(http.StatusNoContent, "alice", "PUT", "/file", "free now")
				// The source's lock did not travel (§7.5) and, for MOVE,
				// is gone with its resource; for COPY it stays on the source.
				if method == "MOVE" {
					e.want(http.StatusConflict, "alice", "UNLOCK", "/file", "", "Lock-Token", "<"+t2+">")
					e.want(http.StatusPreconditionFailed, "alice", "LOCK", "/tmp", "", "If", ifTokens(t2))
				} else {
					e.want(http.StatusLocked, "alice", "PUT", "/tmp", "x")
					e.want(http.StatusNoContent, "alice", "UNLOCK", "/tmp", "", "Lock-Token", "<"+t2+">")
				}
			})
		})
	}
}

// RFC 4918 §7.3: a LOCK of an unmapped URL creates an empty, locked
// resource; a PUT with the token gives it content, one without is 423, and
// it stays an ordinary resource after UNLOCK.
func TestLockUnmappedThenPut(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		h, _ := e.want(http.StatusCreated, "alice", "LOCK", "/n", lockXML("exclusive", "me"), "Depth", "0")
		tok := tokenRE.FindStringSubmatch(h.Get("Lock-Token"))[1]
		if _, b := e.want(http.StatusOK, "alice", "GET", "/n", ""); b != "" {
			t.Fatalf("locked empty resource has content %q", b)
		}
		e.want(http.StatusMethodNotAllowed, "alice", "MKCOL", "/n", "")
		e.want(http.StatusLocked, "alice", "PUT", "/n", "intruder")
		e.want(http.StatusNoContent, "alice", "PUT", "/n", "content", "If", ifTokens(tok))
		e.want(http.StatusNoContent, "alice", "UNLOCK", "/n", "", "Lock-Token", "<"+tok+">")
		if _, b := e.want(http.StatusOK, "alice", "GET", "/n", ""); b != "content" {
			t.Fatalf("after UNLOCK: %q", b)
		}
		// In a depth-infinity locked collection, creating the locked
		// resource changes the collection's membership: it needs the
		// collection's token (§7.4, §9.10.4).
		e.want(http.StatusCreated, "alice", "MKCOL", "/c", "")
		ct := e.lock("alice", "/c", "exclusive", "infinity")
		e.want(http.StatusLocked, "alice", "LOCK", "/c/n", lockXML("exclusive", "me"), "Depth", "0")
		// Even with it, the collection's exclusive lock conflicts with a
		// new lock below it (§6.1).
		e.want(http.StatusLocked, "alice", "LOCK", "/c/n", lockXML("shared", "me"), "Depth", "0", "If", ifTokens(ct))
		e.want(http.StatusCreated, "alice", "PUT", "/c/n", "x", "If", ifTokens(ct))
	})
}

// RFC 4918 §9.6: a DELETE that would remove a locked member without its
// token is refused whole (423, nothing removed); with the token everything
// goes, locks included.
func TestDeleteLockedMember(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "MKCOL", "/c", "")
		e.want(http.StatusCreated, "alice", "PUT", "/c/a", "a")
		e.want(http.StatusCreated, "alice", "PUT", "/c/b", "b")
		tok := e.lock("alice", "/c/a", "exclusive", "0")
		if _, b := e.want(http.StatusLocked, "alice", "DELETE", "/c", ""); !strings.Contains(b, "<D:href>/webdav/c/a</D:href>") {
			t.Fatalf("423 does not name the lock root: %s", b)
		}
		e.want(http.StatusOK, "alice", "GET", "/c/a", "")
		e.want(http.StatusOK, "alice", "GET", "/c/b", "")
		e.want(http.StatusPreconditionFailed, "alice", "DELETE", "/c", "", "If", ifTokens(tok))
		e.want(http.StatusNoContent, "alice", "DELETE", "/c", "", "If", e.tagged("/c/a", tok))
		e.want(http.StatusNotFound, "alice", "GET", "/c/a", "")
		// The lock went with its resource.
		e.want(http.StatusCreated, "alice", "MKCOL", "/c", "")
		e.want(http.StatusCreated, "alice", "PUT", "/c/a", "new")
		e.want(http.StatusConflict, "alice", "UNLOCK", "/c/a", "", "Lock-Token", "<"+tok+">")
		// A depth-infinity lock on the collection itself goes too.
		ct := e.lock("alice", "/c", "exclusive", "infinity")
		e.want(http.StatusLocked, "alice", "DELETE", "/c", "")
		e.want(http.StatusNoContent, "alice", "DELETE", "/c", "", "If", ifTokens(ct))
		e.want(http.StatusCreated, "alice", "MKCOL", "/c", "")
		e.want(http.StatusCreated, "alice", "PUT", "/c/a", "free")
	})
}

// RFC 4918 §7.5, §9.9.4: moving a resource out of a depth-infinity locked
// collection needs the collection's token (its membership changes); the
// moved resource leaves the lock behind and the collection stays locked.
func TestMoveOutOfLockedCollection(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "MKCOL", "/c", "")
		e.want(http.StatusCreated, "alice", "MKCOL", "/o", "")
		e.want(http.StatusCreated, "alice", "PUT", "/c/f", "f")
		tok := e.lock("alice", "/c", "exclusive", "infinity")
		e.want(http.StatusLocked, "alice", "MOVE", "/c/f", "", "Destination", e.base+"/o/f")
		e.want(http.StatusCreated, "alice", "MOVE", "/c/f", "", "Destination", e.base+"/o/f", "If", ifTokens(tok))
		e.want(http.StatusNotFound, "alice", "GET", "/c/f", "")
		if b := e.lockRoots("alice", "/o/f"); strings.Contains(b, "activelock") {
			t.Fatalf("moved resource kept the collection's lock: %s", b)
		}
		e.want(http.StatusNoContent, "alice", "PUT", "/o/f", "free")
		e.want(http.StatusLocked, "alice", "PUT", "/c/g", "g")
		e.want(http.StatusOK, "alice", "LOCK", "/c", "", "If", ifTokens(tok))
		// A locked collection moved whole: its lock does not travel,
		// so a refresh at the new place fails and nothing is locked there.
		e.want(http.StatusCreated, "alice", "MOVE", "/c", "", "Destination", e.base+"/c2", "If", ifTokens(tok))
		e.want(http.StatusPreconditionFailed, "alice", "LOCK", "/c2", "", "If", ifTokens(tok))
		e.want(http.StatusConflict, "alice", "UNLOCK", "/c2", "", "Lock-Token", "<"+tok+">")
		e.want(http.StatusCreated, "alice", "PUT", "/c2/g", "g")
	})
}

// RFC 4918 §7.5, §9.8.4, §9.9.3: a resource moved or copied into a
// depth-infinity locked collection needs that lock's token and comes under
// the lock; COPY never duplicates the source's locks.
func TestMoveCopyIntoLockedCollection(t *testing.T) {
	for _, method := range []string{"MOVE", "COPY"} {
		t.Run(method, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, db *gorm.DB) {
				addUser(t, db, "alice", 0)
				e := newEnv(t, db, t.TempDir(), Options{})
				e.want(http.StatusCreated, "alice", "MKCOL", "/c", "")
				e.want(http.StatusCreated, "alice", "PUT", "/x", "x")
				e.want(http.StatusCreated, "alice", "MKCOL", "/dir", "")
				e.want(http.StatusCreated, "alice", "PUT", "/dir/y", "y")
				st := e.lock("alice", "/x", "shared", "0")
				ct := e.lock("alice", "/c", "exclusive", "infinity")
				srcTokens := []string{}
				if method == "MOVE" {
					srcTokens = append(srcTokens, st)
				}
				e.want(http.StatusLocked, "alice", method, "/x", "", append([]string{"Destination", e.base + "/c/x"}, ifHdr(srcTokens...)...)...)
				ifv := e.tagged("/c", ct)
				if method == "MOVE" {
					ifv += " " + e.tagged("/x", st)
				}
				e.want(http.StatusCreated, "alice", method, "/x", "", "Destination", e.base+"/c/x", "If", ifv)
				e.want(http.StatusCreated, "alice", method, "/dir", "", "Destination", e.base+"/c/dir", "If", e.tagged("/c", ct))
				for _, p := range []string{"/c/x", "/c/dir/y"} {
					e.want(http.StatusLocked, "alice", "PUT", p, "intruder")
					b := e.lockRoots("alice", p)
					if !strings.Contains(b, ct) || !strings.Contains(b, "<D:lockroot><D:href>/webdav/c</D:href>") {
						t.Fatalf("%s is not under the collection's lock: %s", p, b)
					}
					if strings.Contains(b, st) {
						t.Fatalf("the source's lock travelled to %s: %s", p, b)
					}
					e.want(http.StatusNoContent, "alice", "PUT", p, "owner", "If", ifTokens(ct))
				}
				if method == "COPY" {
					// The source keeps its own lock and nothing more.
					e.want(http.StatusLocked, "alice", "PUT", "/x", "x2")
					e.want(http.StatusNoContent, "alice", "PUT", "/dir/y", "free")
				}
			})
		})
	}
}

// tagged is an If header list tagged with the resource p (RFC 4918
// §10.4.1: an untagged list applies to the Request-URI only, so a token of
// another resource, a member or the destination, is submitted tagged).
func (e *env) tagged(p, tok string) string { return "<" + e.base + p + "> (<" + tok + ">)" }

func ifHdr(toks ...string) []string {
	if len(toks) == 0 {
		return nil
	}
	return []string{"If", ifTokens(toks...)}
}

// RFC 4918 §7.5 with collections: a collection replacing a locked
// collection keeps the destination's depth-infinity lock (the new members
// fall under it, a refresh works), while locks rooted inside the replaced
// tree die with what they locked.
func TestOverwriteLockedCollection(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		for _, p := range []string{"/dd", "/src", "/e", "/src2"} {
			e.want(http.StatusCreated, "alice", "MKCOL", p, "")
		}
		e.want(http.StatusCreated, "alice", "PUT", "/dd/old", "old")
		e.want(http.StatusCreated, "alice", "PUT", "/src/file", "new")
		e.want(http.StatusCreated, "alice", "PUT", "/e/m", "m")
		e.want(http.StatusCreated, "alice", "PUT", "/src2/m", "m2")
		dt := e.lock("alice", "/dd", "exclusive", "infinity")
		mt := e.lock("alice", "/e/m", "exclusive", "0")

		e.want(http.StatusLocked, "alice", "MOVE", "/src", "", "Destination", e.base+"/dd")
		e.want(http.StatusNoContent, "alice", "MOVE", "/src", "", "Destination", e.base+"/dd", "If", e.tagged("/dd", dt))
		e.want(http.StatusNotFound, "alice", "GET", "/dd/old", "")
		e.want(http.StatusOK, "alice", "LOCK", "/dd", "", "If", ifTokens(dt))
		e.want(http.StatusLocked, "alice", "PUT", "/dd/file", "intruder")
		e.want(http.StatusNoContent, "alice", "PUT", "/dd/file", "owner", "If", ifTokens(dt))

		e.want(http.StatusLocked, "alice", "COPY", "/src2", "", "Destination", e.base+"/e")
		e.want(http.StatusNoContent, "alice", "COPY", "/src2", "", "Destination", e.base+"/e", "If", e.tagged("/e/m", mt))
		e.want(http.StatusConflict, "alice", "UNLOCK", "/e/m", "", "Lock-Token", "<"+mt+">")
		e.want(http.StatusNoContent, "alice", "PUT", "/e/m", "free")
	})
}
