package app_test

import (
	"net/http"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// TestWhatIfCost measures (WHATIF_MEASURE=1) what a what-if costs beside
// an execute, and how stacking depth — the edits each step replays in its
// rolled-back transaction — grows a what-if and a read through the branch.
func TestWhatIfCost(t *testing.T) {
	if os.Getenv("WHATIF_MEASURE") == "" {
		t.Skip("set WHATIF_MEASURE=1 to measure")
	}
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			c := wi{startDevArgs(t, dsn, nil, app.ExtraKinds(appendNote{}))}
			f := c.setUp("http://127.0.0.1:9")
			p50 := func(n int, fn func()) time.Duration {
				ds := make([]time.Duration, n)
				for i := range ds {
					start := time.Now()
					fn()
					ds[i] = time.Since(start)
				}
				sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
				return ds[n/2]
			}
			exec := p50(30, func() {
				c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+f.status+"/execute", jsonMap{"target_object_id": f.t2, "parameters": jsonMap{"status": "x"}}, nil)
			})
			fresh := p50(30, func() { c.mustWhatIf(http.StatusCreated, f.status, "", f.t2, jsonMap{"status": "y"}) })
			t.Logf("p50 execute %v, what-if on a new branch %v", exec, fresh)
			branch := c.mustWhatIf(http.StatusCreated, f.note, "", f.t1, jsonMap{"note": "0"})["branch_id"].(string)
			depth := 1
			for _, target := range []int{10, 50, 100} {
				for ; depth < target; depth++ {
					c.mustWhatIf(http.StatusOK, f.note, branch, f.t1, jsonMap{"note": "n"})
				}
				stack := p50(5, func() { c.mustWhatIf(http.StatusOK, f.status, branch, f.t2, jsonMap{"status": "z"}) })
				depth += 5
				read := p50(10, func() {
					c.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket/objects/"+f.t1+"?branch="+branch, nil, nil)
				})
				plain := p50(10, func() { c.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket/objects/"+f.t1, nil, nil) })
				t.Logf("depth %3d: p50 stacked what-if %v, read through the branch %v (plain read %v)", depth, stack, read, plain)
			}
		})
	}
}
