package api_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// apiSeries are the ontoflow_api_* series of a /metrics page (names and
// labels, without values).
func apiSeries(t *testing.T, f *foundation) ([]string, int) {
	t.Helper()
	r := f.do(t, "", "GET", "/metrics", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("/metrics: %d", r.status)
	}
	var series []string
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "ontoflow_api_") {
			series = append(series, l[:strings.LastIndexByte(l, ' ')])
		}
	}
	sort.Strings(series)
	return series, len(r.body)
}

// TestMetricsLabelsAreBounded: unauthenticated requests with invented
// methods, to unknown paths and answered with assorted statuses do not add
// series to /metrics: labels are a known method or OTHER, a route template
// or "unmatched", and a status class (issue 13, item 4).
func TestMetricsLabelsAreBounded(t *testing.T) {
	f := newFoundation(t, testdb.Open(t, "sqlite"))
	traffic := func(round int) {
		for i := 0; i < 50; i++ {
			id := fmt.Sprintf("%d%d", round, i)
			for _, req := range []struct{ method, path string }{
				{"X" + id, "/healthz"},                   // invented method, known route
				{"GET", "/no/such/path/" + id},           // unknown path
				{"BREW" + id, "/no/such/path/" + id},     // both
				{"GET", "/api/v1/users/" + id},           // a template with a parameter, 401
				{"GET", "/api/v1/users/nope-" + id},      // the same template
				{"POST", "/api/v1/ontology/types/" + id}, // no such method on the route
			} {
				f.do(t, "", req.method, req.path, "", nil)
			}
			f.do(t, "admin", "GET", "/api/v1/users/"+id, "", nil) // 404
			f.do(t, "admin", "GET", "/api/v1/users/admin", "", nil)
		}
	}
	traffic(0)
	apiSeries(t, f) // the scrape itself is counted once it is answered
	before, sizeBefore := apiSeries(t, f)
	traffic(1)
	traffic(2)
	after, sizeAfter := apiSeries(t, f)
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("new traffic added metric series: %d before, %d after; e.g. %q", len(before), len(after), newOnes(before, after))
	}
	if sizeAfter > sizeBefore+1024 {
		t.Errorf("/metrics grew from %d to %d bytes", sizeBefore, sizeAfter)
	}
	for _, s := range after {
		if strings.Contains(s, "/no/such") || strings.Contains(s, `method="X`) || strings.Contains(s, `method="BREW`) || strings.Contains(s, `status="401"`) {
			t.Errorf("unbounded label in %s", s)
			break
		}
	}
	want := []string{`method="OTHER",route="unmatched",status="4xx"`, `method="GET",route="unmatched",status="4xx"`,
		`method="GET",route="/api/v1/users/:id",status="4xx"`, `method="GET",route="/api/v1/users/:id",status="2xx"`}
	for _, w := range want {
		if !strings.Contains(strings.Join(after, "\n"), w) {
			t.Errorf("no series with %s in:\n%s", w, strings.Join(after, "\n"))
		}
	}
}

func newOnes(before, after []string) []string {
	seen := map[string]bool{}
	for _, s := range before {
		seen[s] = true
	}
	var out []string
	for _, s := range after {
		if !seen[s] && len(out) < 3 {
			out = append(out, s)
		}
	}
	return out
}
