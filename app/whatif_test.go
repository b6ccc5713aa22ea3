package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/engine/kinds/updateobject"
	"github.com/ontoflow/ontoflow/internal/harness/devtest"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
)

// TestWhatIf drives what-if branches end to end over HTTP on an
// in-process dev (embedded Temporal, loopback only), on SQLite and
// Postgres: the main ontology untouched, stacking, each operation kind,
// previewed side effects, apply, privacy.
func TestWhatIf(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			fn := &fakeFunction{}
			c := startDevArgs(t, dsn, []string{"--outbound-allow", "127.0.0.1/32"}, app.ExtraKinds(appendNote{}, fn))
			whatIfSuite(t, wi{c})
			effectPreviewSuite(t, wi{c}, fn)
		})
	}
}

// wi adds what-if helpers to a dev client.
type wi struct{ devClient }

type jsonMap = map[string]any

// doAs sends a request as user (password pw) and decodes the answer.
func (c wi) doAs(user, pw, method, path string, body any) (int, jsonMap) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.SetBasicAuth(user, pw)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m jsonMap
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func (c wi) id(want int, method, path string, body any) string {
	c.t.Helper()
	var v struct {
		ID string `json:"id"`
	}
	c.must(want, method, path, body, &v)
	return v.ID
}

// whatIf runs a what-if as admin and returns the status and answer.
func (c wi) whatIf(action, branch, target string, params jsonMap) (int, jsonMap) {
	c.t.Helper()
	body := jsonMap{"target_object_id": target, "parameters": params}
	if branch != "" {
		body["branch_id"] = branch
	}
	return c.doAs("admin", adminPassword, "POST", "/api/v1/ontology/actions/"+action+"/what-if", body)
}

// mustWhatIf is whatIf expecting want.
func (c wi) mustWhatIf(want int, action, branch, target string, params jsonMap) jsonMap {
	c.t.Helper()
	st, m := c.whatIf(action, branch, target, params)
	if st != want {
		c.t.Fatalf("what-if %s: %d %v, want %d", action, st, m, want)
	}
	return m
}

// objectChange returns the answer's change of object id.
func objectChange(t *testing.T, m jsonMap, id string) jsonMap {
	t.Helper()
	objs, _ := m["objects"].([]any)
	for _, o := range objs {
		if om := o.(jsonMap); om["object_id"] == id {
			return om
		}
	}
	t.Fatalf("no change of %s in %v", id, m["objects"])
	return nil
}

func prop(o any, name string) any {
	m, _ := o.(jsonMap)
	p, _ := m["properties"].(jsonMap)
	return p[name]
}

// count returns the number of items of a list answer.
func (c wi) count(path string) int {
	c.t.Helper()
	var page struct {
		Data []any `json:"data"`
	}
	c.must(http.StatusOK, "GET", path, nil, &page)
	return len(page.Data)
}

type fixture struct {
	t1, t2, note, status, create, link, del, hook string
}

func (c wi) setUp(rxURL string) fixture {
	var f fixture
	c.must(http.StatusCreated, "POST", "/api/v1/secrets", jsonMap{"name": "HOOK_TOKEN", "value": "tok-secret-value-42",
		"destinations": []string{rxURL + "/sync"}}, nil)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", jsonMap{"name": "Ticket", "primary_key": "title",
		"properties": []jsonMap{{"name": "title", "type": "string", "required": true}, {"name": "notes", "type": "string"},
			{"name": "status", "type": "string"}}}, nil)
	lt := c.id(http.StatusCreated, "POST", "/api/v1/ontology/link-types", jsonMap{"name": "blocks",
		"source_object_type_id": "Ticket", "target_object_type_id": "Ticket", "cardinality": "many_to_many"})
	f.t1 = c.id(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", jsonMap{"properties": jsonMap{"title": "t1", "notes": "first", "status": "open"}})
	f.t2 = c.id(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", jsonMap{"properties": jsonMap{"title": "t2"}})
	action := func(def jsonMap) string { return c.id(http.StatusCreated, "POST", "/api/v1/ontology/actions", def) }
	f.note = action(jsonMap{"name": "add-note", "object_type_id": "Ticket", "operation_kind": "append_note",
		"inputs": []jsonMap{{"name": "note", "type": "string", "required": true}},
		"config": jsonMap{"operation": jsonMap{"property": "notes"}}})
	f.status = action(jsonMap{"name": "set-status", "object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []jsonMap{{"name": "status", "type": "string", "required": true}},
		"config": jsonMap{"operation": jsonMap{"property_mappings": []jsonMap{{"property": "status", "input": "status"}}},
			"notification_side_effects": []jsonMap{{"title": "{{ target.properties.title }}: {{ target.properties.status }} -> {{ object.properties.status }}",
				"send_to_actor": true}}}})
	f.create = action(jsonMap{"name": "new-ticket", "object_type_id": "Ticket", "operation_kind": "create_object",
		"inputs": []jsonMap{{"name": "title", "type": "string", "required": true}},
		"config": jsonMap{"operation": jsonMap{"property_mappings": []jsonMap{{"property": "title", "input": "title"}},
			"static_patch": jsonMap{"status": "new"}}}})
	f.link = action(jsonMap{"name": "block", "object_type_id": "Ticket", "operation_kind": "create_link",
		"inputs": []jsonMap{{"name": "other", "type": jsonMap{"type": "reference"}, "required": true}},
		"config": jsonMap{"operation": jsonMap{"link_type_id": lt, "other_object_input": "other", "target_side": "source"}}})
	f.del = action(jsonMap{"name": "close-ticket", "object_type_id": "Ticket", "operation_kind": "delete_object"})
	f.hook = action(jsonMap{"name": "sync", "object_type_id": "Ticket", "operation_kind": "invoke_webhook",
		"config": jsonMap{"operation": jsonMap{"url": rxURL + "/sync?status={{ target.properties.status }}",
			"headers": jsonMap{"Authorization": "Bearer {{ secrets.HOOK_TOKEN }}", "X-Hook-Token": "{{ secrets.HOOK_TOKEN }}",
				"X-Api-Key": "sk_live_abc"}}}})
	c.must(http.StatusCreated, "POST", "/api/v1/users", jsonMap{"username": "bob", "password": "bob-password-123"}, nil)
	return f
}

func whatIfSuite(t *testing.T, c wi) {
	rx := newReceiver(t)
	f := c.setUp(rx.srv.URL)
	var stacked string

	t.Run("stacking three actions; the second reads the first's edit; main untouched", func(t *testing.T) {
		m := c.mustWhatIf(http.StatusCreated, f.note, "", f.t1, jsonMap{"note": "a"})
		stacked = m["branch_id"].(string)
		if ex := m["execution"].(jsonMap); ex["kind"] != "what-if" || ex["status"] != "succeeded" {
			t.Fatalf("execution %v", ex)
		}
		m = c.mustWhatIf(http.StatusOK, f.note, stacked, f.t1, jsonMap{"note": "b"})
		ch := objectChange(t, m, f.t1)
		if prop(ch["before"], "notes") != "first; a" || prop(ch["after"], "notes") != "first; a; b" {
			t.Fatalf("second step saw %v -> %v", prop(ch["before"], "notes"), prop(ch["after"], "notes"))
		}
		m = c.mustWhatIf(http.StatusOK, f.status, stacked, f.t1, jsonMap{"status": "done"})
		if m["position"] != float64(3) {
			t.Errorf("position %v", m["position"])
		}
		diff := objectChange(t, m, f.t1)["diff"].([]any)
		if len(diff) != 1 || diff[0].(jsonMap)["property"] != "status" || diff[0].(jsonMap)["after"] != "done" {
			t.Errorf("diff %v", diff)
		}
		// The notification is rendered over the branch, not sent.
		notes, _ := m["notifications"].([]any)
		if len(notes) != 1 || notes[0].(jsonMap)["title"] != "t1: open -> done" {
			t.Errorf("notifications %v", m["notifications"])
		}
		if n := c.count("/api/v1/notifications"); n != 0 {
			t.Errorf("%d notifications were delivered", n)
		}
		if p := c.object(f.t1); p["notes"] != "first" || p["status"] != "open" {
			t.Errorf("main ontology changed: %v", p)
		}
		var o struct {
			Properties jsonMap `json:"properties"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket/objects/"+f.t1+"?branch="+stacked, nil, &o)
		if o.Properties["notes"] != "first; a; b" || o.Properties["status"] != "done" {
			t.Errorf("read through the branch: %v", o.Properties)
		}
		var b struct {
			Executions []jsonMap `json:"executions"`
			Diff       struct {
				Objects []jsonMap `json:"objects"`
			} `json:"diff"`
			Owner string `json:"owner"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/branches/"+stacked, nil, &b)
		if len(b.Executions) != 3 || b.Executions[0]["action_type_name"] != "add-note" || b.Executions[2]["action_type_name"] != "set-status" || b.Owner != "admin" {
			t.Errorf("branch executions %v owner %q", b.Executions, b.Owner)
		}
		if len(b.Diff.Objects) != 1 || len(b.Diff.Objects[0]["diff"].([]any)) != 2 {
			t.Errorf("branch diff %v", b.Diff.Objects)
		}
		if n := c.count("/api/v1/ontology/executions?kind=what-if"); n != 3 {
			t.Errorf("%d what-if executions in the action log, want 3", n)
		}
		if n := c.count("/api/v1/ontology/actions/" + f.note + "/what-if?target_object_id=" + f.t1); n != 1 {
			t.Errorf("%d branches of add-note on t1, want 1", n)
		}
	})

	var created string
	var createdBranch string
	t.Run("create, then update and link the created object in the branch", func(t *testing.T) {
		m := c.mustWhatIf(http.StatusCreated, f.create, "", "", jsonMap{"title": "t9"})
		createdBranch = m["branch_id"].(string)
		ch := m["objects"].([]any)[0].(jsonMap)
		created = ch["object_id"].(string)
		if ch["change"] != "created" || ch["before"] != nil || prop(ch["after"], "title") != "t9" {
			t.Fatalf("create change %v", ch)
		}
		m = c.mustWhatIf(http.StatusOK, f.status, createdBranch, created, jsonMap{"status": "triage"})
		if ch := objectChange(t, m, created); prop(ch["before"], "status") != "new" || prop(ch["after"], "status") != "triage" {
			t.Errorf("update of the created object %v", ch)
		}
		m = c.mustWhatIf(http.StatusOK, f.link, createdBranch, f.t1, jsonMap{"other": created})
		if links := m["links"].([]any); len(links) != 1 || links[0].(jsonMap)["target_object_id"] != created {
			t.Errorf("links %v", m["links"])
		}
		c.must(http.StatusNotFound, "GET", "/api/v1/ontology/types/Ticket/objects/"+created, nil, nil)
		if n := c.count("/api/v1/ontology/types/Ticket/objects/" + f.t1 + "/links"); n != 0 {
			t.Errorf("main has %d links", n)
		}
		if n := c.count("/api/v1/ontology/types/Ticket/objects/" + f.t1 + "/links?branch=" + createdBranch); n != 1 {
			t.Errorf("the branch has %d links of t1", n)
		}
		if n := c.count("/api/v1/ontology/types/Ticket/objects?branch=" + createdBranch); n != 3 {
			t.Errorf("the branch lists %d tickets, want 3", n)
		}
	})

	t.Run("the unique index is untouched", func(t *testing.T) {
		c.mustWhatIf(http.StatusCreated, f.create, "", "", jsonMap{"title": "u1"})
		c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", jsonMap{"properties": jsonMap{"title": "u1"}}, nil)
		// ...and a what-if sees main's unique values.
		st, m := c.whatIf(f.create, "", "", jsonMap{"title": "u1"})
		if st != http.StatusConflict {
			t.Errorf("a duplicate in a what-if: %d %v", st, m)
		}
	})

	t.Run("delete in a branch", func(t *testing.T) {
		m := c.mustWhatIf(http.StatusCreated, f.del, "", f.t2, nil)
		if ch := objectChange(t, m, f.t2); ch["change"] != "deleted" || prop(ch["before"], "title") != "t2" || ch["after"] != nil {
			t.Errorf("delete change %v", ch)
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket/objects/"+f.t2, nil, nil)
		c.must(http.StatusNotFound, "GET", "/api/v1/ontology/types/Ticket/objects/"+f.t2+"?branch="+m["branch_id"].(string), nil, nil)
	})

	t.Run("a webhook is previewed, not called", func(t *testing.T) {
		m := c.mustWhatIf(http.StatusOK, f.hook, stacked, f.t1, nil)
		eff, _ := json.Marshal(m["effect"])
		if !strings.Contains(string(eff), "status=done") || !strings.Contains(string(eff), "[secret:HOOK_TOKEN]") {
			t.Errorf("effect %s: want the branch's status and the secret as a reference", eff)
		}
		if strings.Contains(string(eff), "tok-secret-value-42") || strings.Contains(string(eff), "sk_live_abc") {
			t.Errorf("the effect shows a secret or a literal header value: %s", eff)
		}
		var b struct {
			Executions []struct {
				Preview struct {
					Effect struct {
						Headers map[string]string `json:"headers"`
					} `json:"effect"`
				} `json:"preview"`
			} `json:"executions"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/branches/"+stacked, nil, &b)
		h := b.Executions[len(b.Executions)-1].Preview.Effect.Headers
		if h["X-Api-Key"] != "***" || h["Authorization"] != "***" || h["X-Hook-Token"] != "[secret:HOOK_TOKEN]" {
			t.Errorf("stored preview headers %v", h)
		}
		if n := len(rx.seenAt("/sync")); n != 0 {
			t.Errorf("the receiver got %d requests", n)
		}
	})

	t.Run("another user cannot read, stack on or apply a branch", func(t *testing.T) {
		const bob, pw = "bob", "bob-password-123"
		if st, _ := c.doAs(bob, pw, "GET", "/api/v1/ontology/types/Ticket/objects/"+f.t1, nil); st != http.StatusOK {
			t.Fatalf("bob cannot read t1 on main: %d", st)
		}
		for _, r := range []struct{ method, path string }{
			{"GET", "/api/v1/ontology/branches/" + stacked},
			{"GET", "/api/v1/ontology/types/Ticket/objects/" + f.t1 + "?branch=" + stacked},
			{"POST", "/api/v1/ontology/branches/" + stacked + "/apply"},
			{"DELETE", "/api/v1/ontology/branches/" + stacked},
		} {
			if st, m := c.doAs(bob, pw, r.method, r.path, nil); st != http.StatusNotFound {
				t.Errorf("bob %s %s: %d %v", r.method, r.path, st, m)
			}
		}
		st, m := c.doAs(bob, pw, "POST", "/api/v1/ontology/actions/"+f.note+"/what-if",
			jsonMap{"target_object_id": f.t1, "parameters": jsonMap{"note": "x"}, "branch_id": stacked})
		if st != http.StatusNotFound {
			t.Errorf("bob stacks: %d %v", st, m)
		}
		if st, m := c.doAs(bob, pw, "GET", "/api/v1/ontology/branches", nil); st != http.StatusOK || len(m["data"].([]any)) != 0 {
			t.Errorf("bob lists: %d %v", st, m)
		}
	})

	t.Run("concurrent stacking is serialized", func(t *testing.T) {
		m := c.mustWhatIf(http.StatusCreated, f.note, "", f.t2, jsonMap{"note": "0"})
		id := m["branch_id"].(string)
		var wg sync.WaitGroup
		sts := make([]int, 3)
		for i := range sts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sts[i], _ = c.whatIf(f.note, id, f.t2, jsonMap{"note": strconv.Itoa(i + 1)})
			}()
		}
		wg.Wait()
		for i, st := range sts {
			if st != http.StatusOK {
				t.Errorf("concurrent what-if %d: %d", i+1, st)
			}
		}
		var o struct {
			Properties jsonMap `json:"properties"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket/objects/"+f.t2+"?branch="+id, nil, &o)
		notes, _ := o.Properties["notes"].(string)
		if parts := strings.Split(notes, "; "); len(parts) != 4 || parts[0] != "0" {
			t.Errorf("notes in the branch %q: each step must see every earlier one", notes)
		}
	})

	t.Run("an Idempotency-Key answers the same what-if and branch", func(t *testing.T) {
		send := func() (int, jsonMap) {
			b, _ := json.Marshal(jsonMap{"target_object_id": f.t1, "parameters": jsonMap{"note": "k"}})
			req, _ := http.NewRequest("POST", c.base+"/api/v1/ontology/actions/"+f.note+"/what-if", bytes.NewReader(b))
			req.SetBasicAuth("admin", adminPassword)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "whatif-key-1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m jsonMap
			_ = json.NewDecoder(resp.Body).Decode(&m)
			if loc := resp.Header.Get("Location"); resp.StatusCode == http.StatusCreated && loc != "/api/v1/ontology/branches/"+m["branch_id"].(string) {
				t.Errorf("Location %q of a new branch %v", loc, m["branch_id"])
			}
			return resp.StatusCode, m
		}
		before := c.count("/api/v1/ontology/branches")
		st1, m1 := send()
		st2, m2 := send()
		if st1 != http.StatusCreated || st2 != http.StatusCreated || m1["branch_id"] != m2["branch_id"] ||
			m1["execution"].(jsonMap)["id"] != m2["execution"].(jsonMap)["id"] {
			t.Errorf("repeated key: %d %v / %d %v", st1, m1["branch_id"], st2, m2["branch_id"])
		}
		if n := c.count("/api/v1/ontology/branches"); n != before+1 {
			t.Errorf("%d branches, want %d", n, before+1)
		}
	})

	t.Run("a refused what-if leaves no branch", func(t *testing.T) {
		before := c.count("/api/v1/ontology/branches")
		st, m := c.whatIf(f.status, "", f.t1, jsonMap{})
		if st != http.StatusBadRequest || m["error"].(jsonMap)["code"] != "ActionValidationFailed" {
			t.Fatalf("invalid what-if: %d %v", st, m)
		}
		if n := c.count("/api/v1/ontology/branches"); n != before {
			t.Errorf("%d branches after a refused what-if, want %d", n, before)
		}
	})

	t.Run("apply runs each step as a normal execution", func(t *testing.T) {
		var res struct {
			Complete   bool      `json:"complete"`
			Executions []jsonMap `json:"executions"`
		}
		c.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+createdBranch+"/apply", jsonMap{}, &res)
		if !res.Complete || len(res.Executions) != 3 {
			t.Fatalf("apply %+v", res)
		}
		for _, e := range res.Executions {
			var ex jsonMap
			c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+e["execution_id"].(string), nil, &ex)
			if ex["kind"] != "execute" || ex["status"] != "succeeded" {
				t.Errorf("applied execution %v", ex)
			}
		}
		var list struct {
			Data []jsonMap `json:"data"`
		}
		c.must(http.StatusOK, "GET", "/api/v1/ontology/types/Ticket/objects?filter.title=t9", nil, &list)
		if len(list.Data) != 1 || prop(list.Data[0], "status") != "triage" {
			t.Fatalf("t9 on main: %v", list.Data)
		}
		if n := c.count("/api/v1/ontology/types/Ticket/objects/" + f.t1 + "/links"); n != 1 {
			t.Errorf("main has %d links of t1, want 1", n)
		}
		c.must(http.StatusConflict, "POST", "/api/v1/ontology/branches/"+createdBranch+"/apply", nil, nil)
	})

	t.Run("apply refused after a change on main, then revalidated", func(t *testing.T) {
		c.must(http.StatusOK, "PATCH", "/api/v1/ontology/types/Ticket/objects/"+f.t1, jsonMap{"properties": jsonMap{"notes": "edited"}}, nil)
		st, m := c.doAs("admin", adminPassword, "POST", "/api/v1/ontology/branches/"+stacked+"/apply", nil)
		if st != http.StatusConflict || !strings.Contains(m["error"].(jsonMap)["message"].(string), f.t1) {
			t.Fatalf("apply after a change: %d %v", st, m)
		}
		if p := c.object(f.t1); p["notes"] != "edited" {
			t.Fatalf("a refused apply ran: %v", p)
		}
		var res struct {
			Complete   bool      `json:"complete"`
			Executions []jsonMap `json:"executions"`
		}
		c.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+stacked+"/apply", jsonMap{"revalidate": true}, &res)
		if !res.Complete || len(res.Executions) != 4 {
			t.Fatalf("revalidated apply %+v", res)
		}
		if p := c.object(f.t1); p["notes"] != "edited; a; b" || p["status"] != "done" {
			t.Errorf("after apply: %v", p)
		}
		if n := len(rx.seenAt("/sync")); n != 1 {
			t.Errorf("the applied webhook called %d times, want 1", n)
		}
	})

	t.Run("apply checks authorization again, stops at the first refusal and continues later", func(t *testing.T) {
		m := c.mustWhatIf(http.StatusCreated, f.note, "", f.t2, jsonMap{"note": "p"})
		id := m["branch_id"].(string)
		c.mustWhatIf(http.StatusOK, f.status, id, f.t2, jsonMap{"status": "blocked"})
		c.mustWhatIf(http.StatusOK, f.note, id, f.t2, jsonMap{"note": "q"})
		c.must(http.StatusOK, "PATCH", "/api/v1/ontology/actions/"+f.status, jsonMap{"policy": jsonMap{"any_role": []string{"auditor"}}}, nil)
		var res struct {
			Complete   bool      `json:"complete"`
			Executions []jsonMap `json:"executions"`
			Branch     jsonMap   `json:"branch"`
		}
		c.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+id+"/apply", nil, &res)
		if res.Complete || len(res.Executions) != 2 || res.Executions[0]["status"] != "succeeded" ||
			res.Executions[1]["status"] != "failed" || res.Executions[1]["error_code"] != "PermissionDenied" ||
			res.Branch["applied"] != float64(1) || res.Branch["status"] != "open" {
			t.Fatalf("apply with a refused step: %+v", res)
		}
		if p := c.object(f.t2); p["notes"] != "p" || p["status"] != nil {
			t.Fatalf("after a partial apply: %v", p)
		}
		c.must(http.StatusOK, "PATCH", "/api/v1/ontology/actions/"+f.status, jsonMap{"policy": jsonMap{}}, nil)
		c.must(http.StatusOK, "POST", "/api/v1/ontology/branches/"+id+"/apply", nil, &res)
		if !res.Complete || len(res.Executions) != 2 || res.Executions[0]["position"] != float64(2) {
			t.Fatalf("continued apply: %+v", res)
		}
		if p := c.object(f.t2); p["notes"] != "p; q" || p["status"] != "blocked" {
			t.Errorf("after apply: %v", p)
		}
	})

	t.Run("delete a branch", func(t *testing.T) {
		m := c.mustWhatIf(http.StatusCreated, f.note, "", f.t1, jsonMap{"note": "z"})
		id := m["branch_id"].(string)
		c.must(http.StatusNoContent, "DELETE", "/api/v1/ontology/branches/"+id, nil, nil)
		c.must(http.StatusNotFound, "GET", "/api/v1/ontology/branches/"+id, nil, nil)
	})
}

// startDevApp is startDevArgs keeping the App (its Temporal client).
func startDevApp(t *testing.T, more []string) (*app.App, devClient) {
	t.Helper()
	a := devtest.Start(t, adminPassword, more, nil)
	return a, devClient{t: t, base: a.APIURL}
}

// TestWhatIfBranchExpires: a branch past --branch-ttl is gone. On the
// way, the what-if's workflow is found in Temporal by its kind, as the
// UI filters it.
func TestWhatIfBranchExpires(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			more := []string{"--branch-ttl", "2s"}
			if d == "postgres" {
				more = append(more, "--database-url", testdb.DSN(t, d))
			}
			branchExpires(t, more)
		})
	}
}

func branchExpires(t *testing.T, more []string) {
	a, dc := startDevApp(t, more)
	c := wi{dc}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", jsonMap{"name": "Ticket", "primary_key": "title",
		"properties": []jsonMap{{"name": "title", "type": "string", "required": true}}}, nil)
	act := c.id(http.StatusCreated, "POST", "/api/v1/ontology/actions", jsonMap{"name": "new-ticket", "object_type_id": "Ticket",
		"operation_kind": "create_object", "inputs": []jsonMap{{"name": "title", "type": "string", "required": true}},
		"config": jsonMap{"operation": jsonMap{"property_mappings": []jsonMap{{"property": "title", "input": "title"}}}}})
	m := c.mustWhatIf(http.StatusCreated, act, "", "", jsonMap{"title": "x"})
	id := m["branch_id"].(string)
	c.must(http.StatusOK, "GET", "/api/v1/ontology/branches/"+id, nil, nil)
	wfID := m["execution"].(jsonMap)["workflow_id"].(string)
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, err := a.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: a.Cfg.TemporalNamespace, Query: `OntoflowKind = "what-if"`})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Executions) == 1 && resp.Executions[0].Execution.WorkflowId == wfID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Temporal lists %d what-if workflows, want %s", len(resp.Executions), wfID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Until(deadline))
	c.must(http.StatusNotFound, "GET", "/api/v1/ontology/branches/"+id, nil, nil)
	if n := c.count("/api/v1/ontology/branches"); n != 0 {
		t.Errorf("%d branches listed after expiry", n)
	}
	var rows, steps int64
	a.DB.Model(&models.Branch{}).Count(&rows)
	a.DB.Model(&models.BranchStep{}).Count(&steps)
	if rows != 0 || steps != 0 {
		t.Errorf("%d branches and %d steps left after the purge", rows, steps)
	}
	if st, _ := c.whatIf(act, id, "", jsonMap{"title": "y"}); st != http.StatusNotFound {
		t.Errorf("stacking on an expired branch: %d", st)
	}
}

// fakeFunction is an effect kind that exists only in this test, standing
// in for invoke_function: its Effect (network allowed) counts its calls;
// its PreviewEffect computes the same edit offline, as a function run with
// network refused would. What-if must use the preview, never the effect.
type fakeFunction struct{ calls atomic.Int32 }

func (*fakeFunction) Name() string                                               { return "fake_function" }
func (*fakeFunction) NeedsObjectType() bool                                      { return true }
func (*fakeFunction) HasTarget(string) bool                                      { return true }
func (*fakeFunction) NewConfig() any                                             { return &struct{}{} }
func (*fakeFunction) CheckConfig(context.Context, *domain.KindScope, any) error  { return nil }
func (*fakeFunction) References(any) domain.References                           { return domain.References{} }
func (*fakeFunction) Preview(context.Context, *engine.Op) ([]models.Edit, error) { return nil, nil }

func (*fakeFunction) Invert(ed models.Edit) ([]models.Edit, error) {
	return updateobject.UpdateObject{}.Invert(ed)
}

func (*fakeFunction) EffectOptions(*engine.Op) engine.EffectOptions {
	return engine.EffectOptions{StartToClose: 5 * time.Second, MaxAttempts: 1, Local: true}
}

func (f *fakeFunction) Effect(_ context.Context, op *engine.Op, _ string) (json.RawMessage, error) {
	f.calls.Add(1)
	return json.Marshal(jsonMap{"notes": "computed online", "network": "allowed"})
}

func (*fakeFunction) PreviewEffect(_ context.Context, op *engine.Op) (json.RawMessage, error) {
	return json.Marshal(jsonMap{"notes": "computed offline from " + op.Target.Properties["notes"].(string), "network": "refused"})
}

func (*fakeFunction) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	var r struct{ Notes string }
	if err := json.Unmarshal(op.Effect, &r); err != nil {
		return nil, err
	}
	after, err := op.Ontology.In(op.Tx).UpdateObject(ctx, op.Target.ID, map[string]any{"notes": r.Notes})
	if err != nil {
		return nil, err
	}
	return &engine.Outcome{Edits: []models.Edit{{Op: models.EditUpdateObject, ObjectTypeID: after.ObjectTypeID, ObjectID: after.ID,
		Before: map[string]any{"notes": op.Target.Properties["notes"]}, After: map[string]any{"notes": r.Notes}}}}, nil
}

// effectPreviewSuite: a what-if of an effect kind runs the kind's
// preview (network refused) over the branch, never its effect.
func effectPreviewSuite(t *testing.T, c wi, fn *fakeFunction) {
	t.Run("an effect kind is previewed, its effect never run", func(t *testing.T) {
		obj := c.id(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", jsonMap{"properties": jsonMap{"title": "fx", "notes": "seed"}})
		act := c.id(http.StatusCreated, "POST", "/api/v1/ontology/actions", jsonMap{"name": "compute", "object_type_id": "Ticket",
			"operation_kind": "fake_function"})
		m := c.mustWhatIf(http.StatusCreated, act, "", obj, nil)
		ch := objectChange(t, m, obj)
		if prop(ch["after"], "notes") != "computed offline from seed" || m["effect"].(jsonMap)["network"] != "refused" {
			t.Errorf("preview %v, effect %v", ch, m["effect"])
		}
		if n := fn.calls.Load(); n != 0 {
			t.Errorf("the effect ran %d times in a what-if", n)
		}
		c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+act+"/execute", jsonMap{"target_object_id": obj}, nil)
		if n := fn.calls.Load(); n != 1 || c.notes(obj) != "computed online" {
			t.Errorf("execute: %d effect calls, notes %q", n, c.notes(obj))
		}
	})
}
