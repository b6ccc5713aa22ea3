package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// record runs one execution of each shape the engine's workflows take and
// writes their histories as JSON into dir, for the replay test in
// workflows/ (go test ./workflows -run Replay). Re-record only when a
// change is meant to be incompatible and is guarded by workflow.GetVersion;
// otherwise the old histories are what proves that executions in flight
// survive the deploy.
func (b *bench) record(ctx context.Context, dir, actionID string, targets []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var notify struct {
		ID string `json:"id"`
	}
	if err := b.post("/api/v1/ontology/actions", map[string]any{"name": "set-priority-notify", "object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "priority", "type": "integer", "required": true}},
		"config": map[string]any{
			"operation":                 map[string]any{"property_mappings": []map[string]any{{"property": "priority", "input": "priority"}}},
			"notification_side_effects": []map[string]any{{"title": "priority of {{ object.title }} is {{ parameters.priority }}", "send_to_actor": true}},
		}}, 201, &notify); err != nil {
		return err
	}
	type view struct {
		ID         string `json:"id"`
		WorkflowID string `json:"workflow_id"`
		Status     string `json:"status"`
	}
	execs := []struct {
		file, action string
		body         map[string]any
		want         int
	}{
		{"action-succeeded.json", actionID, map[string]any{"target_object_id": targets[0], "parameters": map[string]any{"priority": 1}}, 200},
		{"action-notified.json", notify.ID, map[string]any{"target_object_id": targets[0], "parameters": map[string]any{"priority": 2}}, 200},
		{"action-refused.json", actionID, map[string]any{"target_object_id": targets[0], "parameters": map[string]any{"priority": "high"}}, 400},
	}
	for _, e := range execs {
		var v view
		if err := b.post("/api/v1/ontology/actions/"+e.action+"/execute?async=true", e.body, 202, &v); err != nil {
			return err
		}
		if err := b.saveHistory(ctx, filepath.Join(dir, e.file), v.WorkflowID); err != nil {
			return err
		}
	}
	items := []map[string]any{
		{"target_object_id": targets[1], "parameters": map[string]any{"priority": 3}},
		{"target_object_id": targets[2], "parameters": map[string]any{"priority": "x"}},
		{"target_object_id": targets[3], "parameters": map[string]any{"priority": 4}},
	}
	var batch view
	if err := b.post("/api/v1/ontology/actions/"+actionID+"/execute-batch?async=true", map[string]any{"items": items}, 202, &batch); err != nil {
		return err
	}
	if err := b.saveHistory(ctx, filepath.Join(dir, "batch.json"), batch.WorkflowID); err != nil {
		return err
	}
	if err := b.saveHistory(ctx, filepath.Join(dir, "batch-chunk.json"), batch.WorkflowID+"/chunk-0"); err != nil {
		return err
	}
	return b.recordEffects(ctx, dir, targets)
}

// recordEffects records the shapes that leave the process: an
// invoke_webhook whose effect step (a regular activity) is retried once,
// an invoke_function whose effect runs locally, a notification delivered
// to Slack by its own regular activity, a what-if of that action (its
// notifications previewed, no delivery step) and a revert. Receivers listen on
// loopback (the dev process allows 127.0.0.1).
func (b *bench) recordEffects(ctx context.Context, dir string, targets []string) error {
	var calls atomic.Int32
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the webhook's first attempt
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rx.Close()
	if err := b.post("/api/v1/secrets", map[string]any{"name": "RECORD_SLACK", "value": rx.URL + "/slack", "channel": "slack"}, 201, nil); err != nil {
		return err
	}
	type idView struct {
		ID string `json:"id"`
	}
	var hook, fn, slack idView
	defs := []struct {
		into *idView
		def  map[string]any
	}{
		{&hook, map[string]any{"name": "record-webhook", "operation_kind": "invoke_webhook",
			"config": map[string]any{"operation": map[string]any{"url": rx.URL + "/hook", "max_attempts": 3}}}},
		{&fn, map[string]any{"name": "record-function", "object_type_id": "Ticket", "operation_kind": "invoke_function",
			"inputs": []map[string]any{{"name": "priority", "type": "integer", "required": true}},
			"config": map[string]any{"operation": map[string]any{"inline": map[string]any{"runtime": "javascript", "source": fnSource}}}}},
		{&slack, map[string]any{"name": "record-slack", "object_type_id": "Ticket", "operation_kind": "update_object",
			"inputs": []map[string]any{{"name": "priority", "type": "integer", "required": true}},
			"config": map[string]any{
				"operation": map[string]any{"property_mappings": []map[string]any{{"property": "priority", "input": "priority"}}},
				"notification_side_effects": []map[string]any{{"title": "priority {{ parameters.priority }}", "channels": []string{"in_app", "slack"},
					"send_to_actor": true, "slack_webhook": "{{ secrets.RECORD_SLACK }}"}},
				"revert_notification_side_effects": []map[string]any{{"title": "priority reverted", "channels": []string{"in_app"}, "send_to_actor": true}}}}},
	}
	for _, d := range defs {
		if err := b.post("/api/v1/ontology/actions", d.def, 201, d.into); err != nil {
			return err
		}
	}
	type view struct {
		ID         string `json:"id"`
		WorkflowID string `json:"workflow_id"`
	}
	runs := []struct {
		file, action string
		body         map[string]any
	}{
		{"v1-action-webhook.json", hook.ID, map[string]any{}},
		{"v1-action-function.json", fn.ID, map[string]any{"target_object_id": targets[0], "parameters": map[string]any{"priority": 7}}},
		{"v1-action-slack.json", slack.ID, map[string]any{"target_object_id": targets[1], "parameters": map[string]any{"priority": 8}}},
	}
	var last view
	for _, r := range runs {
		if err := b.post("/api/v1/ontology/actions/"+r.action+"/execute", r.body, 200, &last); err != nil {
			return fmt.Errorf("%s: %w", r.file, err)
		}
		if err := b.saveHistory(ctx, filepath.Join(dir, r.file), last.WorkflowID); err != nil {
			return err
		}
	}
	var wi struct {
		Execution view `json:"execution"`
	}
	if err := b.post("/api/v1/ontology/actions/"+slack.ID+"/what-if", map[string]any{"target_object_id": targets[2],
		"parameters": map[string]any{"priority": 9}}, 201, &wi); err != nil {
		return fmt.Errorf("what-if: %w", err)
	}
	if err := b.saveHistory(ctx, filepath.Join(dir, "v1-what-if.json"), wi.Execution.WorkflowID); err != nil {
		return err
	}
	var rv view
	if err := b.post("/api/v1/ontology/executions/"+last.ID+"/revert", map[string]any{"justification": "recorded"}, 200, &rv); err != nil {
		return fmt.Errorf("revert: %w", err)
	}
	return b.saveHistory(ctx, filepath.Join(dir, "v1-revert.json"), rv.WorkflowID)
}

// saveHistory waits for a workflow to close and writes its history, and
// its id into workflow-ids.json beside the histories: a workflow's id is
// not in its history, and the batch derives its children's ids from it.
func (b *bench) saveHistory(ctx context.Context, path, workflowID string) error {
	if _, err := os.Stat(path); err == nil {
		// The histories in workflows/testdata stand for executions in
		// flight: record into a new directory and copy the new ones over.
		return fmt.Errorf("%s exists; record into a new directory", path)
	}
	ids := map[string]string{}
	idsPath := filepath.Join(filepath.Dir(path), "workflow-ids.json")
	if data, err := os.ReadFile(idsPath); err == nil {
		_ = json.Unmarshal(data, &ids)
	}
	ids[filepath.Base(path)] = workflowID
	data, _ := json.MarshalIndent(ids, "", "  ")
	if err := os.WriteFile(idsPath, append(data, '\n'), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		d, err := b.c.DescribeWorkflowExecution(ctx, workflowID, "")
		if err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workflow %s did not close: %w", workflowID, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	var events []*historypb.HistoryEvent
	iter := b.c.GetWorkflowHistory(ctx, workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return fmt.Errorf("read history of %s: %w", workflowID, err)
		}
		events = append(events, ev)
	}
	js, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	if err != nil {
		return err
	}
	return os.WriteFile(path, js, 0o644)
}
