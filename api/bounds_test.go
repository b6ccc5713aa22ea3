package api_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// repeated is a query string of n copies of key=value.
func repeated(n int, key, value string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = url.QueryEscape(key) + "=" + url.QueryEscape(value)
	}
	return strings.Join(parts, "&")
}

// overLimit fails unless r is a 400 InvalidArgument whose detail names
// param and whose message names the cap.
func overLimit(t *testing.T, r ontoResp, param string, limit int) {
	t.Helper()
	e, _ := r.body["error"].(map[string]any)
	ds, _ := e["details"].([]any)
	var field string
	if len(ds) > 0 {
		d, _ := ds[0].(map[string]any)
		field, _ = d["field"].(string)
	}
	msg, _ := e["message"].(string)
	if r.status != 400 || r.code() != "InvalidArgument" || field != param || !strings.Contains(msg, fmt.Sprint(limit)) {
		t.Fatalf("want 400 InvalidArgument naming %s and %d; got %d %.300s", param, limit, r.status, r.raw)
	}
}

// TestObjectListingBounds: the object listing's lists are capped with a
// 400 naming the parameter and the cap, where 999 exists-filters, 3,000
// is_not filters, 1,500 includes or order_by with 2,000 filters were a
// 500 (issue 41, finding 3: SQLite's "Expression tree is too large");
// a listing at the cap still answers, on both dialects.
func TestObjectListingBounds(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newOntoEnv(t, db)
		e.expect(201, "", "writer", "POST", "/types", `{"name":"Probe","properties":[{"name":"note","type":"string"},
			{"name":"score","type":"integer"},{"name":"tags","type":{"type":"array","element_type":"string"}}]}`)
		for i := range 3 {
			e.expect(201, "", "writer", "POST", "/types/Probe/objects",
				fmt.Sprintf(`{"properties":{"note":"n%d","score":%d,"tags":["x","y%d"]}}`, i, i, i))
		}
		list := "/types/Probe/objects?"
		for _, c := range []struct {
			name, query, param string
			limit              int
		}{
			{"999 exists", repeated(999, "filter.note.exists", "true"), "filter", defaults.MaxFilters},
			{"3,000 is_not", repeated(3000, "filter.score.is_not", "7"), "filter", defaults.MaxFilters},
			{"1,500 includes", repeated(1500, "filter.tags.includes", "x"), "filter", defaults.MaxFilters},
			{"order_by and 2,000 filters", "order_by=score&" + repeated(2000, "filter.note.exists", "true"), "filter", defaults.MaxFilters},
			{"one over the cap", repeated(defaults.MaxFilters+1, "filter.note.exists", "true"), "filter", defaults.MaxFilters},
			{"two orders", "order_by=score&order_by=-note", "order_by", defaults.MaxOrderBy},
		} {
			t.Run(c.name, func(t *testing.T) {
				overLimit(t, e.do("reader", "GET", list+c.query, ""), c.param, c.limit)
			})
		}
		// At the cap, in an order and with a mix of operators, the
		// statement runs and means what it says.
		half := defaults.MaxFilters / 2
		q := "order_by=-score&" + repeated(half, "filter.note.exists", "true") + "&" +
			repeated(defaults.MaxFilters-half-1, "filter.score.is_not", "2") + "&filter.tags.includes=x"
		r := e.expect(200, "", "reader", "GET", list+q, "")
		if d := r.data(); len(d) != 2 {
			t.Fatalf("%d filters: %d objects, want 2: %.300s", defaults.MaxFilters, len(d), r.raw)
		}
		// Page sizes and searches name their caps too.
		overLimit(t, e.do("reader", "GET", list+"page_size="+fmt.Sprint(defaults.MaxPageSize+1), ""), "page_size", defaults.MaxPageSize)
		long := url.QueryEscape(strings.Repeat("a", defaults.MaxSearchBytes+1))
		for _, p := range []string{"/types", "/link-types", "/actions"} {
			overLimit(t, e.do("reader", "GET", p+"?q="+long, ""), "q", defaults.MaxSearchBytes)
		}
		e.expect(200, "", "reader", "GET", "/types?q="+strings.Repeat("a", defaults.MaxSearchBytes), "")
	})
}
