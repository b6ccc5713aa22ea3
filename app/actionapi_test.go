package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// TestActionAPIForPrograms covers what a program (not the console) needs
// of the action API, over HTTP on a whole dev process, on SQLite and
// Postgres: strict function results, the resolved form, every matching
// override, types named by name, executions that say they run, and the
// rule for secret references shown to readers.
func TestActionAPIForPrograms(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			more := []string{"--outbound-allow", "127.0.0.1/32"}
			if d == "postgres" {
				more = append(more, "--database-url", testdb.DSN(t, d))
			}
			a, c := startDevApp(t, more)
			actionAPISuite(t, a, c)
		})
	}
}

type apiEnv struct {
	a        *app.App
	c        devClient
	t1, t2   string
	relates  string
	ticketID string
}

// in is e reporting to the subtest t.
func (e apiEnv) in(t *testing.T) apiEnv {
	e.c.t = t
	return e
}

func (e apiEnv) newTicket(title string) string {
	var o struct {
		ID string `json:"id"`
	}
	e.c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": title}}, &o)
	return o.ID
}

// action defines an action type and returns its view.
func (e apiEnv) action(def map[string]any) map[string]any {
	var a map[string]any
	e.c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", def, &a)
	return a
}

func (e apiEnv) post(path string, body any) (int, map[string]any) {
	e.c.t.Helper()
	st, b := e.c.do("POST", path, body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return st, m
}

func errOf(m map[string]any) (code, field string) {
	em, _ := m["error"].(map[string]any)
	code, _ = em["code"].(string)
	if ds, _ := em["details"].([]any); len(ds) > 0 {
		d, _ := ds[0].(map[string]any)
		field, _ = d["field"].(string)
	}
	return code, field
}

func actionAPISuite(t *testing.T, a *app.App, c devClient) {
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true},
			{"name": "status", "type": "string"}, {"name": "priority", "type": "string"},
			{"name": "notes", "type": "string"}, {"name": "marking_hint", "type": "marking"}}}, nil)
	var lt, ot struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/link-types", map[string]any{"name": "relates", "source_object_type_id": "Ticket",
		"target_object_type_id": "Ticket", "cardinality": "many_to_many"}, &lt)
	c.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket", nil, &ot)
	e := apiEnv{a: a, c: c, relates: lt.ID, ticketID: ot.ID}
	e.t1, e.t2 = e.newTicket("t1"), e.newTicket("t2")

	t.Run("1 function results are checked strictly; OpenFoundry's top-level form is sugar", func(t *testing.T) { strictFunctionResults(t, e.in(t)) })
	t.Run("2 the resolved form as JSON", func(t *testing.T) { resolvedForm(t, e.in(t)) })
	t.Run("3 every matching override applies", func(t *testing.T) { everyOverride(t, e.in(t)) })
	t.Run("4 types named by name, stored as ids", func(t *testing.T) { typesByName(t, e.in(t)) })
	t.Run("5 running from the first step to the last", func(t *testing.T) { runningStatus(t, e.in(t)) })
	t.Run("6 secret references shown to readers", func(t *testing.T) { secretRefsForReaders(t, e.in(t)) })
}

func strictFunctionResults(t *testing.T, e apiEnv) {
	at := e.action(map[string]any{"name": "fn-shapes", "object_type_id": "Ticket", "operation_kind": "invoke_function",
		"inputs": []map[string]any{{"name": "q", "type": "string", "required": true}, {"name": "other", "type": "string"}},
		"config": map[string]any{"operation": inline("javascript", `export default function (ctx) {
  const q = ctx.parameters.q;
  console.log("shape", q);
  if (q === "patch") return { object_patch: { notes: "patched" }, output: { ok: true } };
  if (q === "link") return { link: { link_type: "relates", target: ctx.parameters.other } };
  if (q === "patch+edits") return { object_patch: { notes: "both" }, edits: [{ type: "update", object_id: ctx.parameters.other, properties: { notes: "other" } }] };
  if (q === "delete") return { delete_object: true };
  if (q === "typo") return { object_patchh: { notes: "lost" } };
  if (q === "bad-edit") return { edits: [{ type: "update", object_id: ctx.target.id, properties: { notes: "x" } }, { type: "upsert", object_id: ctx.target.id }] };
  if (q === "bare") return 42;
  return {};
}`)}})
	id := at["id"].(string)
	run := func(target, q, other string) (int, map[string]any) {
		return e.post("/api/v1/ontology/actions/"+id+"/execute", map[string]any{"target_object_id": target, "parameters": map[string]any{"q": q, "other": other}})
	}
	st, ex := run(e.t1, "patch", "")
	res, _ := ex["operation_result"].(map[string]any)
	if st != http.StatusOK || e.c.notes(e.t1) != "patched" || fmt.Sprint(res["result"]) != "map[ok:true]" {
		t.Fatalf("object_patch: %d %v notes=%q", st, ex, e.c.notes(e.t1))
	}
	if st, ex := run(e.t1, "patch+edits", e.t2); st != http.StatusOK || e.c.notes(e.t1) != "both" || e.c.notes(e.t2) != "other" {
		t.Fatalf("object_patch with edits: %d %v", st, ex)
	}
	if st, ex := run(e.t1, "link", e.t2); st != http.StatusOK {
		t.Fatalf("link: %d %v", st, ex)
	}
	var links struct {
		Data []struct {
			SourceID string `json:"source_object_id"`
			TargetID string `json:"target_object_id"`
		} `json:"data"`
	}
	e.c.must(http.StatusOK, "GET", "/api/v1/ontology/link-types/relates/links", nil, &links)
	if len(links.Data) != 1 || links.Data[0].SourceID != e.t1 || links.Data[0].TargetID != e.t2 {
		t.Fatalf("links after link: %+v", links)
	}
	doomed := e.newTicket("doomed")
	if st, ex := run(doomed, "delete", ""); st != http.StatusOK {
		t.Fatalf("delete_object: %d %v", st, ex)
	}
	e.c.must(http.StatusNotFound, "GET", "/api/v1/ontology/types/Ticket/objects/"+doomed, nil, nil)

	before := e.c.notes(e.t1)
	for q, field := range map[string]string{"typo": "object_patchh", "bad-edit": "edits[1]", "bare": "return"} {
		st, m := run(e.t1, q, "")
		code, f := errOf(m)
		if st != http.StatusUnprocessableEntity || code != "FunctionResultInvalid" || f != field {
			t.Fatalf("%s: %d %v, want 422 FunctionResultInvalid naming %s", q, st, m, field)
		}
		if e.c.notes(e.t1) != before {
			t.Fatalf("%s applied an edit", q)
		}
	}
	// Recorded with the run: the execution in the log says why.
	var page struct {
		Data []struct {
			Status       string `json:"status"`
			ErrorCode    string `json:"error_code"`
			ErrorMessage string `json:"error_message"`
		} `json:"data"`
	}
	e.c.must(http.StatusOK, "GET", "/api/v1/ontology/executions?action_type="+id+"&status=failed", nil, &page)
	if len(page.Data) != 3 {
		t.Fatalf("failed runs in the log: %+v", page.Data)
	}
	for _, r := range page.Data {
		if r.ErrorCode != "FunctionResultInvalid" || !strings.Contains(r.ErrorMessage, "return value is invalid") {
			t.Fatalf("recorded %+v", r)
		}
	}
	// And with the function's own run record: failed, reason result_invalid.
	e.c.must(http.StatusCreated, "POST", "/api/v1/functions", map[string]any{"name": "shaper", "runtime": "javascript"}, nil)
	e.c.must(http.StatusCreated, "POST", "/api/v1/functions/shaper/versions", map[string]any{"version": "1.0.0",
		"source": `export default () => ({ object_patchh: { notes: "lost" } })`}, nil)
	pkg := e.action(map[string]any{"name": "fn-pkg-shape", "object_type_id": "Ticket", "operation_kind": "invoke_function",
		"config": map[string]any{"operation": map[string]any{"package": "shaper", "version": "1.0.0"}}})["id"].(string)
	if st, m := e.post("/api/v1/ontology/actions/"+pkg+"/execute", map[string]any{"target_object_id": e.t1}); st != http.StatusUnprocessableEntity {
		t.Fatalf("package: %d %v", st, m)
	}
	runs := fnRuns(t, e.c, "shaper", "")
	if len(runs) != 1 || runs[0]["status"] != "failed" || runs[0]["reason"] != "result_invalid" || !strings.Contains(fmt.Sprint(runs[0]["error"]), "object_patchh") {
		t.Fatalf("the run's record: %v", runs)
	}
}

// triage is the README Quick start's action, with a description on its
// second section, which starts collapsed, and a marking input.
func triage(e apiEnv) string {
	return e.action(map[string]any{"name": "triage", "display_name": "Triage ticket",
		"object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "status", "type": "string", "required": true},
			{"name": "priority", "type": "string"}, {"name": "reason", "type": "string", "description": "Why?"},
			{"name": "level", "type": "marking", "default_value": "public"}},
		"form_schema": map[string]any{
			"sections": []map[string]any{{"id": "main", "title": "Main", "columns": 2, "parameters": []string{"status", "priority"}},
				{"id": "why", "title": "Why", "description": "Tell us", "collapsible": true, "collapsed": true, "parameters": []string{"reason"}}},
			"parameter_overrides": []map[string]any{{"parameter": "reason", "required": true, "label": "Reason for high priority",
				"conditions": []map[string]any{{"path": "parameters.priority", "operator": "is", "value": "high"}}}}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "status", "input": "status"},
			{"property": "priority", "input": "priority"}, {"property": "notes", "input": "reason"}, {"property": "marking_hint", "input": "level"}}}}})["id"].(string)
}

type formModel struct {
	Result   string `json:"result"`
	Sections []struct {
		ID          string `json:"id"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Columns     int    `json:"columns"`
		Collapsible bool   `json:"collapsible"`
		Collapsed   bool   `json:"collapsed"`
		Visible     bool   `json:"visible"`
		Parameters  []struct {
			Name          string                `json:"name"`
			Label         string                `json:"label"`
			Description   string                `json:"description"`
			Type          struct{ Type string } `json:"type"`
			Required      bool                  `json:"required"`
			Visible       bool                  `json:"visible"`
			Default       any                   `json:"default"`
			Value         any                   `json:"value"`
			AllowedValues []any                 `json:"allowed_values"`
			Message       string                `json:"validation_message"`
		} `json:"parameters"`
	} `json:"sections"`
}

func (e apiEnv) form(id, target string, params map[string]any) formModel {
	var f formModel
	e.c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+id+"/form", map[string]any{"target_object_id": target, "parameters": params}, &f)
	return f
}

func resolvedForm(t *testing.T, e apiEnv) {
	id := triage(e)
	f := e.form(id, e.t1, map[string]any{"status": "open"})
	if len(f.Sections) != 3 || f.Sections[0].ID != "main" || f.Sections[0].Columns != 2 || f.Sections[1].ID != "why" ||
		!f.Sections[1].Collapsible || !f.Sections[1].Collapsed || f.Sections[1].Description != "Tell us" || f.Sections[2].ID != "parameters" {
		t.Fatalf("sections: %+v", f.Sections)
	}
	reason := f.Sections[1].Parameters[0]
	if f.Result != "VALID" || reason.Name != "reason" || reason.Label != "reason" || reason.Required || reason.Description != "Why?" || !reason.Visible {
		t.Fatalf("reason before: %+v (%s)", reason, f.Result)
	}
	if st := f.Sections[0].Parameters[0]; st.Name != "status" || st.Value != "open" || !st.Required || st.Type.Type != "string" {
		t.Fatalf("status: %+v", st)
	}
	level := f.Sections[2].Parameters[0]
	if level.Name != "level" || level.Default != "public" || level.Value != "public" || fmt.Sprint(level.AllowedValues) != "[public confidential pii]" {
		t.Fatalf("level: %+v", level)
	}
	// Typing high as the priority: the override makes reason required,
	// with its label, and the form invalid until it has a value.
	f = e.form(id, e.t1, map[string]any{"status": "open", "priority": "high"})
	reason = f.Sections[1].Parameters[0]
	if f.Result != "INVALID" || !reason.Required || reason.Label != "Reason for high priority" || !strings.Contains(reason.Message, "required") {
		t.Fatalf("reason after high: %+v (%s)", reason, f.Result)
	}
	if f := e.form(id, e.t1, map[string]any{"status": "open", "priority": "high", "reason": "fire"}); f.Result != "VALID" || f.Sections[1].Parameters[0].Value != "fire" {
		t.Fatalf("with a reason: %+v", f)
	}
	// The same refusals as validate: an unreadable target, an unknown action.
	if st, m := e.post("/api/v1/ontology/actions/"+id+"/form", map[string]any{"target_object_id": "00000000-0000-4000-8000-000000000000"}); st != http.StatusNotFound {
		t.Fatalf("missing target: %d %v", st, m)
	}
	if st, _ := e.post("/api/v1/ontology/actions/nope/form", map[string]any{}); st != http.StatusNotFound {
		t.Fatalf("unknown action: %d", st)
	}
}

func everyOverride(t *testing.T, e apiEnv) {
	high := []map[string]any{{"path": "parameters.priority", "operator": "is", "value": "high"}}
	urgent := []map[string]any{{"path": "parameters.status", "operator": "is", "value": "urgent"}}
	id := e.action(map[string]any{"name": "escalate", "object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "status", "type": "string", "required": true},
			{"name": "priority", "type": "string"}, {"name": "reason", "type": "string"}},
		"form_schema": map[string]any{"parameter_overrides": []map[string]any{
			{"parameter": "reason", "conditions": high, "required": true, "label": "Why high?"},
			{"parameter": "reason", "conditions": high, "default_value": "escalated"},
			{"parameter": "reason", "conditions": urgent, "description": "Urgent tickets page on-call", "label": "Why urgent?"}}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "status", "input": "status"},
			{"property": "priority", "input": "priority"}, {"property": "notes", "input": "reason"}}}}})["id"].(string)
	// A conditional default satisfies a conditional requiredness.
	st, m := e.post("/api/v1/ontology/actions/"+id+"/execute", map[string]any{"target_object_id": e.t2,
		"parameters": map[string]any{"status": "open", "priority": "high"}})
	if st != http.StatusOK || e.c.notes(e.t2) != "escalated" {
		t.Fatalf("default under required: %d %v notes=%q", st, m, e.c.notes(e.t2))
	}
	// Attribute by attribute: both conditions hold; the later override
	// wins the label, the earlier ones keep required and the default.
	f := e.form(id, e.t2, map[string]any{"status": "urgent", "priority": "high"})
	r := f.Sections[0].Parameters[2]
	if r.Name != "reason" || !r.Required || r.Label != "Why urgent?" || r.Description != "Urgent tickets page on-call" || r.Value != "escalated" {
		t.Fatalf("reason: %+v", r)
	}
}

func typesByName(t *testing.T, e apiEnv) {
	at := e.action(map[string]any{"name": "relate", "object_type_id": "Ticket", "operation_kind": "create_link",
		"inputs": []map[string]any{{"name": "other", "type": map[string]any{"type": "reference", "object_type_id": "Ticket"}, "required": true},
			{"name": "more", "type": map[string]any{"type": "array", "element_type": map[string]any{"type": "reference", "object_type_id": "Ticket"}}}},
		"config": map[string]any{"operation": map[string]any{"link_type_id": "relates", "other_object_input": "other", "target_side": "target"}}})
	op := at["config"].(map[string]any)["operation"].(map[string]any)
	inputs := at["inputs"].([]any)
	ref := inputs[0].(map[string]any)["type"].(map[string]any)
	elem := inputs[1].(map[string]any)["type"].(map[string]any)["element_type"].(map[string]any)
	if op["link_type_id"] != e.relates || ref["object_type_id"] != e.ticketID || elem["object_type_id"] != e.ticketID {
		t.Fatalf("stored %v / %v / %v, want the ids %s and %s", op, ref, elem, e.relates, e.ticketID)
	}
	if st, m := e.post("/api/v1/ontology/actions/relate/execute", map[string]any{"target_object_id": e.t1, "parameters": map[string]any{"other": e.t2}}); st != http.StatusOK {
		t.Fatalf("execute: %d %v", st, m)
	}
	// A name that names nothing is refused naming the member.
	st, m := e.post("/api/v1/ontology/actions", map[string]any{"name": "relate2", "object_type_id": "Ticket", "operation_kind": "create_link",
		"inputs": []map[string]any{{"name": "other", "type": "reference", "required": true}},
		"config": map[string]any{"operation": map[string]any{"link_type_id": "nope", "other_object_input": "other", "target_side": "source"}}})
	if code, f := errOf(m); st != http.StatusBadRequest || code != "InvalidActionTypeDefinition" || f != "config.operation.link_type_id" {
		t.Fatalf("unknown link type: %d %v", st, m)
	}
	// A property's reference type by name, the object type's own included.
	var p map[string]any
	e.c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/properties", map[string]any{"name": "parent",
		"type": map[string]any{"type": "reference", "object_type_id": "Ticket"}}, &p)
	if pt, _ := p["type"].(map[string]any); pt["object_type_id"] != e.ticketID {
		t.Fatalf("property type stored as %v", p["type"])
	}
}

// blocker holds webhook calls to its path until released.
type blocker struct {
	rx      *receiver
	once    sync.Once
	release chan struct{}
}

func (b *blocker) open() { b.once.Do(func() { close(b.release) }) }

func runningStatus(t *testing.T, e apiEnv) {
	b := &blocker{release: make(chan struct{})}
	rx := newReceiver(t)
	hold := func(w http.ResponseWriter) {
		select {
		case <-b.release:
		case <-time.After(20 * time.Second):
		}
		w.WriteHeader(http.StatusOK)
	}
	rx.script("/slow", hold, hold, hold, hold)
	t.Cleanup(b.open)
	id := e.action(map[string]any{"name": "slow-hook", "object_type_id": "Ticket", "operation_kind": "invoke_webhook",
		"config": map[string]any{"operation": map[string]any{"url": rx.srv.URL + "/slow", "timeout": "30s", "max_attempts": 1}}})["id"].(string)
	var ex struct {
		ID         string `json:"id"`
		WorkflowID string `json:"workflow_id"`
		Status     string `json:"status"`
		StartedAt  string `json:"started_at"`
		FinishedAt string `json:"finished_at"`
	}
	st, body := e.c.do("POST", "/api/v1/ontology/actions/"+id+"/execute?async=true", map[string]any{"target_object_id": e.t1})
	if st != http.StatusAccepted || json.Unmarshal(body, &ex) != nil {
		t.Fatalf("execute async: %d %s", st, body)
	}
	get := func(id string, into any) {
		e.c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+id, nil, into)
	}
	waitFor(t, "the execution to run", func() bool { get(ex.ID, &ex); return ex.Status == "running" })
	if ex.StartedAt == "" || ex.FinishedAt != "" {
		t.Fatalf("running: %+v", ex)
	}
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.c.must(http.StatusOK, "GET", "/api/v1/ontology/executions?status=running", nil, &page)
	if len(page.Data) != 1 || page.Data[0].ID != ex.ID {
		t.Fatalf("?status=running lists %+v", page.Data)
	}
	waitFor(t, "the search attribute to say running", func() bool { return searchStatus(t, e.a, ex.WorkflowID) == "running" })

	// A batch: running, with its items' progress, while the first item's
	// call is held.
	items := []map[string]any{{"target_object_id": e.t1}, {"target_object_id": e.t2}, {"target_object_id": e.t1}}
	var batch struct {
		ID     string         `json:"id"`
		Status string         `json:"status"`
		Totals map[string]any `json:"totals"`
	}
	e.c.must(http.StatusAccepted, "POST", "/api/v1/ontology/actions/"+id+"/execute-batch?async=true", map[string]any{"items": items}, &batch)
	waitFor(t, "the batch to run an item", func() bool { get(batch.ID, &batch); return batch.Status == "running" && batch.Totals["running"] == 1.0 })
	if batch.Totals["total"] != 3.0 || batch.Totals["pending"] != 3.0 || batch.Totals["succeeded"] != 0.0 {
		t.Fatalf("batch totals while running: %+v", batch)
	}

	b.open()
	waitFor(t, "the execution to finish", func() bool { get(ex.ID, &ex); return ex.Status == "succeeded" })
	started, _ := time.Parse(time.RFC3339Nano, ex.StartedAt)
	finished, _ := time.Parse(time.RFC3339Nano, ex.FinishedAt)
	if started.IsZero() || finished.Before(started) {
		t.Fatalf("times: %+v", ex)
	}
	waitFor(t, "the search attribute to say succeeded", func() bool { return searchStatus(t, e.a, ex.WorkflowID) == "succeeded" })
	waitFor(t, "the batch to finish", func() bool { get(batch.ID, &batch); return batch.Status == "succeeded" })
	if batch.Totals["succeeded"] != 3.0 || batch.Totals["running"] != 0.0 {
		t.Fatalf("batch totals at the end: %+v", batch)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// searchStatus reads the OntoflowStatus search attribute of a workflow.
func searchStatus(t *testing.T, a *app.App, workflowID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := a.Temporal.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		t.Fatalf("describe %s: %v", workflowID, err)
	}
	p := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()["OntoflowStatus"]
	var s string
	if p != nil {
		if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
			t.Fatalf("decode OntoflowStatus: %v", err)
		}
	}
	return s
}

func secretRefsForReaders(t *testing.T, e apiEnv) {
	e.c.must(http.StatusCreated, "POST", "/api/v1/secrets", map[string]any{"name": "CRM_TOKEN", "value": "tok-5b0c9e",
		"destinations": []string{"http://127.0.0.1:9/"}}, nil)
	headers := map[string]string{"Authorization": "{{ secrets.CRM_TOKEN }}", "X-Bearer": "Bearer {{ secrets.CRM_TOKEN }}", "X-Plain": "literal-key"}
	id := e.action(map[string]any{"name": "crm-sync", "object_type_id": "Ticket", "operation_kind": "invoke_webhook",
		"config": map[string]any{"operation": map[string]any{"url": "http://127.0.0.1:9/hook", "headers": headers,
			"signing_secret": "{{ secrets.CRM_TOKEN }}"}}})["id"].(string)
	e.c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "reader", "password": "reader-password-1"}, nil)
	reader := e.c.as("reader", "reader-password-1")
	type opView struct {
		Name   string `json:"name"`
		Config struct {
			Operation struct {
				Headers       map[string]string `json:"headers"`
				SigningSecret string            `json:"signing_secret"`
			} `json:"operation"`
		} `json:"config"`
	}
	var own, seen opView
	e.c.must(http.StatusOK, "GET", "/api/v1/ontology/actions/"+id, nil, &own)
	reader.must(http.StatusOK, "GET", "/api/v1/ontology/actions/"+id, nil, &seen)
	if fmt.Sprint(own.Config.Operation.Headers) != fmt.Sprint(headers) || own.Config.Operation.SigningSecret != "{{ secrets.CRM_TOKEN }}" {
		t.Fatalf("the writer sees %+v", own)
	}
	// One rule (docs/outbound.md): a value that is exactly one reference
	// is shown as the reference; anything else is ***.
	want := map[string]string{"Authorization": "{{ secrets.CRM_TOKEN }}", "X-Bearer": "***", "X-Plain": "***"}
	if fmt.Sprint(seen.Config.Operation.Headers) != fmt.Sprint(want) || seen.Config.Operation.SigningSecret != "{{ secrets.CRM_TOKEN }}" {
		t.Fatalf("the reader sees %+v, want headers %v and signing_secret as its reference", seen, want)
	}
	var list struct {
		Data []opView `json:"data"`
	}
	reader.must(http.StatusOK, "GET", "/api/v1/ontology/actions", nil, &list)
	i := slices.IndexFunc(list.Data, func(v opView) bool { return v.Name == "crm-sync" })
	if i < 0 || fmt.Sprint(list.Data[i].Config.Operation.Headers) != fmt.Sprint(want) || list.Data[i].Config.Operation.SigningSecret != "{{ secrets.CRM_TOKEN }}" {
		t.Fatalf("the reader's list shows %+v", list.Data)
	}
}
