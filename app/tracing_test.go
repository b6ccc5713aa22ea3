package app_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/telemetry"
)

// TestTracesFollowAnExecution: with tracing on, an execute of a webhook
// action and a batch each make one connected trace, from the HTTP request
// through the workflow's start, the workflow (and a batch's children) and
// its activities to the webhook call, which carries the trace on to the
// receiver (traceparent); tracing is recorded in memory.
func TestTracesFollowAnExecution(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			more := []string{"--outbound-allow", "127.0.0.1/32"}
			if d == "postgres" {
				more = append(more, "--database-url", testdb.DSN(t, d))
			}
			sr := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
			a := devtest.Start(t, adminPassword, more, nil, app.WithTracing(telemetry.NewTracing(tp)))
			tracesFollow(t, devClient{t: t, base: a.APIURL}, sr)
		})
	}
}

func tracesFollow(t *testing.T, c devClient, sr *tracetest.SpanRecorder) {
	rx := newReceiver(t)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "notes", "type": "string"}}}, nil)
	var obj, hook, setNotes struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": "t1"}}, &obj)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "sync", "object_type_id": "Ticket",
		"operation_kind": "invoke_webhook", "config": map[string]any{"operation": map[string]any{"url": rx.srv.URL + "/sync"}}}, &hook)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "set-notes", "object_type_id": "Ticket",
		"operation_kind": "update_object", "inputs": []map[string]any{{"name": "notes", "type": "string"}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "notes", "input": "notes"}}}}}, &setNotes)

	var ex, batch struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		WorkflowID string `json:"workflow_id"`
		TraceID    string `json:"trace_id"`
	}
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+hook.ID+"/execute", map[string]any{"target_object_id": obj.ID}, &ex)
	items := []map[string]any{{"target_object_id": obj.ID, "parameters": map[string]any{"notes": "a"}},
		{"target_object_id": obj.ID, "parameters": map[string]any{"notes": "b"}}}
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+setNotes.ID+"/execute-batch", map[string]any{"items": items}, &batch)
	if ex.Status != "succeeded" || ex.WorkflowID == "" || batch.ID == "" {
		t.Fatalf("execute %+v, batch %+v", ex, batch)
	}

	hookTrace := traceOf(t, sr, ex.WorkflowID, "RunWorkflow:", "RunActivity:", "HTTP POST outbound",
		// The row's start and success: an UPDATE on SQLite; on Postgres one
		// statement with its rollups, which the tracer names "SQL".
		"INSERT executions", "SQL", "SELECT action_types")
	got := rx.seenAt("/sync")
	if len(got) != 1 || !strings.Contains(got[0].Header.Get("traceparent"), hookTrace.String()) {
		t.Errorf("the webhook's traceparent %q, want trace %s", got[0].Header.Get("traceparent"), hookTrace)
	}
	// The record names its trace, so one id leads to the others.
	if ex.TraceID != hookTrace.String() {
		t.Errorf("the execution records trace %q, its trace is %s", ex.TraceID, hookTrace)
	}
	var batchWF struct {
		WorkflowID string `json:"workflow_id"`
		TraceID    string `json:"trace_id"`
	}
	c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+batch.ID, nil, &batchWF)
	batchTrace := traceOf(t, sr, batchWF.WorkflowID, "RunWorkflow:", "StartChildWorkflow:", "RunActivity:")
	if batchWF.TraceID != batchTrace.String() {
		t.Errorf("the batch records trace %q, its trace is %s", batchWF.TraceID, batchTrace)
	}
	if hookTrace == traceOfWorkflow(sr.Ended(), batchWF.WorkflowID) {
		t.Errorf("the execute and the batch share trace %s", hookTrace)
	}
}

// traceOf waits for the trace whose StartWorkflow span started workflowID
// to hold a span named with each prefix, then checks it is one connected
// tree under the HTTP request's server span, and returns its id.
func traceOf(t *testing.T, sr *tracetest.SpanRecorder, workflowID string, want ...string) trace.TraceID {
	t.Helper()
	var spans []sdktrace.ReadOnlySpan
	var id trace.TraceID
	missing := want
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ended := sr.Ended()
		id = traceOfWorkflow(ended, workflowID)
		spans = spans[:0]
		for _, s := range ended {
			if s.SpanContext().TraceID() == id {
				spans = append(spans, s)
			}
		}
		if missing = missingSpans(spans, want); id.IsValid() && len(missing) == 0 {
			break
		}
	}
	if !id.IsValid() || len(missing) > 0 {
		t.Fatalf("trace of %s: no span %v among %v", workflowID, missing, spanNames(spans))
	}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	roots := 0
	for _, s := range spans {
		switch {
		case !s.Parent().IsValid():
			roots++
			if s.Name() != "HTTP POST" || s.SpanKind() != trace.SpanKindServer {
				t.Errorf("trace of %s starts at %q (%v), not the HTTP request", workflowID, s.Name(), s.SpanKind())
			}
		case !ids[s.Parent().SpanID()]:
			t.Errorf("span %q of %s has a parent outside its trace", s.Name(), workflowID)
		}
	}
	if roots != 1 {
		t.Errorf("trace of %s has %d roots: %v", workflowID, roots, spanNames(spans))
	}
	return id
}

func traceOfWorkflow(spans []sdktrace.ReadOnlySpan, workflowID string) trace.TraceID {
	for _, s := range spans {
		if !strings.HasPrefix(s.Name(), "StartWorkflow:") {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == "temporalWorkflowID" && kv.Value.AsString() == workflowID {
				return s.SpanContext().TraceID()
			}
		}
	}
	return trace.TraceID{}
}

func missingSpans(spans []sdktrace.ReadOnlySpan, want []string) []string {
	var out []string
	for _, w := range want {
		found := false
		for _, s := range spans {
			found = found || strings.HasPrefix(s.Name(), w)
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, fmt.Sprintf("%s(%v)", s.Name(), s.SpanKind()))
	}
	sort.Strings(out)
	return out
}
