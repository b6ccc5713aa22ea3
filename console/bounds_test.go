package console_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/console"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine/kinds"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications"
	"github.com/ontoflow/ontoflow/ontology"
	"github.com/ontoflow/ontoflow/users"
)

// wideProps is how many properties the Wide type of boundsConsole has:
// more than the explorer's column cap.
const wideProps = defaults.MaxColumns + 20

// boundsConsole serves the console alone (no Temporal: the explorer
// needs only the store) over db with a type Wide of wideProps string
// properties p000... and one object, and returns its /ui URL and the
// session of "reader", a user without permissions.
func boundsConsole(t *testing.T, db *gorm.DB) (string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	name, pw := "reader", "reader-password-1"
	if _, err := (&users.Store{DB: db, Levels: auth.DefaultLevels}).Create(ctx, users.Spec{Username: &name, Password: &pw}); err != nil {
		t.Fatal(err)
	}
	store := ontology.NewStore(db, auth.DefaultLevels, kinds.Registry().Domain())
	sp := ontology.ObjectTypeSpec{Name: "Wide"}
	props := map[string]any{}
	for i := range wideProps {
		p := fmt.Sprintf("p%03d", i)
		sp.Properties = append(sp.Properties, ontology.PropertySpec{Name: p, Type: domain.T(domain.TypeString)})
		props[p] = "v" + p
	}
	if _, err := store.CreateObjectType(ctx, "", sp); err != nil {
		t.Fatal(err)
	}
	admin := &models.User{ID: "00000000-0000-4000-8000-0000000000ad", Username: "admin", Roles: models.NewJSON([]string{"admin"})}
	if _, err := store.CreateObjectAs(ctx, admin, "Wide", ontology.ObjectSpec{Properties: props}); err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.Deps{Auth: auth.NewService(db, auth.Options{}), Store: store, Inbox: notifications.NewInbox(db),
		Levels: auth.DefaultLevels, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return srv.URL + "/ui", signIn(t, srv.URL+"/ui", name, pw)
}

// vmRSS is the process's resident set (kB) from /proc/self/status; 0
// where there is none.
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// colsURL is the explorer's table of Wide with cols naming n columns.
func colsURL(base string, names ...string) string {
	return base + "/explore/Wide?cols=" + strings.Join(names, ",")
}

// TestExplorerColumnsCapped: ?cols= of 10,000 repeated names (a 50 KB
// URL) was a 1.4 GB page and 6 GB of RSS, every header's links repeating
// the whole query (issue 41, finding 2). It is now a 400 naming cols and
// the cap, answered without allocating more than a little.
func TestExplorerColumnsCapped(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		base, reader := boundsConsole(t, db)
		names := make([]string, 10000)
		for i := range names {
			names[i] = "p001"
		}
		u := colsURL(base, names...)
		if len(u) < 50000 {
			t.Fatalf("URL of %d bytes, want the issue's 50 KB", len(u))
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rss := vmRSS()
		start := time.Now()
		resp, page := sendWithin(t, 30*time.Second, u, reader)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		grew := vmRSS() - rss
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("10,000 columns: %d in %v, %d bytes allocated, RSS %+d kB", resp.StatusCode, took, alloc, grew)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "cols: at most "+strconv.Itoa(defaults.MaxColumns)) {
			t.Fatalf("10,000 columns: %d, want 400 naming cols and %d: %.500s", resp.StatusCode, defaults.MaxColumns, page)
		}
		// Generous: the request reads a 50 KB URL; the unbounded page
		// allocated gigabytes.
		if alloc > 64<<20 || grew > 64<<10 {
			t.Fatalf("10,000 columns allocated %d bytes, RSS grew %d kB; want a few MB", alloc, grew)
		}
	})
}

// sendWithin is send with a deadline, so a page that never ends fails the
// test instead of hanging it.
func sendWithin(t *testing.T, d time.Duration, u string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %.200s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read the page of %.200s: %v", u, err)
	}
	return resp, string(b)
}

var colHeadRE = regexp.MustCompile(`<th scope="col"`)

// TestExplorerPageLinear: the explorer's columns are de-duplicated, its
// links carry only the table's state (a parameter it does not read is
// not copied into each of them), so a page at the column cap, a filter on
// every column, weighs what its columns and links do; past the caps
// (columns, search, query string) it is a 400 naming the parameter.
func TestExplorerPageLinear(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		base, reader := boundsConsole(t, db)
		resp, page := send(t, "GET", colsURL(base, "p001", "p002", "p001", "p002", "p001"), nil, reader)
		if resp.StatusCode != 200 || len(colHeadRE.FindAllString(page, -1)) != 3 {
			t.Fatalf("repeated columns: %d with %d headers, want 200 with Object, p001, p002", resp.StatusCode, len(colHeadRE.FindAllString(page, -1)))
		}

		// A link keeps the table's state (columns, filters, sort,
		// search) and nothing else.
		_, page = send(t, "GET", colsURL(base, "p001", "p002")+"&sort=-p001&f.p001=exists&v.p001=&f.p002=&q=&junk=1", nil, reader)
		m := regexp.MustCompile(`<a href="([^"]*)" aria-label="Move p002 left">`).FindStringSubmatch(page)
		if want := "/ui/explore/Wide?cols=p002%2Cp001&f.p001=exists&sort=-p001"; m == nil || html.UnescapeString(m[1]) != want {
			t.Fatalf("move link %q, want %q", m, want)
		}

		var names []string
		filters := url.Values{}
		for i := range defaults.MaxColumns {
			p := fmt.Sprintf("p%03d", i)
			names = append(names, p)
			filters.Set("f."+p, "exists")
		}
		full := colsURL(base, names...) + "&" + filters.Encode()
		resp, page = send(t, "GET", full, nil, reader)
		if resp.StatusCode != 200 || !strings.Contains(page, "vp099") {
			t.Fatalf("%d columns, each filtered: %d: %.500s", defaults.MaxColumns, resp.StatusCode, page)
		}
		t.Logf("%d columns, each filtered: a page of %d bytes", defaults.MaxColumns, len(page))
		// A parameter the table does not read, up to the query cap,
		// is not copied into the page's hundreds of links.
		room := defaults.MaxExplorerQueryBytes - (len(full) - len(base+"/explore/Wide?")) - len("&junk=")
		_, padded := send(t, "GET", full+"&junk="+strings.Repeat("j", room), nil, reader)
		if strings.Count(padded, "jjjjjjjj") > 0 || len(padded) > len(page)+1024 {
			t.Fatalf("a %d-byte parameter the table does not read: page of %d bytes, %d without it", room, len(padded), len(page))
		}

		for _, c := range []struct{ name, url, want string }{
			{"columns", colsURL(base, append(names, "p100")...), "cols: at most " + strconv.Itoa(defaults.MaxColumns) + " columns"},
			{"search", base + "/explore/Wide?q=" + strings.Repeat("a", defaults.MaxSearchBytes+1), "q: at most " + strconv.Itoa(defaults.MaxSearchBytes) + " bytes"},
			{"query string", full + "&junk=" + strings.Repeat("j", room+1), "query string: at most " + strconv.Itoa(defaults.MaxExplorerQueryBytes) + " bytes"},
			{"picker search", base + "/objects/search?type=Wide&q=" + strings.Repeat("a", defaults.MaxSearchBytes+1), "q: at most"},
			{"action search", base + "/?q=" + strings.Repeat("a", defaults.MaxSearchBytes+1), "q: at most"},
			{"page", base + "/explore/Wide?page=1000000000000000000", "page: at most " + strconv.Itoa(defaults.MaxPageNumber) + " pages"},
			{"log page", base + "/log?page=99999999999999999999", "page: at most " + strconv.Itoa(defaults.MaxPageNumber) + " pages"},
		} {
			resp, page := send(t, "GET", c.url, nil, reader)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, c.want) {
				t.Errorf("%s: %d, want 400 saying %q: %.300s", c.name, resp.StatusCode, c.want, page)
			}
		}
	})
}
