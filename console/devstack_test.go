package console_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/internal/harness/devtest"
)

const adminPassword = "console-test-password-1"

// stack is an in-process dev (embedded Temporal, SQLite) on loopback and
// an API client that is its admin.
type stack struct {
	t    *testing.T
	base string
	app  *app.App
}

func startStack(t *testing.T) *stack {
	t.Helper()
	a := devtest.Start(t, adminPassword, []string{"--temporal-ui-url", "http://127.0.0.1:1/temporal"}, nil)
	return &stack{t: t, base: a.APIURL, app: a}
}

func (s *stack) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	return s.doAs("admin", adminPassword, method, path, body)
}

// doAs calls the API as user.
func (s *stack) doAs(user, pw, method, path string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.SetBasicAuth(user, pw)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (s *stack) must(want int, method, path string, body, into any) {
	s.t.Helper()
	st, out := s.do(method, path, body)
	if st != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, st, out, want)
	}
	if into != nil {
		if err := json.Unmarshal(out, into); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, out, err)
		}
	}
}

func (s *stack) create(path string, body any) string {
	s.t.Helper()
	var v struct {
		ID string `json:"id"`
	}
	s.must(http.StatusCreated, "POST", path, body, &v)
	return v.ID
}

// object reads an object's properties.
func (s *stack) object(id string) map[string]any {
	s.t.Helper()
	var o struct {
		Properties map[string]any `json:"properties"`
	}
	s.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket/objects/"+id, nil, &o)
	return o.Properties
}

type world struct {
	plain, vip, secret string // Ticket ids
	triage, archive    string // action ids
	setStatus          string
	markDuplicate      string
}

// seed defines the Ticket type, three tickets (one whose notes hold a
// script tag, one VIP, one confidential) and the actions the tests run.
func (s *stack) seed() world {
	s.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true},
			{"name": "status", "type": "string"}, {"name": "priority", "type": "string"},
			{"name": "notes", "type": "string"}, {"name": "internal", "type": "string"}, {"name": "vip", "type": "boolean"},
			{"name": "summary", "type": "string"}}}, nil)
	var w world
	w.plain = s.create("/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{
		"title": "plain-1", "status": "open", "summary": `<script>alert("pwned")</script><b>bold</b>`}})
	w.vip = s.create("/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{
		"title": "vip-1", "status": "open", "vip": true}})
	w.secret = s.create("/api/v1/ontology/types/Ticket/objects", map[string]any{"marking": "confidential",
		"properties": map[string]any{"title": "secret-1", "status": "open"}})
	when := func(path, value string) []map[string]any {
		return []map[string]any{{"path": path, "operator": "is", "value": value}}
	}
	vip := []map[string]any{{"path": "target.properties.vip", "operator": "is", "value": true}}
	w.triage = s.create("/api/v1/ontology/actions", map[string]any{
		"name": "triage", "display_name": "Triage ticket", "description": "Set status and priority.",
		"object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []map[string]any{
			{"name": "status", "type": "string", "required": true, "display_name": "Status"},
			{"name": "priority", "type": "string", "display_name": "Priority", "description": "low, normal or high"},
			{"name": "internal_note", "type": "string", "display_name": "Internal note"},
			{"name": "reason", "type": "string", "display_name": "Reason"},
		},
		"form_schema": map[string]any{
			"sections": []map[string]any{
				{"id": "main", "title": "Main", "columns": 2, "parameters": []string{"status", "priority"}},
				{"id": "details", "title": "Details", "description": "Context for the team.", "collapsible": true,
					"parameters": []string{"internal_note", "reason"},
					"overrides":  []map[string]any{{"conditions": when("parameters.status", "closed"), "title": "Closing details", "columns": 2}}},
			},
			"parameter_overrides": []map[string]any{
				{"parameter": "internal_note", "conditions": when("parameters.priority", "high"), "visible": false},
				{"parameter": "reason", "conditions": when("parameters.priority", "high"), "required": true, "label": "Reason for high priority"},
				{"parameter": "reason", "conditions": vip, "required": true, "label": "Reason (VIP ticket)"},
				{"parameter": "internal_note", "conditions": vip, "visible": false},
			},
		},
		"config": map[string]any{
			"operation": map[string]any{"property_mappings": []map[string]any{
				{"property": "status", "input": "status"}, {"property": "priority", "input": "priority"},
				{"property": "notes", "input": "reason"}, {"property": "internal", "input": "internal_note"}}},
			"notification_side_effects": []map[string]any{{"title": "{{ target.properties.title }} triaged",
				"body": "now {{ object.properties.status }}", "send_to_actor": true}},
		},
	})
	w.archive = s.create("/api/v1/ontology/actions", map[string]any{
		"name": "archive", "object_type_id": "Ticket", "operation_kind": "update_object",
		"config": map[string]any{"operation": map[string]any{"static_patch": map[string]any{"status": "archived"}}},
		"policy": map[string]any{"allowed_markings": []string{"public"}},
	})
	w.setStatus = s.create("/api/v1/ontology/actions", map[string]any{
		"name": "set-status", "object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "status", "type": "string", "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "status", "input": "status"}}}},
	})
	s.must(http.StatusOK, "PATCH", "/api/v1/ontology/types/Ticket/properties/status",
		map[string]any{"inline_edit_config": map[string]any{"action_type_id": w.setStatus}}, nil)
	w.markDuplicate = s.seedTypedAction()
	return w
}

// seedTypedAction adds properties of other types to Ticket and an action
// whose inputs use them: a reference picker, a date, a geo point, a list.
func (s *stack) seedTypedAction() string {
	var ot struct {
		ID string `json:"id"`
	}
	s.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket", nil, &ot)
	ref := map[string]any{"type": "reference", "object_type_id": ot.ID}
	tags := map[string]any{"type": "array", "element_type": map[string]any{"type": "string"}}
	for _, p := range []map[string]any{{"name": "duplicate_of", "type": ref}, {"name": "seen_on", "type": "date"},
		{"name": "location", "type": "geo_point"}, {"name": "tags", "type": tags}} {
		s.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/properties", p, nil)
	}
	return s.create("/api/v1/ontology/actions", map[string]any{
		"name": "mark-duplicate", "object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "dup", "type": ref, "required": true, "display_name": "Duplicate of"},
			{"name": "seen_on", "type": "date"}, {"name": "location", "type": "geo_point"}, {"name": "tags", "type": tags}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{
			{"property": "duplicate_of", "input": "dup"}, {"property": "seen_on", "input": "seen_on"},
			{"property": "location", "input": "location"}, {"property": "tags", "input": "tags"}}}},
	})
}
