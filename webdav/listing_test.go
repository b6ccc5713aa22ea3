package webdav

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// A folder opened in a browser reads as an index: name, size and time per
// entry, a parent link, folders with their trailing slash (in the title
// too), names escaped, in-progress uploads hidden, and no script.
func TestBrowserListing(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		addUser(t, db, "alice", 0)
		e := newEnv(t, db, t.TempDir(), Options{})
		e.want(http.StatusCreated, "alice", "MKCOL", "/reports", "")
		e.want(http.StatusCreated, "alice", "MKCOL", "/reports/old", "")
		e.want(http.StatusCreated, "alice", "PUT", "/reports/q3.txt", strings.Repeat("x", 2048))
		e.want(http.StatusCreated, "alice", "PUT", "/reports/%3Cb%3E.txt", "x")

		h, body := e.want(http.StatusOK, "alice", "GET", "/reports/", "")
		if !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("listing headers: %v", h)
		}
		for _, want := range []string{
			"<title>Index of /reports/</title>",
			`<a href="/webdav/">../</a>`,
			`<a href="/webdav/reports/old/">old/</a>`,
			`<a href="/webdav/reports/q3.txt">q3.txt</a>`,
			`<span title="2048 bytes">2.0 KiB</span>`,
			`&lt;b&gt;.txt</a>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("listing lacks %q:\n%s", want, body)
			}
		}
		if !regexp.MustCompile(`q3\.txt</a><td class=s>.*?<td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`).MatchString(body) {
			t.Errorf("no modification time beside q3.txt:\n%s", body)
		}
		if strings.Contains(strings.ToLower(body), "<script") || strings.Contains(body, "<b>") {
			t.Errorf("listing carries markup it should not:\n%s", body)
		}

		_, root := e.want(http.StatusOK, "alice", "GET", "/", "")
		if !strings.Contains(root, "<title>Index of /</title>") || strings.Contains(root, "(parent folder)") {
			t.Errorf("root listing: %s", root)
		}
	})
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 10 << 20: "10 MiB", 1536 << 20: "1.5 GiB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestListingAgreesWithPropfind is issue 41's finding 5: the HTML index
// lists exactly the members PROPFIND lists. A symlink leading out of the
// user's tree (or nowhere) is in neither; one inside is shown as its
// target, with the target's size.
func TestListingAgreesWithPropfind(t *testing.T) {
	db := testdb.Open(t, "sqlite")
	u := addUser(t, db, "alice", 0)
	dir := t.TempDir()
	e := newEnv(t, db, dir, Options{})
	e.want(http.StatusCreated, "alice", "PUT", "/real.txt", strings.Repeat("r", 3000))
	home := filepath.Join(dir, u.ID)
	outside := filepath.Join(dir, "outside-secret")
	if err := os.WriteFile(outside, []byte("not alice's"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"esc-secret": outside, "dangling": "nowhere", "inside": "real.txt"} {
		if err := os.Symlink(target, filepath.Join(home, name)); err != nil {
			t.Fatal(err)
		}
	}
	_, page := e.want(http.StatusOK, "alice", "GET", "/", "")
	_, multi := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/", "", "Depth", "1")
	for _, gone := range []string{"esc-secret", "dangling"} {
		if strings.Contains(page, gone) || strings.Contains(multi, gone) {
			t.Errorf("%s is listed (index: %v, PROPFIND: %v)", gone, strings.Contains(page, gone), strings.Contains(multi, gone))
		}
	}
	if !strings.Contains(page, `<a href="/webdav/inside">inside</a><td class=s><span title="3000 bytes">`) || !strings.Contains(multi, "/webdav/inside") {
		t.Errorf("the symlink inside the tree is not listed as its target:\n%s", page)
	}
}
