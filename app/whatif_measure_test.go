package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/internal/testdb"
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

// TestWhatIfRecordHistory records (WHATIF_RECORD=<dir>, e.g.
// ../workflows/testdata) the history of a what-if of an action with a
// notification side effect — validate, authorize, run, and no delivery
// step — as v1-what-if.json, with its workflow id in workflow-ids.json,
// for the replay test in workflows/.
func TestWhatIfRecordHistory(t *testing.T) {
	dir := os.Getenv("WHATIF_RECORD")
	if dir == "" {
		t.Skip("set WHATIF_RECORD=<dir> to record")
	}
	a, dc := startDevApp(t, nil)
	c := wi{dc}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", jsonMap{"name": "Ticket", "primary_key": "title",
		"properties": []jsonMap{{"name": "title", "type": "string", "required": true}, {"name": "status", "type": "string"}}}, nil)
	obj := c.id(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", jsonMap{"properties": jsonMap{"title": "t1"}})
	act := c.id(http.StatusCreated, "POST", "/api/v1/ontology/actions", jsonMap{"name": "set-status-notify", "object_type_id": "Ticket",
		"operation_kind": "update_object", "inputs": []jsonMap{{"name": "status", "type": "string", "required": true}},
		"config": jsonMap{"operation": jsonMap{"property_mappings": []jsonMap{{"property": "status", "input": "status"}}},
			"notification_side_effects": []jsonMap{{"title": "{{ object.properties.status }}", "send_to_actor": true}}}})
	m := c.mustWhatIf(http.StatusCreated, act, "", obj, jsonMap{"status": "done"})
	wfID := m["execution"].(jsonMap)["workflow_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := a.Temporal.GetWorkflow(ctx, wfID, "")
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var events []*historypb.HistoryEvent
	iter := a.Temporal.GetWorkflowHistory(ctx, wfID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	js, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "v1-what-if.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	idsPath := filepath.Join(dir, "workflow-ids.json")
	if data, err := os.ReadFile(idsPath); err == nil {
		_ = json.Unmarshal(data, &ids)
	}
	ids["v1-what-if.json"] = wfID
	data, _ := json.MarshalIndent(ids, "", "  ")
	if err := os.WriteFile(idsPath, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
