package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// TestBatchSurvivesKilledDev is the restart-survival check at process level:
// a 200-item batch of a create_object action is submitted, the whole `dev`
// process is SIGKILLed while the batch runs, and a new process on the same
// data directory finishes it. create_object is the operation that would show
// a double application (a second object), so the check is exact: 200 items
// succeeded, 200 objects exist, one per title. On SQLite and, with
// TEST_DATABASE_URL, on Postgres (then the data directory keeps only the
// embedded Temporal server's state).
func TestBatchSurvivesKilledDev(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			args := devArgs(t.TempDir())
			if d == "postgres" {
				args = append(args, "--database-url", testdb.DSN(t, d))
			}
			batchSurvivesKill(t, args)
		})
	}
}

func batchSurvivesKill(t *testing.T, args []string) {
	const items = 200
	p := start(t, nil, args...)
	admin := client{t: t, base: p.APIURL, user: "admin", pass: p.AdminPassword}

	admin.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{
		"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true, "unique": true}},
	})
	var action struct {
		ID string `json:"id"`
	}
	admin.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{
		"name": "open-ticket", "object_type_id": "Ticket", "operation_kind": "create_object",
		"inputs": []map[string]any{{"name": "title", "type": "string", "required": true}},
		"config": map[string]any{"operation": map[string]any{
			"property_mappings": []map[string]any{{"property": "title", "input": "title"}},
		}},
	}).json(t, &action)
	if action.ID == "" {
		t.Fatal("action type has no id")
	}

	batch := make([]map[string]any, items)
	for i := range batch {
		batch[i] = map[string]any{"parameters": map[string]any{"title": fmt.Sprintf("t-%03d", i)}}
	}
	var accepted struct {
		ID string `json:"id"`
	}
	r := admin.must(http.StatusAccepted, "POST", "/api/v1/ontology/actions/"+action.ID+"/execute-batch?async=true",
		map[string]any{"items": batch, "justification": "restart survival"})
	r.json(t, &accepted)
	if accepted.ID == "" {
		t.Fatalf("202 without an execution id: %s", r.Body)
	}

	// Let part of the batch run, then crash the whole process.
	waitFor(t, 2*time.Minute, func() bool { return countObjects(t, admin) >= 20 })
	inFlight := countObjects(t, admin)
	killed := time.Now()
	p.kill()

	p2 := start(t, nil, args...)
	up := time.Since(killed)
	admin.base = p2.APIURL
	var final map[string]any
	waitFor(t, 5*time.Minute, func() bool {
		final = nil
		admin.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+accepted.ID, nil).json(t, &final)
		s, _ := final["status"].(string)
		return s == "succeeded" || s == "failed" || s == "partially_succeeded"
	})
	// The recovery figures of the fault matrix (docs/performance.md).
	t.Logf("killed with %d of %d items applied; serving again %v after the kill, batch final %v after it",
		inFlight, items, up.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	titles := listTitles(t, admin)
	if len(titles) != items {
		t.Fatalf("%d Ticket objects after the crash and restart, want exactly %d (batch: %v)", len(titles), items, final)
	}
	for i, title := range titles {
		if want := fmt.Sprintf("t-%03d", i); title != want {
			t.Fatalf("object %d has title %q, want %q", i, title, want)
		}
	}
	var list struct {
		Data []struct {
			Status string `json:"status"`
		} `json:"data"`
		Next string `json:"next_page_token"`
	}
	succeeded := 0
	path := "/api/v1/ontology/executions?action_type=" + action.ID + "&status=succeeded&page_size=500"
	admin.must(http.StatusOK, "GET", path, nil).json(t, &list)
	for _, e := range list.Data {
		if e.Status == "succeeded" {
			succeeded++
		}
	}
	if succeeded < items {
		t.Errorf("%d succeeded executions of open-ticket, want at least %d item executions", succeeded, items)
	}
	revertSurvivesKill(t, args, p2, admin, accepted.ID, items)
}

// revertSurvivesKill reverts the batch, crashes the process while the
// reverts run, and repeats the request on a new process: every object is
// gone, and each item was reverted by exactly one succeeded revert (a
// revert whose workflow was cut off finishes after the restart; one
// submitted twice is refused the second time).
func revertSurvivesKill(t *testing.T, args []string, p *proc, admin client, batchID string, items int) {
	revertPath := "/api/v1/ontology/executions/" + batchID + "/revert"
	go func() {
		// The process dies under this request; its answer does not matter.
		req, _ := http.NewRequest("POST", admin.base+revertPath, strings.NewReader(`{"justification":"crash test"}`))
		req.SetBasicAuth(admin.user, admin.pass)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, 2*time.Minute, func() bool { return countObjects(t, admin) <= items-20 })
	p.kill()

	p3 := start(t, nil, args...)
	admin.base = p3.APIURL
	var out struct {
		Items []struct {
			Status, ErrorCode string
			RevertID          string `json:"revert_execution_id"`
		} `json:"items"`
	}
	admin.must(http.StatusOK, "POST", revertPath, map[string]any{"justification": "after the crash"}).json(t, &out)
	for i, it := range out.Items {
		if it.Status != "succeeded" && it.Status != "reverted" {
			t.Errorf("item %d: %+v", i, it)
		}
	}
	waitFor(t, 2*time.Minute, func() bool { return countObjects(t, admin) == 0 })
	var reverts struct {
		Data []struct {
			RevertOf string `json:"revert_of"`
		} `json:"data"`
	}
	admin.must(http.StatusOK, "GET", "/api/v1/ontology/executions?kind=revert&status=succeeded&page_size=500", nil).json(t, &reverts)
	per := map[string]int{}
	for _, r := range reverts.Data {
		per[r.RevertOf]++
	}
	if len(per) != items {
		t.Errorf("%d items reverted, want %d", len(per), items)
	}
	for id, n := range per {
		if n != 1 {
			t.Errorf("item %s reverted by %d succeeded reverts", id, n)
		}
	}
	p3.stop()
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func countObjects(t *testing.T, c client) int {
	t.Helper()
	return len(listTitles(t, c))
}

// listTitles lists every Ticket's title, sorted.
func listTitles(t *testing.T, c client) []string {
	t.Helper()
	var titles []string
	path := "/api/v1/ontology/types/Ticket/objects?page_size=500"
	for {
		var page struct {
			Data []struct {
				Properties map[string]any `json:"properties"`
			} `json:"data"`
			Next string `json:"next_page_token"`
		}
		r := c.must(http.StatusOK, "GET", path, nil)
		if err := json.Unmarshal(r.Body, &page); err != nil {
			t.Fatalf("objects page: %v", err)
		}
		for _, o := range page.Data {
			s, _ := o.Properties["title"].(string)
			titles = append(titles, s)
		}
		if page.Next == "" {
			break
		}
		path = "/api/v1/ontology/types/Ticket/objects?page_size=500&page_token=" + page.Next
	}
	sort.Strings(titles)
	return titles
}
