package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// The action engine's acceptance tests, through real HTTP against real
// processes: `dev` (SQLite, embedded Temporal) and, when TEST_DATABASE_URL
// is set, `serve` + `worker` on Postgres against an external Temporal
// frontend.

func TestActionsOnDev(t *testing.T) {
	p := start(t, nil, devArgs(t.TempDir())...)
	actionSuite(t, client{t: t, base: p.APIURL, user: "admin", pass: p.AdminPassword, temporal: p.TemporalAddr})
	p.stop()
}

func TestActionsOnPostgres(t *testing.T) {
	if !hasPostgres() {
		t.Log("TEST_DATABASE_URL is not set: the SQLite run (TestActionsOnDev) covers the engine")
		return
	}
	dsn := testdb.DSN(t, "postgres")
	temporal := start(t, nil, devArgs(t.TempDir())...)
	if out, err := ontoflow(t, "root-password-1\n", nil, "users", "add", "root", "--database-url", dsn,
		"--password-stdin", "--roles", "admin", "--clearance", "pii"); err != nil {
		t.Fatalf("users add: %v\n%s", err, out)
	}
	env := []string{"DATABASE_URL=" + dsn, "TEMPORAL_ADDRESS=" + temporal.TemporalAddr,
		"ONTOFLOW_TASK_QUEUE=e2e-actions-pg", "ONTOFLOW_DATA_DIR=" + t.TempDir()}
	serve := start(t, env, "serve", "--http-addr", "127.0.0.1:0", "--log-level", "warn")
	worker := start(t, env, "worker", "--log-level", "warn", "--metrics-addr", "127.0.0.1:0")
	root := client{t: t, base: serve.APIURL, user: "root", pass: "root-password-1", temporal: temporal.TemporalAddr}
	actionSuite(t, root)
	workerMetrics(t, worker)

	// Restart survival with the worker killed mid-batch: a new worker
	// finishes it and every item's object is created exactly once.
	id := setupTickets(t, root, "pg-ticket")
	accepted := submitTickets(t, root, id, 200)
	waitFor(t, 2*time.Minute, func() bool { return countTickets(t, root, "pg-ticket") >= 20 })
	worker.kill()
	worker2 := start(t, env, "worker", "--log-level", "warn", "--metrics-addr", "127.0.0.1:0")
	waitBatch(t, root, accepted)
	if n := countTickets(t, root, "pg-ticket"); n != 200 {
		t.Fatalf("%d objects after the worker was killed mid-batch, want exactly 200", n)
	}
	worker2.stop()
	serve.stop()
	temporal.stop()
}

func hasPostgres() bool { return len(testdb.Dialects()) > 1 }

// setupTickets creates an object type of its own name and a create_object
// action on it, and returns the action's id.
func setupTickets(t *testing.T, c client, typeName string) string {
	t.Helper()
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{
		"name": typeName, "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true, "unique": true}},
	})
	var a struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{
		"name": "open-" + typeName, "object_type_id": typeName, "operation_kind": "create_object",
		"inputs": []map[string]any{{"name": "title", "type": "string", "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "title", "input": "title"}}}},
	}).json(t, &a)
	return a.ID
}

func submitTickets(t *testing.T, c client, actionID string, n int) string {
	t.Helper()
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"parameters": map[string]any{"title": fmt.Sprintf("t-%03d", i)}}
	}
	var acc struct {
		ID string `json:"id"`
	}
	c.must(http.StatusAccepted, "POST", "/api/v1/ontology/actions/"+actionID+"/execute-batch?async=true",
		map[string]any{"items": items}).json(t, &acc)
	return acc.ID
}

func waitBatch(t *testing.T, c client, id string) map[string]any {
	t.Helper()
	var ex map[string]any
	waitFor(t, 5*time.Minute, func() bool {
		ex = nil
		c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+id, nil).json(t, &ex)
		return ex["finished_at"] != nil
	})
	return ex
}

func countTickets(t *testing.T, c client, typeName string) int {
	t.Helper()
	var page struct {
		Data []any `json:"data"`
	}
	c.must(http.StatusOK, "GET", "/api/v1/ontology/types/"+typeName+"/objects?page_size=500", nil).json(t, &page)
	return len(page.Data)
}

// actionSuite exercises every operation kind, every refusal, form
// overrides, notifications, idempotency, inline edit and a mixed batch.
func actionSuite(t *testing.T, admin client) {
	mkUser := func(name string, spec map[string]any) client {
		spec["username"], spec["password"] = name, name+"-password"
		admin.must(http.StatusCreated, "POST", "/api/v1/users", spec)
		return client{t: t, base: admin.base, user: name, pass: name + "-password"}
	}
	runner := map[string]any{"permissions": []string{"actions:run", "ontology:write"}, "roles": []string{"ops"},
		"attributes": map[string]any{"region": "eu"}, "clearance": "confidential", "organization": "acme"}
	with := func(over map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range runner {
			m[k] = v
		}
		for k, v := range over {
			m[k] = v
		}
		return m
	}
	alice := mkUser("alice", with(nil))
	bob := mkUser("bob", map[string]any{"organization": "acme"})
	carol := mkUser("carol", with(map[string]any{"roles": []string{"viewer"}}))
	dave := mkUser("dave", with(map[string]any{"attributes": map[string]any{"region": "us"}}))
	erin := mkUser("erin", with(map[string]any{"clearance": "public"}))
	frank := mkUser("frank", with(map[string]any{"organization": "globex"}))
	var me struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	alice.must(http.StatusOK, "GET", "/api/v1/me", nil).json(t, &me)
	aliceID := me.User.ID
	var tok struct {
		Token string `json:"token"`
	}
	alice.must(http.StatusCreated, "POST", "/api/v1/auth/tokens", map[string]any{"guest": true}).json(t, &tok)
	guest := client{t: t, base: admin.base, bearer: tok.Token}

	// Ontology.
	admin.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Customer", "primary_key": "name",
		"properties": []map[string]any{{"name": "name", "type": "string", "required": true}}})
	admin.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Order", "primary_key": "title",
		"properties": []map[string]any{
			{"name": "title", "type": "string", "required": true},
			{"name": "status", "type": "string"},
			{"name": "priority", "type": "integer"},
			{"name": "owner", "type": "string"},
		}})
	var lt struct {
		ID string `json:"id"`
	}
	admin.must(http.StatusCreated, "POST", "/api/v1/ontology/link-types", map[string]any{"name": "order_customer",
		"source_object_type_id": "Order", "target_object_type_id": "Customer", "cardinality": "many_to_one"}).json(t, &lt)
	type idOnly struct {
		ID string `json:"id"`
	}
	newObject := func(c client, typ string, props map[string]any, marking string) string {
		var o idOnly
		body := map[string]any{"properties": props}
		if marking != "" {
			body["marking"] = marking
		}
		c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/"+typ+"/objects", body).json(t, &o)
		return o.ID
	}
	order1 := newObject(alice, "Order", map[string]any{"title": "o1", "status": "new", "owner": aliceID}, "")
	order2 := newObject(alice, "Order", map[string]any{"title": "o2", "status": "new"}, "")
	secret := newObject(alice, "Order", map[string]any{"title": "o3"}, "confidential")
	cust := newObject(alice, "Customer", map[string]any{"name": "ACME"}, "")

	policy := map[string]any{"permission_key": "actions:run", "any_role": []string{"ops"},
		"attribute_equals": map[string]any{"region": "eu"}, "minimum_clearance": "confidential",
		"allowed_markings": []string{"public"}, "deny_guest_sessions": true}
	newAction := func(def map[string]any) string {
		var a idOnly
		admin.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", def).json(t, &a)
		return a.ID
	}
	setStatus := newAction(map[string]any{
		"name": "set-status", "object_type_id": "Order", "operation_kind": "update_object",
		"inputs": []map[string]any{
			{"name": "status", "type": "string", "required": true},
			{"name": "priority", "type": "integer"},
			{"name": "reason", "type": "string", "default_value": "routine"},
		},
		"form_schema": map[string]any{"parameter_overrides": []map[string]any{
			{"parameter": "priority", "conditions": []map[string]any{{"path": "parameters.status", "operator": "is", "value": "urgent"}},
				"required": true},
			{"parameter": "priority", "conditions": []map[string]any{{"path": "parameters.status", "operator": "is", "value": "later"}},
				"default_value": 9},
		}},
		"config": map[string]any{
			"operation": map[string]any{"property_mappings": []map[string]any{
				{"property": "status", "input": "status"}, {"property": "priority", "input": "priority"}}},
			"notification_side_effects": []map[string]any{{
				"title":         "{{ target.properties.title }} is now {{ object.properties.status }}",
				"body":          "{{ actor.username }} changed it from {{ target.properties.status }}: {{ justification }}",
				"send_to_actor": true, "target_user_property_name": "owner",
			}},
		},
		"policy": policy,
	})
	admin.must(http.StatusOK, "PATCH", "/api/v1/ontology/types/Order/properties/status",
		map[string]any{"inline_edit_config": map[string]any{"action_type_id": setStatus}})
	openOrder := newAction(map[string]any{"name": "open-order", "object_type_id": "Order", "operation_kind": "create_object",
		"inputs": []map[string]any{{"name": "title", "type": "string", "required": true}},
		"config": map[string]any{"operation": map[string]any{
			"property_mappings": []map[string]any{{"property": "title", "input": "title"}},
			"static_patch":      map[string]any{"status": "new"}}}})
	cancel := newAction(map[string]any{"name": "cancel-order", "object_type_id": "Order", "operation_kind": "delete_object",
		"policy": map[string]any{"confirmation_required": true}})
	assign := newAction(map[string]any{"name": "assign-customer", "object_type_id": "Order", "operation_kind": "create_link",
		"inputs": []map[string]any{{"name": "customer", "type": map[string]any{"type": "reference"}, "required": true}},
		"config": map[string]any{"operation": map[string]any{"link_type_id": lt.ID, "other_object_input": "customer", "target_side": "source"}}})
	pingBad := newAction(map[string]any{"name": "touch-and-notify", "object_type_id": "Order", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "who", "type": "string", "required": true}},
		"config": map[string]any{
			"operation":                 map[string]any{"static_patch": map[string]any{"status": "touched"}},
			"notification_side_effects": []map[string]any{{"title": "touched", "user_id_input_name": "who"}},
		}})
	webhook := newAction(map[string]any{"name": "call-hook", "operation_kind": "invoke_webhook",
		"config": map[string]any{"operation": map[string]any{"method": "POST", "url": "http://127.0.0.1:9/x"}}})

	execute := func(c client, action, target string, params map[string]any, hdr ...string) response {
		body := map[string]any{"parameters": params}
		if target != "" {
			body["target_object_id"] = target
		}
		return c.do("POST", "/api/v1/ontology/actions/"+action+"/execute", body, hdr...)
	}
	object := func(typ, id string) map[string]any {
		var o struct {
			Properties map[string]any `json:"properties"`
		}
		admin.must(http.StatusOK, "GET", "/api/v1/ontology/types/"+typ+"/objects/"+id, nil).json(t, &o)
		return o.Properties
	}
	expectRefusal := func(name string, r response, status int, code, reason string) {
		t.Helper()
		if r.Status != status || r.errorCode() != code || (reason != "" && !strings.Contains(string(r.Body), `"reason":"`+reason+`"`)) {
			t.Errorf("%s: got %d %s, want %d %s (%s)", name, r.Status, r.Body, status, code, reason)
		}
	}

	t.Run("update_object with defaults and a notification after success", func(t *testing.T) {
		r := execute(alice, setStatus, order1, map[string]any{"status": "open"}, "Content-Type", "application/json")
		if r.Status != http.StatusOK {
			t.Fatalf("execute: %d %s", r.Status, r.Body)
		}
		var ex struct {
			Status        string           `json:"status"`
			WorkflowID    string           `json:"workflow_id"`
			RunID         string           `json:"run_id"`
			Edits         []map[string]any `json:"edits"`
			Version       int              `json:"action_type_version"`
			Notifications []map[string]any `json:"notifications"`
			Parameters    map[string]any   `json:"parameters"`
		}
		r.json(t, &ex)
		if ex.Status != "succeeded" || !strings.HasPrefix(ex.WorkflowID, "action/set-status/") || ex.RunID == "" || len(ex.Edits) != 1 || ex.Version != 1 {
			t.Errorf("execution = %+v", ex)
		}
		if ex.Parameters["reason"] != "routine" {
			t.Errorf("recorded parameters %v lack the input's default reason", ex.Parameters)
		}
		if p := object("Order", order1); p["status"] != "open" || p["priority"] != nil {
			t.Errorf("order after set-status = %v", p)
		}
		var notes struct {
			Data []struct {
				Title string `json:"title"`
				Body  string `json:"body"`
			} `json:"data"`
		}
		alice.must(http.StatusOK, "GET", "/api/v1/notifications", nil).json(t, &notes)
		if len(notes.Data) != 1 || notes.Data[0].Title != "o1 is now open" || !strings.HasPrefix(notes.Data[0].Body, "alice changed it from new") {
			t.Errorf("notifications = %+v (actor and owner are one user: one notification)", notes.Data)
		}
	})

	t.Run("integers beyond 2^53 arrive exactly", func(t *testing.T) {
		// JSON numbers decode as float64 by default, which would round
		// this one on its way through the steps and the action log.
		const big = "9007199254740993"
		r := alice.do("POST", "/api/v1/ontology/actions/"+setStatus+"/execute",
			`{"target_object_id":"`+order2+`","parameters":{"status":"urgent","priority":`+big+`}}`)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"priority":`+big) {
			t.Fatalf("execute: %d %s", r.Status, r.Body)
		}
		o := admin.must(http.StatusOK, "GET", "/api/v1/ontology/types/Order/objects/"+order2, nil)
		if !strings.Contains(string(o.Body), `"priority":`+big) {
			t.Errorf("object after the execution: %s", o.Body)
		}
	})

	t.Run("form overrides change requiredness and defaults", func(t *testing.T) {
		r := execute(alice, setStatus, order2, map[string]any{"status": "urgent"})
		expectRefusal("urgent without priority", r, 400, "ActionValidationFailed", "required")
		if !strings.Contains(string(r.Body), "parameters.priority") {
			t.Errorf("the refusal does not name parameters.priority: %s", r.Body)
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/set-status/execute",
			map[string]any{"target_object_id": order2, "parameters": map[string]any{"status": "later"}})
		if p := object("Order", order2); fmt.Sprint(p["priority"]) != "9" {
			t.Errorf("priority with the 'later' override = %v, want 9", p["priority"])
		}
		var v struct {
			Result     string `json:"result"`
			Parameters []struct {
				Name     string `json:"name"`
				Result   string `json:"result"`
				Required bool   `json:"required"`
			} `json:"parameters"`
			Preview []map[string]any `json:"preview"`
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+setStatus+"/validate",
			map[string]any{"target_object_id": order2, "parameters": map[string]any{"status": "urgent"}}).json(t, &v)
		if v.Result != "INVALID" || len(v.Parameters) != 3 || !v.Parameters[1].Required || v.Parameters[1].Result != "INVALID" {
			t.Errorf("validate urgent = %+v", v)
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+setStatus+"/validate",
			map[string]any{"target_object_id": order2, "parameters": map[string]any{"status": "urgent", "priority": 3}}).json(t, &v)
		if v.Result != "VALID" || len(v.Preview) != 1 {
			t.Errorf("validate urgent with priority = %+v", v)
		}
		if p := object("Order", order2); fmt.Sprint(p["priority"]) != "9" {
			t.Errorf("validate changed the object: %v", p)
		}
	})

	t.Run("an unreadable target is answered as a missing one, before its data is used", func(t *testing.T) {
		// A form condition over the target's properties must not work as
		// an oracle: for frank (another organization) an order whose
		// priority makes "note" required, one whose priority does not,
		// and an id that names nothing get the same answer on every path.
		gate := newAction(map[string]any{"name": "priority-gate", "object_type_id": "Order", "operation_kind": "update_object",
			"inputs": []map[string]any{{"name": "note", "type": "string"}},
			"form_schema": map[string]any{"parameter_overrides": []map[string]any{{"parameter": "note",
				"conditions": []map[string]any{{"path": "target.properties.priority", "operator": "greater_than", "value": 5}}, "required": true}}},
			"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "owner", "input": "note"}}}},
			"policy": map[string]any{"permission_key": "actions:run"}})
		high := newObject(alice, "Order", map[string]any{"title": "gate-high", "priority": 9}, "")
		low := newObject(alice, "Order", map[string]any{"title": "gate-low", "priority": 1}, "")
		const missing = "00000000-0000-4000-8000-0000000000aa"
		if r := execute(alice, gate, high, nil); r.Status != http.StatusBadRequest {
			t.Fatalf("the condition does not hold for a reader: %d %s", r.Status, r.Body)
		}
		answers := map[string]string{}
		for _, target := range []string{high, low, missing} {
			for _, path := range []string{"execute", "validate"} {
				r := frank.do("POST", "/api/v1/ontology/actions/"+gate+"/"+path, map[string]any{"target_object_id": target, "parameters": map[string]any{}})
				expectRefusal(path+" as another organization", r, 404, "ObjectNotFound", "")
				var e struct {
					Error struct {
						Code    string `json:"code"`
						Message string `json:"message"`
						Details any    `json:"details"`
					} `json:"error"`
				}
				r.json(t, &e)
				answers[path] += strings.ReplaceAll(fmt.Sprint(e.Error), target, "ID") + "|"
			}
			var b struct {
				Items []struct {
					ErrorCode    string `json:"error_code"`
					ErrorMessage string `json:"error_message"`
				} `json:"items"`
			}
			frank.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+gate+"/execute-batch",
				map[string]any{"items": []map[string]any{{"target_object_id": target}}}).json(t, &b)
			if len(b.Items) != 1 || b.Items[0].ErrorCode != "ObjectNotFound" {
				t.Errorf("batch item as another organization: %+v", b.Items)
			} else {
				answers["batch"] += strings.ReplaceAll(b.Items[0].ErrorMessage, target, "ID") + "|"
			}
		}
		for path, a := range answers {
			parts := strings.Split(strings.TrimSuffix(a, "|"), "|")
			if len(parts) != 3 || parts[0] != parts[1] || parts[1] != parts[2] {
				t.Errorf("%s answers differ between a hidden high, a hidden low and a missing target:\n%s", path, strings.Join(parts, "\n"))
			}
		}
	})

	t.Run("a parameter larger than a Temporal payload leaves no workflow running", func(t *testing.T) {
		// 2.5 MB is under the API's body limit but over Temporal's 2 MB
		// payload limit: a step that carried it would fail to record and
		// retry forever while the API answered from the database.
		big := strings.Repeat("x", 5<<19)
		r := execute(alice, setStatus, order1, map[string]any{"status": big})
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"status":"succeeded"`) {
			t.Fatalf("execute with a 2.5 MB value: %d %.300s", r.Status, r.Body)
		}
		var ok struct {
			WorkflowID string `json:"workflow_id"`
		}
		r.json(t, &ok)
		r = execute(alice, setStatus, order1, map[string]any{"status": "x", "priority": big})
		expectRefusal("a 2.5 MB value of the wrong type", r, 400, "ActionValidationFailed", "type")
		var bad struct {
			Error struct {
				Data struct {
					WorkflowID string `json:"workflow_id"`
				} `json:"data"`
			} `json:"error"`
		}
		r.json(t, &bad)
		if admin.temporal == "" {
			t.Fatal("the test needs the Temporal frontend's address")
		}
		tc, err := tclient.Dial(tclient.Options{HostPort: admin.temporal, Logger: tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		for id, want := range map[string]enumspb.WorkflowExecutionStatus{
			ok.WorkflowID:             enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
			bad.Error.Data.WorkflowID: enumspb.WORKFLOW_EXECUTION_STATUS_FAILED,
		} {
			var got enumspb.WorkflowExecutionStatus
			waitFor(t, 30*time.Second, func() bool {
				d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
				if err != nil {
					t.Fatalf("describe %q: %v", id, err)
				}
				got = d.WorkflowExecutionInfo.Status
				return got != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			})
			if got != want {
				t.Errorf("workflow %s is %v, want %v", id, got, want)
			}
		}
	})

	t.Run("a notification shows a recipient only what they may read", func(t *testing.T) {
		var fm struct {
			User struct {
				ID string `json:"id"`
			} `json:"user"`
		}
		frank.must(http.StatusOK, "GET", "/api/v1/me", nil).json(t, &fm)
		// frank (another organization) owns the order as a property, so
		// set-status notifies him; he may not read the order.
		owned := newObject(alice, "Order", map[string]any{"title": "hidden-title", "status": "new", "owner": fm.User.ID}, "")
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+setStatus+"/execute",
			map[string]any{"target_object_id": owned, "parameters": map[string]any{"status": "shipped"}})
		var notes struct {
			Data []struct {
				Title string `json:"title"`
				Body  string `json:"body"`
			} `json:"data"`
		}
		frank.must(http.StatusOK, "GET", "/api/v1/notifications", nil).json(t, &notes)
		if len(notes.Data) != 1 {
			t.Fatalf("frank's notifications: %+v", notes.Data)
		}
		if n := notes.Data[0]; strings.Contains(n.Title+n.Body, "hidden-title") || strings.Contains(n.Title+n.Body, "shipped") ||
			!strings.Contains(n.Body, "alice changed it") {
			t.Errorf("frank's notification shows what he may not read, or lost the rest: %+v", n)
		}
		alice.must(http.StatusOK, "GET", "/api/v1/notifications?page_size=1", nil).json(t, &notes)
		if len(notes.Data) != 1 || notes.Data[0].Title != "hidden-title is now shipped" {
			t.Errorf("alice's notification: %+v", notes.Data)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		before, _ := countNotes(t, alice)
		expectRefusal("wrong type", execute(alice, setStatus, order1, map[string]any{"status": 7}), 400, "ActionValidationFailed", "type")
		expectRefusal("unknown parameter", execute(alice, setStatus, order1, map[string]any{"status": "x", "colour": "red"}), 400, "ActionValidationFailed", "unknown")
		expectRefusal("explicit null", execute(alice, setStatus, order1, map[string]any{"status": nil}), 400, "ActionValidationFailed", "required")
		expectRefusal("no permission", execute(bob, setStatus, order1, map[string]any{"status": "x"}), 403, "PermissionDenied", "missing_permission")
		expectRefusal("no role", execute(carol, setStatus, order1, map[string]any{"status": "x"}), 403, "PermissionDenied", "missing_role")
		expectRefusal("wrong attribute", execute(dave, setStatus, order1, map[string]any{"status": "x"}), 403, "PermissionDenied", "attribute_mismatch")
		expectRefusal("low clearance", execute(erin, setStatus, order1, map[string]any{"status": "x"}), 403, "PermissionDenied", "insufficient_clearance")
		expectRefusal("other organization", execute(frank, setStatus, order1, map[string]any{"status": "x"}), 404, "ObjectNotFound", "")
		expectRefusal("marking not allowed", execute(alice, setStatus, secret, map[string]any{"status": "x"}), 403, "PermissionDenied", "marking_not_allowed")
		expectRefusal("guest session", execute(guest, setStatus, order1, map[string]any{"status": "x"}), 403, "PermissionDenied", "guest_session")
		expectRefusal("validate as bob", bob.do("POST", "/api/v1/ontology/actions/"+setStatus+"/validate", map[string]any{"target_object_id": order1, "parameters": map[string]any{}}), 403, "PermissionDenied", "missing_permission")
		expectRefusal("missing target", execute(alice, setStatus, "", map[string]any{"status": "x"}), 400, "InvalidArgument", "required")
		expectRefusal("unknown target", execute(alice, setStatus, "00000000-0000-4000-8000-000000000000", map[string]any{"status": "x"}), 404, "ObjectNotFound", "")
		expectRefusal("unknown action", execute(alice, "no-such-action", order1, nil), 404, "ActionTypeNotFound", "")
		expectRefusal("malformed body", alice.do("POST", "/api/v1/ontology/actions/"+setStatus+"/execute", `{"parameters":`), 400, "InvalidJSON", "")
		expectRefusal("no justification", execute(alice, cancel, order2, nil), 400, "JustificationRequired", "required")
		// Hostile input is refused before it reaches the database (where
		// Postgres used to turn it into a 500) and records nothing.
		exURL := "/api/v1/ontology/actions/" + setStatus + "/execute"
		expectRefusal("target that is no object id", execute(alice, setStatus, strings.Repeat("x", 40), map[string]any{"status": "x"}), 404, "ObjectNotFound", "")
		expectRefusal("NUL in the justification", alice.do("POST", exURL, `{"target_object_id":"`+order1+`","parameters":{"status":"x"},"justification":"a\u0000b"}`), 400, "InvalidJSON", "")
		expectRefusal("Idempotency-Key not text", execute(alice, setStatus, order1, map[string]any{"status": "x"}, "Idempotency-Key", "k\xff"), 400, "InvalidArgument", "")
		expectRefusal("Idempotency-Key too long", execute(alice, setStatus, order1, map[string]any{"status": "x"}, "Idempotency-Key", strings.Repeat("k", 256)), 400, "InvalidArgument", "")
		expectRefusal("batch item that is no object id", alice.do("POST", "/api/v1/ontology/actions/"+setStatus+"/execute-batch",
			map[string]any{"items": []map[string]any{{"target_object_id": order1}, {"target_object_id": "nope"}}, "parameters": map[string]any{"status": "x"}}), 400, "InvalidArgument", "invalid")
		for _, q := range []string{"status=bogus", "kind=bogus", "since=yesterday", "target=%FF", "actor=a%00b"} {
			expectRefusal("executions?"+q, alice.do("GET", "/api/v1/ontology/executions?"+q, nil), 400, "InvalidArgument", "")
		}
		expectRefusal("execution id not text", alice.do("GET", "/api/v1/ontology/executions/%FF", nil), 400, "InvalidArgument", "")
		// Loopback is refused by the outbound guard without --outbound-allow:
		// nothing is sent.
		expectRefusal("webhook to a refused address", execute(alice, webhook, "", nil), 502, "WebhookFailed", "")
		// A link's other end in another organization is as absent to the
		// actor as it is on the REST routes, and nothing is linked.
		foreign := newObject(frank, "Customer", map[string]any{"name": "Initech"}, "")
		expectRefusal("link to an unreadable object", execute(alice, assign, order2, map[string]any{"customer": foreign}), 404, "ObjectNotFound", "")
		var links struct {
			Data []map[string]any `json:"data"`
		}
		admin.must(http.StatusOK, "GET", "/api/v1/ontology/types/Order/objects/"+order2+"/links", nil).json(t, &links)
		if len(links.Data) != 0 {
			t.Errorf("links of order2 after the refused link: %v", links.Data)
		}
		if after, _ := countNotes(t, alice); after != before {
			t.Errorf("refused executions sent notifications: %d -> %d", before, after)
		}
		var log struct {
			Data []struct {
				Status    string `json:"status"`
				ErrorCode string `json:"error_code"`
			} `json:"data"`
		}
		alice.must(http.StatusOK, "GET", "/api/v1/ontology/executions?status=failed&page_size=100", nil).json(t, &log)
		if len(log.Data) < 5 {
			t.Errorf("the action log holds %d failed executions of alice, want the refusals recorded", len(log.Data))
		}
	})

	t.Run("create_object, create_link, delete_object", func(t *testing.T) {
		var ex struct {
			Result map[string]any `json:"operation_result"`
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+openOrder+"/execute",
			map[string]any{"parameters": map[string]any{"title": "o9"}}).json(t, &ex)
		id, _ := ex.Result["object_id"].(string)
		if p := object("Order", id); p["title"] != "o9" || p["status"] != "new" {
			t.Errorf("created order = %v", p)
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+assign+"/execute",
			map[string]any{"target_object_id": id, "parameters": map[string]any{"customer": cust}})
		var links struct {
			Data []map[string]any `json:"data"`
		}
		admin.must(http.StatusOK, "GET", "/api/v1/ontology/types/Order/objects/"+id+"/links", nil).json(t, &links)
		if len(links.Data) != 1 {
			t.Errorf("links of the order = %v", links.Data)
		}
		// many_to_one: a second customer for the same order is refused.
		other := newObject(alice, "Customer", map[string]any{"name": "Globex"}, "")
		r := execute(alice, assign, id, map[string]any{"customer": other})
		if r.Status != http.StatusConflict {
			t.Errorf("second link of a many_to_one order: %d %s", r.Status, r.Body)
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+cancel+"/execute",
			map[string]any{"target_object_id": id, "justification": "duplicate order"})
		admin.must(http.StatusNotFound, "GET", "/api/v1/ontology/types/Order/objects/"+id, nil)
	})

	t.Run("a failing notification leaves the action succeeded", func(t *testing.T) {
		var ex struct {
			Status        string `json:"status"`
			Notifications []struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			} `json:"notifications"`
		}
		admin.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+pingBad+"/execute",
			map[string]any{"target_object_id": order2, "parameters": map[string]any{"who": "no-such-user"}}).json(t, &ex)
		if ex.Status != "succeeded" || len(ex.Notifications) != 1 || ex.Notifications[0].Status != "failed" {
			t.Errorf("execution = %+v", ex)
		}
		if p := object("Order", order2); p["status"] != "touched" {
			t.Errorf("the edit was undone: %v", p)
		}
	})

	t.Run("idempotency", func(t *testing.T) {
		body := map[string]any{"parameters": map[string]any{"title": "idem-1"}}
		var a, b struct {
			ID string `json:"id"`
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+openOrder+"/execute", body, "Idempotency-Key", "k-1").json(t, &a)
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+openOrder+"/execute", body, "Idempotency-Key", "k-1").json(t, &b)
			}()
		}
		wg.Wait()
		if a.ID == "" || a.ID != b.ID {
			t.Errorf("same key, same body: executions %q and %q", a.ID, b.ID)
		}
		var page struct {
			Data []any `json:"data"`
		}
		admin.must(http.StatusOK, "GET", "/api/v1/ontology/types/Order/objects?filter.title=idem-1", nil).json(t, &page)
		if len(page.Data) != 1 {
			t.Errorf("%d orders idem-1, want exactly 1", len(page.Data))
		}
		r := alice.do("POST", "/api/v1/ontology/actions/"+openOrder+"/execute", map[string]any{"parameters": map[string]any{"title": "idem-2"}}, "Idempotency-Key", "k-1")
		expectRefusal("same key, other body", r, 409, "IdempotencyKeyConflict", "")

		// A repeat of an asynchronous request (its execution maybe still
		// unfinished) resumes or finds the same workflow and waits for it: one
		// order, one execution.
		body = map[string]any{"parameters": map[string]any{"title": "idem-3"}}
		var first, again struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		alice.must(http.StatusAccepted, "POST", "/api/v1/ontology/actions/"+openOrder+"/execute", body, "Idempotency-Key", "k-3", "Prefer", "respond-async").json(t, &first)
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+openOrder+"/execute", body, "Idempotency-Key", "k-3").json(t, &again)
		if again.ID != first.ID || again.Status != "succeeded" {
			t.Errorf("repeat of k-3: %+v, first %+v", again, first)
		}
		admin.must(http.StatusOK, "GET", "/api/v1/ontology/types/Order/objects?filter.title=idem-3", nil).json(t, &page)
		if len(page.Data) != 1 {
			t.Errorf("%d orders idem-3, want exactly 1", len(page.Data))
		}

		// execute-batch honours the key the same way: the same batch, its
		// items run once; another body with the key is 409.
		batch := map[string]any{"items": []map[string]any{{"parameters": map[string]any{"title": "idem-b1"}}, {"parameters": map[string]any{"title": "idem-b2"}}}}
		var b1, b2 struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+openOrder+"/execute-batch", batch, "Idempotency-Key", "kb-1").json(t, &b1)
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+openOrder+"/execute-batch", batch, "Idempotency-Key", "kb-1").json(t, &b2)
		if b1.ID == "" || b1.ID != b2.ID || b2.Status != "succeeded" {
			t.Errorf("same key, same batch: %+v then %+v", b1, b2)
		}
		admin.must(http.StatusOK, "GET", "/api/v1/ontology/types/Order/objects?filter.title=idem-b1", nil).json(t, &page)
		if len(page.Data) != 1 {
			t.Errorf("%d orders idem-b1, want exactly 1", len(page.Data))
		}
		r = alice.do("POST", "/api/v1/ontology/actions/"+openOrder+"/execute-batch", map[string]any{"items": []map[string]any{{"parameters": map[string]any{"title": "idem-b3"}}}}, "Idempotency-Key", "kb-1")
		expectRefusal("same batch key, other body", r, 409, "IdempotencyKeyConflict", "")
	})

	t.Run("async execute", func(t *testing.T) {
		r := alice.must(http.StatusAccepted, "POST", "/api/v1/ontology/actions/"+setStatus+"/execute",
			map[string]any{"target_object_id": order1, "parameters": map[string]any{"status": "async"}}, "Prefer", "respond-async")
		loc := r.Header.Get("Location")
		if !strings.HasPrefix(loc, "/api/v1/ontology/executions/") {
			t.Fatalf("Location = %q", loc)
		}
		waitFor(t, time.Minute, func() bool {
			var ex struct {
				Status string `json:"status"`
			}
			alice.must(http.StatusOK, "GET", loc, nil).json(t, &ex)
			return ex.Status == "succeeded"
		})
		bob.must(http.StatusNotFound, "GET", loc, nil)
		// The preference with parameters and beside others, and ?async=1.
		// Both are awaited: a run still in flight would otherwise land
		// after the next subtest's inline edit and overwrite it.
		for _, r := range []response{
			alice.must(http.StatusAccepted, "POST", "/api/v1/ontology/actions/"+setStatus+"/execute",
				map[string]any{"target_object_id": order1, "parameters": map[string]any{"status": "async"}}, "Prefer", "return=minimal, respond-async; x=1"),
			alice.must(http.StatusAccepted, "POST", "/api/v1/ontology/actions/"+setStatus+"/execute?async=1",
				map[string]any{"target_object_id": order1, "parameters": map[string]any{"status": "async"}}),
		} {
			loc := r.Header.Get("Location")
			waitFor(t, time.Minute, func() bool {
				var ex struct {
					Status string `json:"status"`
				}
				alice.must(http.StatusOK, "GET", loc, nil).json(t, &ex)
				return ex.Status == "succeeded"
			})
		}
	})

	t.Run("inline edit", func(t *testing.T) {
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/types/Order/objects/"+order1+"/properties/status/inline-edit",
			map[string]any{"value": "inline"})
		p := object("Order", order1)
		if p["status"] != "inline" {
			t.Errorf("status after inline edit = %v", p["status"])
		}
		r := alice.do("POST", "/api/v1/ontology/types/Order/objects/"+order1+"/properties/title/inline-edit", map[string]any{"value": "x"})
		expectRefusal("property without inline edit", r, 400, "InlineEditNotConfigured", "")
		r = alice.do("POST", "/api/v1/ontology/types/Order/objects/"+order1+"/properties/status/inline-edit", map[string]any{"value": 5})
		expectRefusal("inline edit of the wrong type", r, 400, "ActionValidationFailed", "type")
		r = bob.do("POST", "/api/v1/ontology/types/Order/objects/"+order1+"/properties/status/inline-edit", map[string]any{"value": "x"})
		if r.Status != 403 && r.Status != 404 {
			t.Errorf("inline edit by bob: %d %s", r.Status, r.Body)
		}
		// The Idempotency-Key covers the client's request, not the other
		// inputs prefilled from the object: a retry after the object's
		// priority changed is the same request.
		var first, again struct {
			ID string `json:"id"`
		}
		editURL := "/api/v1/ontology/types/Order/objects/" + order1 + "/properties/status/inline-edit"
		alice.must(http.StatusOK, "POST", editURL, map[string]any{"value": "keyed"}, "Idempotency-Key", "ie-1").json(t, &first)
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+setStatus+"/execute",
			map[string]any{"target_object_id": order1, "parameters": map[string]any{"status": "keyed", "priority": 3}})
		alice.must(http.StatusOK, "POST", editURL, map[string]any{"value": "keyed"}, "Idempotency-Key", "ie-1").json(t, &again)
		if again.ID != first.ID {
			t.Errorf("retried inline edit: execution %s, first %s", again.ID, first.ID)
		}
		r = alice.do("POST", editURL, map[string]any{"value": "other"}, "Idempotency-Key", "ie-1")
		expectRefusal("inline edit, same key, other value", r, 409, "IdempotencyKeyConflict", "")
	})

	t.Run("batch with mixed outcomes", func(t *testing.T) {
		var ex struct {
			Status string `json:"status"`
			Totals struct {
				Total, Succeeded, Failed int
			} `json:"totals"`
			Items []struct {
				Status    string `json:"status"`
				ErrorCode string `json:"error_code"`
			} `json:"items"`
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+setStatus+"/execute-batch", map[string]any{
			"parameters": map[string]any{"status": "batched"},
			"items": []map[string]any{
				{"target_object_id": order1},
				{"target_object_id": order2, "parameters": map[string]any{"status": 12}},
				{"target_object_id": secret},
			},
		}).json(t, &ex)
		if ex.Status != "partially_succeeded" || ex.Totals.Total != 3 || ex.Totals.Succeeded != 1 || ex.Totals.Failed != 2 || len(ex.Items) != 3 ||
			ex.Items[1].ErrorCode != "ActionValidationFailed" || ex.Items[2].ErrorCode != "PermissionDenied" {
			t.Errorf("batch = %+v", ex)
		}
		expectRefusal("empty batch", alice.do("POST", "/api/v1/ontology/actions/"+setStatus+"/execute-batch", map[string]any{"items": []any{}}), 400, "InvalidArgument", "")
		big := make([]map[string]any, 10001)
		for i := range big {
			big[i] = map[string]any{}
		}
		r := alice.do("POST", "/api/v1/ontology/actions/"+setStatus+"/execute-batch", map[string]any{"items": big})
		if r.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("batch over the maximum: %d %.200s", r.Status, r.Body)
		}
	})

	t.Run("concurrent executions on one object keep every edit", func(t *testing.T) {
		// Each action sets its own property; run together on one object,
		// every change must survive (on Postgres the run step locks the
		// target row; without it two runs merged into the same old
		// properties and the later commit dropped the earlier's change).
		const n = 8
		props := []map[string]any{{"name": "name", "type": "string", "required": true}}
		for i := 0; i < n; i++ {
			props = append(props, map[string]any{"name": fmt.Sprintf("p%d", i), "type": "integer"})
		}
		admin.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Board", "primary_key": "name", "properties": props})
		board := newObject(alice, "Board", map[string]any{"name": "b1"}, "")
		var actions []string
		for i := 0; i < n; i++ {
			actions = append(actions, newAction(map[string]any{"name": fmt.Sprintf("set-p%d", i), "object_type_id": "Board",
				"operation_kind": "update_object",
				"config":         map[string]any{"operation": map[string]any{"static_patch": map[string]any{fmt.Sprintf("p%d", i): i + 1}}}}))
		}
		var wg sync.WaitGroup
		for _, a := range actions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := alice.do("POST", "/api/v1/ontology/actions/"+a+"/execute", map[string]any{"target_object_id": board}); r.Status != http.StatusOK {
					t.Errorf("execute %s: %d %s", a, r.Status, r.Body)
				}
			}()
		}
		wg.Wait()
		p := object("Board", board)
		for i := 0; i < n; i++ {
			if v, _ := p[fmt.Sprintf("p%d", i)].(float64); v != float64(i+1) {
				t.Errorf("p%d = %v after the concurrent executions, want %d (properties %v)", i, p[fmt.Sprintf("p%d", i)], i+1, p)
			}
		}
	})

	t.Run("the action log applies the read rule", func(t *testing.T) {
		auditor := mkUser("auditor", map[string]any{"permissions": []string{"executions:read"}, "clearance": "public", "organization": "acme"})
		outsider := mkUser("auditor-globex", map[string]any{"permissions": []string{"executions:read"}, "clearance": "pii", "organization": "globex"})
		execID := func(r response) string {
			var v struct {
				ID    string `json:"id"`
				Error struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				} `json:"error"`
			}
			r.json(t, &v)
			if v.ID == "" {
				v.ID = v.Error.Data.ID
			}
			if v.ID == "" {
				t.Fatalf("no execution in %d %s", r.Status, r.Body)
			}
			return v.ID
		}
		open := execID(execute(alice, setStatus, order1, map[string]any{"status": "audited-open"}))
		hidden := execID(execute(alice, setStatus, secret, map[string]any{"status": "secret-status-xyz"}))
		var created struct {
			Result map[string]any `json:"operation_result"`
		}
		alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+openOrder+"/execute",
			map[string]any{"parameters": map[string]any{"title": "o-audit"}}).json(t, &created)
		victim, _ := created.Result["object_id"].(string)
		deleted := execID(alice.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+cancel+"/execute",
			map[string]any{"target_object_id": victim, "justification": "audit-justification"}))
		read := func(c client, id string) (string, bool) {
			r := c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+id, nil)
			var v struct {
				Redacted bool `json:"redacted"`
			}
			r.json(t, &v)
			return string(r.Body), v.Redacted
		}
		for _, c := range []struct {
			who    client
			id     string
			secret string
			whole  bool
		}{
			{auditor, open, "audited-open", true},
			{auditor, hidden, "secret-status-xyz", false},
			{auditor, deleted, "audit-justification", false},
			{alice, deleted, "audit-justification", true},
			{outsider, open, "audited-open", false},
			{admin, hidden, "secret-status-xyz", true},
			{admin, deleted, "audit-justification", true},
		} {
			body, redacted := read(c.who, c.id)
			if c.whole == redacted || c.whole != strings.Contains(body, c.secret) {
				t.Errorf("%s reading execution %s: redacted=%v, want whole=%v: %s", c.who.user, c.id, redacted, c.whole, body)
			}
		}
		list := string(auditor.must(http.StatusOK, "GET", "/api/v1/ontology/executions?page_size=500", nil).Body)
		if strings.Contains(list, "secret-status-xyz") || strings.Contains(list, "audit-justification") || !strings.Contains(list, hidden) {
			t.Errorf("the auditor's action log shows what it may not read, or hides the row: %s", list)
		}
	})

	t.Run("notifications can be marked read", func(t *testing.T) {
		var notes struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		alice.must(http.StatusOK, "GET", "/api/v1/notifications?unread=true", nil).json(t, &notes)
		if len(notes.Data) == 0 {
			t.Fatal("alice has no unread notifications")
		}
		alice.must(http.StatusNoContent, "POST", "/api/v1/notifications/"+notes.Data[0].ID+"/read", nil)
		bob.must(http.StatusNotFound, "POST", "/api/v1/notifications/"+notes.Data[0].ID+"/read", nil)
		_, unread := countNotes(t, alice)
		if unread != len(notes.Data)-1 {
			t.Errorf("unread after marking one = %d, want %d", unread, len(notes.Data)-1)
		}
	})
}

func countNotes(t *testing.T, c client) (all, unread int) {
	t.Helper()
	var page struct {
		Data []struct {
			ReadAt *string `json:"read_at"`
		} `json:"data"`
	}
	c.must(http.StatusOK, "GET", "/api/v1/notifications?page_size=500", nil).json(t, &page)
	for _, n := range page.Data {
		if n.ReadAt == nil {
			unread++
		}
	}
	return len(page.Data), unread
}

// workerMetrics: the worker serves /metrics on --metrics-addr with the
// engine's series and the Temporal SDK's under their standard names.
func workerMetrics(t *testing.T, worker *proc) {
	t.Helper()
	if worker.MetricsURL == "" {
		t.Fatalf("the worker's banner names no metrics address:\n%s", worker.stdout)
	}
	var body string
	waitFor(t, 30*time.Second, func() bool {
		resp, err := http.Get(worker.MetricsURL)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK && strings.Contains(body, "temporal_activity_execution_latency_seconds_bucket")
	})
	for _, want := range []string{"ontoflow_action_executions_total{", "ontoflow_action_step_duration_seconds_bucket{",
		"temporal_worker_task_slots_available{", "temporal_workflow_task_execution_latency_seconds_bucket{",
		"temporal_request_total{", "go_sql_open_connections{"} {
		if !strings.Contains(body, want) {
			t.Errorf("the worker's /metrics has no %s", want)
		}
	}
}
