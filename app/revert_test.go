package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
)

// TestRevertOnDev reverts executions of every built-in operation kind over
// HTTP on SQLite and Postgres and checks the exact prior state comes back,
// and that revert is refused after a later edit, twice, by another user, on
// a failed execution and without a justification; a batch is reverted as a
// whole.
func TestRevertOnDev(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			revertSuite(t, startDev(t, dsn))
		})
	}
}

// revertFixture is the ontology the revert suite runs on.
type revertFixture struct {
	c                                    devClient
	setTitle, openTicket, remove, attach string
	linkType                             string
}

func newRevertFixture(t *testing.T, c devClient) *revertFixture {
	f := &revertFixture{c: c}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true, "unique": true},
			{"name": "notes", "type": "string"}, {"name": "priority", "type": "integer"}}}, nil)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Team", "primary_key": "name",
		"properties": []map[string]any{{"name": "name", "type": "string", "required": true}}}, nil)
	var lt idOnly
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/link-types", map[string]any{"name": "ticket_team",
		"source_object_type_id": "Ticket", "target_object_type_id": "Team", "cardinality": "many_to_one"}, &lt)
	f.linkType = lt.ID
	f.setTitle = f.action(map[string]any{"name": "set-notes", "object_type_id": "Ticket", "operation_kind": "update_object",
		"inputs": []map[string]any{{"name": "notes", "type": "string"}, {"name": "priority", "type": "integer"}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{
			{"property": "notes", "input": "notes"}, {"property": "priority", "input": "priority"}}}}})
	f.openTicket = f.action(map[string]any{"name": "open-ticket", "object_type_id": "Ticket", "operation_kind": "create_object",
		"inputs": []map[string]any{{"name": "title", "type": "string", "required": true}},
		"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "title", "input": "title"}}}}})
	f.remove = f.action(map[string]any{"name": "remove-ticket", "object_type_id": "Ticket", "operation_kind": "delete_object"})
	f.attach = f.action(map[string]any{"name": "attach-team", "object_type_id": "Ticket", "operation_kind": "create_link",
		"inputs": []map[string]any{{"name": "team", "type": map[string]any{"type": "reference"}, "required": true}},
		"config": map[string]any{"operation": map[string]any{"link_type_id": lt.ID, "other_object_input": "team", "target_side": "source"}}})
	return f
}

type idOnly struct {
	ID string `json:"id"`
}

func (f *revertFixture) action(def map[string]any) string {
	var a idOnly
	f.c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", def, &a)
	return a.ID
}

func (f *revertFixture) object(typ string, props map[string]any, marking string) string {
	body := map[string]any{"properties": props}
	if marking != "" {
		body["marking"] = marking
	}
	var o idOnly
	f.c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/"+typ+"/objects", body, &o)
	return o.ID
}

// execute runs an action as c and returns the execution's id.
func (f *revertFixture) execute(c devClient, action, target string, params map[string]any) string {
	var ex struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+action+"/execute",
		map[string]any{"target_object_id": target, "parameters": params}, &ex)
	if ex.Status != "succeeded" {
		f.c.t.Fatalf("execute %s: %s", action, ex.Status)
	}
	return ex.ID
}

// revert reverts id as c and returns the status and the decoded answer.
func revertAs(c devClient, id, why string) (int, map[string]any) {
	st, b := c.do("POST", "/api/v1/ontology/executions/"+id+"/revert", map[string]any{"justification": why})
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return st, m
}

// state is an object as GET shows it, links included.
func (f *revertFixture) state(typ, id string) map[string]any {
	st, b := f.c.do("GET", "/api/v1/ontology/types/"+typ+"/objects/"+id, nil)
	if st == http.StatusNotFound {
		return nil
	}
	var o map[string]any
	if err := json.Unmarshal(b, &o); err != nil {
		f.c.t.Fatalf("object %s: %d %s", id, st, b)
	}
	var links struct {
		Data []map[string]any `json:"data"`
	}
	f.c.must(http.StatusOK, "GET", "/api/v1/ontology/types/"+typ+"/objects/"+id+"/links", nil, &links)
	o["links"] = links.Data
	return o
}

func revertSuite(t *testing.T, c devClient) {
	f := newRevertFixture(t, c)
	team := f.object("Team", map[string]any{"name": "ops"}, "")

	t.Run("update_object comes back exactly", func(t *testing.T) {
		id := f.object("Ticket", map[string]any{"title": "u1", "notes": "first", "priority": 3}, "")
		before := f.state("Ticket", id)
		ex := f.execute(c, f.setTitle, id, map[string]any{"notes": "second", "priority": 7})
		st, rv := revertAs(c, ex, "wrong ticket")
		if st != http.StatusOK || rv["status"] != "succeeded" || rv["kind"] != "revert" || rv["revert_of"] != ex {
			t.Fatalf("revert: %d %v", st, rv)
		}
		after := f.state("Ticket", id)
		if !reflect.DeepEqual(before["properties"], after["properties"]) {
			t.Errorf("properties %v, want %v", after["properties"], before["properties"])
		}
		var orig map[string]any
		c.must(http.StatusOK, "GET", "/api/v1/ontology/executions/"+ex, nil, &orig)
		if orig["reverted_by"] != rv["id"] {
			t.Errorf("the original's reverted_by = %v, want %v", orig["reverted_by"], rv["id"])
		}
		if st, e := revertAs(c, ex, "again"); st != http.StatusConflict {
			t.Errorf("second revert: %d %v", st, e)
		}
	})

	t.Run("create_object is deleted", func(t *testing.T) {
		var ex struct {
			ID    string `json:"id"`
			Edits []struct {
				ObjectID string `json:"object_id"`
			} `json:"edits"`
		}
		c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+f.openTicket+"/execute",
			map[string]any{"parameters": map[string]any{"title": "c1"}}, &ex)
		if st, rv := revertAs(c, ex.ID, "duplicate"); st != http.StatusOK {
			t.Fatalf("revert: %d %v", st, rv)
		}
		if f.state("Ticket", ex.Edits[0].ObjectID) != nil {
			t.Error("the created object is still there")
		}
		// The unique title is free again.
		c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+f.openTicket+"/execute",
			map[string]any{"parameters": map[string]any{"title": "c1"}}, nil)
	})

	t.Run("delete_object comes back identical: id, marking, links", func(t *testing.T) {
		id := f.object("Ticket", map[string]any{"title": "d1", "notes": "keep me"}, "confidential")
		f.execute(c, f.attach, id, map[string]any{"team": team})
		before := f.state("Ticket", id)
		ex := f.execute(c, f.remove, id, nil)
		if f.state("Ticket", id) != nil {
			t.Fatal("not deleted")
		}
		if st, rv := revertAs(c, ex, "deleted by mistake"); st != http.StatusOK {
			t.Fatalf("revert: %d %v", st, rv)
		}
		if after := f.state("Ticket", id); !reflect.DeepEqual(before, after) {
			t.Errorf("after revert\n%v\nwant\n%v", after, before)
		}
	})

	t.Run("create_link is unlinked", func(t *testing.T) {
		id := f.object("Ticket", map[string]any{"title": "l1"}, "")
		ex := f.execute(c, f.attach, id, map[string]any{"team": team})
		if st, rv := revertAs(c, ex, "wrong team"); st != http.StatusOK {
			t.Fatalf("revert: %d %v", st, rv)
		}
		if links := f.state("Ticket", id)["links"].([]map[string]any); len(links) != 0 {
			t.Errorf("links %v", links)
		}
	})

	t.Run("refused after a later edit, naming the object", func(t *testing.T) {
		id := f.object("Ticket", map[string]any{"title": "r1", "notes": "a"}, "")
		ex := f.execute(c, f.setTitle, id, map[string]any{"notes": "b"})
		f.execute(c, f.setTitle, id, map[string]any{"notes": "c"})
		st, e := revertAs(c, ex, "too late")
		raw, _ := json.Marshal(e)
		if st != http.StatusConflict || !strings.Contains(fmt.Sprint(e), id) || !strings.Contains(fmt.Sprint(e), "changed since: notes") || strings.Contains(string(raw), `\"c\"`) {
			t.Errorf("revert: %d %v: want 409 naming the object and the property that changed", st, e)
		}
		if n := f.state("Ticket", id)["properties"].(map[string]any)["notes"]; n != "c" {
			t.Errorf("notes = %v: the later edit was overwritten", n)
		}
	})

	t.Run("refused without justification, on a failed execution, for another user", func(t *testing.T) {
		id := f.object("Ticket", map[string]any{"title": "x1"}, "")
		ex := f.execute(c, f.setTitle, id, map[string]any{"notes": "n"})
		if st, e := revertAs(c, ex, " "); st != http.StatusBadRequest {
			t.Errorf("blank justification: %d %v", st, e)
		}
		st, b := c.do("POST", "/api/v1/ontology/actions/"+f.setTitle+"/execute",
			map[string]any{"target_object_id": id, "parameters": map[string]any{"priority": "not a number"}})
		var failed map[string]any
		_ = json.Unmarshal(b, &failed)
		data, _ := failed["error"].(map[string]any)["data"].(map[string]any)
		if st != http.StatusBadRequest || data["id"] == nil {
			t.Fatalf("failing execute: %d %s", st, b)
		}
		if st, e := revertAs(c, data["id"].(string), "nothing"); st != http.StatusConflict {
			t.Errorf("revert of a failed execution: %d %v", st, e)
		}
		c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "bob", "password": "bob-password-1"}, nil)
		bob := c.as("bob", "bob-password-1")
		if st, e := revertAs(bob, ex, "not mine"); st != http.StatusNotFound {
			t.Errorf("revert by another user: %d %v", st, e)
		}
		if n := f.state("Ticket", id)["properties"].(map[string]any)["notes"]; n != "n" {
			t.Errorf("notes = %v after refused reverts", n)
		}
	})

	t.Run("the action's policy holds for the reverting session", func(t *testing.T) {
		noGuests := f.action(map[string]any{"name": "set-notes-no-guests", "object_type_id": "Ticket", "operation_kind": "update_object",
			"inputs": []map[string]any{{"name": "notes", "type": "string"}}, "policy": map[string]any{"deny_guest_sessions": true},
			"config": map[string]any{"operation": map[string]any{"property_mappings": []map[string]any{{"property": "notes", "input": "notes"}}}}})
		id := f.object("Ticket", map[string]any{"title": "g1", "notes": "a"}, "")
		ex := f.execute(c, noGuests, id, map[string]any{"notes": "b"})
		var tok struct {
			Token string `json:"token"`
		}
		c.must(http.StatusCreated, "POST", "/api/v1/auth/tokens", map[string]any{"name": "guest", "guest": true}, &tok)
		guest := c
		guest.bearer = tok.Token
		if st, e := revertAs(guest, ex, "from a guest session"); st != http.StatusForbidden {
			t.Errorf("revert from a guest session: %d %v", st, e)
		}
		if n := f.state("Ticket", id)["properties"].(map[string]any)["notes"]; n != "b" {
			t.Errorf("notes = %v after the refused revert", n)
		}
	})

	t.Run("a revert notifies only through the action's revert notifications", func(t *testing.T) {
		note := func(title string) []map[string]any {
			return []map[string]any{{"title": title, "channels": []string{"in_app"}, "send_to_actor": true}}
		}
		mappings := map[string]any{"property_mappings": []map[string]any{{"property": "notes", "input": "notes"}}}
		inputs := []map[string]any{{"name": "notes", "type": "string"}}
		plain := f.action(map[string]any{"name": "set-notes-notified", "object_type_id": "Ticket", "operation_kind": "update_object",
			"inputs": inputs, "config": map[string]any{"operation": mappings, "notification_side_effects": note("notes set")}})
		announced := f.action(map[string]any{"name": "set-notes-revert-notified", "object_type_id": "Ticket", "operation_kind": "update_object",
			"inputs": inputs, "config": map[string]any{"operation": mappings, "notification_side_effects": note("notes set"),
				"revert_notification_side_effects": note("notes {{ parameters.notes }} of {{ object.properties.title }} reverted by {{ actor.username }}")}})
		titles := func() []string {
			var page struct {
				Data []struct {
					Title string `json:"title"`
				} `json:"data"`
			}
			c.must(http.StatusOK, "GET", "/api/v1/notifications?page_size=200", nil, &page)
			var out []string
			for _, n := range page.Data {
				out = append(out, n.Title)
			}
			return out
		}
		id := f.object("Ticket", map[string]any{"title": "n1", "notes": "a"}, "")
		ex := f.execute(c, plain, id, map[string]any{"notes": "b"})
		had := len(titles())
		if st, rv := revertAs(c, ex, "no announcement"); st != http.StatusOK || rv["notifications"] != nil {
			t.Fatalf("revert: %d %v", st, rv)
		}
		if got := titles(); len(got) != had {
			t.Errorf("a revert of an action without revert notifications notified: %v", got[:len(got)-had])
		}
		ex = f.execute(c, announced, id, map[string]any{"notes": "c"})
		had = len(titles())
		st, rv := revertAs(c, ex, "announced")
		outs, _ := rv["notifications"].([]any)
		if st != http.StatusOK || len(outs) != 1 || outs[0].(map[string]any)["status"] != "delivered" {
			t.Fatalf("revert: %d %v", st, rv)
		}
		got := titles()
		if len(got) != had+1 || !slices.Contains(got, "notes c of n1 reverted by admin") {
			t.Errorf("notifications after the revert: %q", got)
		}
	})

	t.Run("allow_revert false refuses; executions:revert lets another user revert; the answer lists what is not undone", func(t *testing.T) {
		mappings := map[string]any{"property_mappings": []map[string]any{{"property": "notes", "input": "notes"}}}
		inputs := []map[string]any{{"name": "notes", "type": "string"}}
		final := f.action(map[string]any{"name": "set-notes-final", "object_type_id": "Ticket", "operation_kind": "update_object",
			"inputs": inputs, "config": map[string]any{"operation": mappings, "allow_revert": false}})
		id := f.object("Ticket", map[string]any{"title": "p1", "notes": "a"}, "")
		ex := f.execute(c, final, id, map[string]any{"notes": "b"})
		if st, e := revertAs(c, ex, "not allowed"); st != http.StatusConflict || !strings.Contains(fmt.Sprint(e), "allow_revert") {
			t.Errorf("revert of an action with allow_revert false: %d %v", st, e)
		}
		notified := f.action(map[string]any{"name": "set-notes-told", "object_type_id": "Ticket", "operation_kind": "update_object",
			"inputs": inputs, "config": map[string]any{"operation": mappings,
				"notification_side_effects": []map[string]any{{"title": "told", "channels": []string{"in_app"}, "send_to_actor": true}}}})
		ex = f.execute(c, notified, id, map[string]any{"notes": "c"})
		c.must(http.StatusCreated, "POST", "/api/v1/users", map[string]any{"username": "reverter", "password": "reverter-password-1",
			"roles": []string{"editor"}, "permissions": []string{"executions:revert"}}, nil)
		reverter := c.as("reverter", "reverter-password-1")
		st, rv := revertAs(reverter, ex, "undo for a colleague")
		if st != http.StatusOK || rv["status"] != "succeeded" {
			t.Fatalf("revert with executions:revert: %d %v", st, rv)
		}
		if n := f.state("Ticket", id)["properties"].(map[string]any)["notes"]; n != "b" {
			t.Errorf("notes = %v after the revert, want b", n)
		}
		res, _ := rv["operation_result"].(map[string]any)
		undone := fmt.Sprint(res["not_undone"])
		if !strings.Contains(undone, "in_app notification sent to 1 recipient") {
			t.Errorf("not_undone = %s: the revert must list the notification it cannot take back (answer %v)", undone, rv)
		}
	})

	t.Run("a batch is reverted as a whole", func(t *testing.T) {
		ids := []string{f.object("Ticket", map[string]any{"title": "b1", "notes": "1"}, ""),
			f.object("Ticket", map[string]any{"title": "b2", "notes": "2"}, "")}
		var batch idOnly
		c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+f.setTitle+"/execute-batch", map[string]any{
			"items": []map[string]any{{"target_object_id": ids[0]}, {"target_object_id": ids[1]},
				{"target_object_id": ids[1], "parameters": map[string]any{"priority": "bad"}},
				// A second edit of the first ticket: undone first, then the first.
				{"target_object_id": ids[0], "parameters": map[string]any{"notes": "again"}}},
			"parameters": map[string]any{"notes": "batched"}}, &batch)
		var out struct {
			Items []struct {
				Index    int    `json:"index"`
				Status   string `json:"status"`
				RevertID string `json:"revert_execution_id"`
			} `json:"items"`
		}
		c.must(http.StatusOK, "POST", "/api/v1/ontology/executions/"+batch.ID+"/revert", map[string]any{"justification": "undo all"}, &out)
		if len(out.Items) != 4 || out.Items[0].Status != "succeeded" || out.Items[1].Status != "succeeded" ||
			out.Items[2].Status != "skipped" || out.Items[3].Status != "succeeded" || out.Items[0].RevertID == "" {
			t.Errorf("items %+v", out.Items)
		}
		for i, id := range ids {
			if n := f.state("Ticket", id)["properties"].(map[string]any)["notes"]; n != fmt.Sprint(i+1) {
				t.Errorf("ticket %d notes = %v", i+1, n)
			}
		}
		c.must(http.StatusOK, "POST", "/api/v1/ontology/executions/"+batch.ID+"/revert", map[string]any{"justification": "again"}, &out)
		if out.Items[0].Status != "reverted" {
			t.Errorf("a second batch revert: %+v", out.Items)
		}
	})
}
