package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/telemetry"
)

// lockedBuffer collects the process's log lines from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the JSON log lines written so far.
func (b *lockedBuffer) lines(t *testing.T) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// TestLogLinesNameTheirExecution: with tracing on and the log at debug
// level, every line a step logs in the trace of a sync execute, and of a batch
// (its steps and its items'), carries the execution id, the workflow id
// and the trace id, and they are those of the execution record.
func TestLogLinesNameTheirExecution(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			var more []string
			if d == "postgres" {
				more = append(more, "--database-url", testdb.DSN(t, d))
			}
			logs := &lockedBuffer{}
			log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
			a := devtest.Start(t, adminPassword, more, log, app.WithTracing(telemetry.NewTracing(tp)))
			logLinesNameExecution(t, devClient{t: t, base: a.APIURL}, logs)
		})
	}
}

type execRecord struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	WorkflowID string `json:"workflow_id"`
	TraceID    string `json:"trace_id"`
}

func logLinesNameExecution(t *testing.T, c devClient, logs *lockedBuffer) {
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}, {"name": "notes", "type": "string"}}}, nil)
	var obj, setNotes struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": "t1"}}, &obj)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "set-notes", "object_type_id": "Ticket",
		"operation_kind": "update_object", "inputs": []map[string]any{{"name": "notes", "type": "string"}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "notes", "input": "notes"}}}}}, &setNotes)

	var ex, batch execRecord
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+setNotes.ID+"/execute",
		map[string]any{"target_object_id": obj.ID, "parameters": map[string]any{"notes": "x"}}, &ex)
	items := []map[string]any{{"target_object_id": obj.ID, "parameters": map[string]any{"notes": "a"}},
		{"target_object_id": obj.ID, "parameters": map[string]any{"notes": "b"}}}
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+setNotes.ID+"/execute-batch", map[string]any{"items": items}, &batch)
	c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+batch.ID, nil, &batch)
	if ex.Status != "succeeded" || ex.TraceID == "" || batch.TraceID == "" {
		t.Fatalf("execute %+v, batch %+v", ex, batch)
	}

	byTrace := map[string][]map[string]any{}
	lines := logs.lines(t)
	for _, l := range lines {
		if id, ok := l["trace_id"].(string); ok {
			byTrace[id] = append(byTrace[id], l)
		}
	}
	sdkLinesNameExecution(t, lines, ex, batch)
	// The sync execute: every line of its trace names it.
	exLines := byTrace[ex.TraceID]
	if len(exLines) == 0 {
		t.Fatalf("no log line carries the execute's trace %s", ex.TraceID)
	}
	for _, l := range exLines {
		if l["execution_id"] != ex.ID || l["workflow_id"] != ex.WorkflowID {
			t.Errorf("a line of execution %s (workflow %s): %v", ex.ID, ex.WorkflowID, l)
		}
	}
	// The batch: every line names an execution and its workflow, the
	// batch's own steps and each item's (two items).
	seen := map[string]bool{}
	for _, l := range byTrace[batch.TraceID] {
		id, _ := l["execution_id"].(string)
		wf, _ := l["workflow_id"].(string)
		if id == "" || wf == "" {
			t.Errorf("a line of batch %s names no execution or workflow: %v", batch.ID, l)
			continue
		}
		seen[id] = true
		// The batch's steps run in its workflow or its chunks' (…/chunk-N).
		if id == batch.ID && !strings.HasPrefix(wf, batch.WorkflowID) {
			t.Errorf("a line of batch %s names workflow %s, not %s or a chunk of it", batch.ID, wf, batch.WorkflowID)
		}
	}
	if !seen[batch.ID] || len(seen) != 3 {
		t.Errorf("the batch's lines name executions %v; want the batch %s and its two items", seen, batch.ID)
	}
}

// sdkLinesNameExecution checks the Temporal SDK's own lines (they carry
// no trace): each that tags a workflow of the two executions names the
// execution too, and there are such lines (the SDK logs at debug level).
func sdkLinesNameExecution(t *testing.T, lines []map[string]any, ex, batch execRecord) {
	t.Helper()
	tagged := 0
	for _, l := range lines {
		wf, _ := l["WorkflowID"].(string)
		want := ""
		switch {
		case wf == ex.WorkflowID:
			want = ex.ID
		case strings.HasPrefix(wf, batch.WorkflowID):
			want = batch.ID
		default:
			continue
		}
		tagged++
		if l["execution_id"] != want || l["workflow_id"] != wf {
			t.Errorf("an SDK line of workflow %s names execution %v, workflow %v; want %s: %v", wf, l["execution_id"], l["workflow_id"], want, l)
		}
	}
	if tagged == 0 {
		t.Error("no SDK line tags the executions' workflows: the check above checked nothing")
	}
}
