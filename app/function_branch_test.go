package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// functionBranchAndRevert runs a function-backed action in a what-if
// branch (it computes its edits there, main is untouched, fetch is
// refused) and reverts a real run of it over HTTP. It runs after
// functionSuite, on its Ticket type.
func functionBranchAndRevert(t *testing.T, c devClient) {
	var obj idOnly
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": "branchy", "notes": "main"}}, &obj)
	e := fnEnv{c: c, obj: obj.ID}
	id := e.action("fn-branch", inline("javascript", `export default function (ctx) {
  const t = ctx.ontology.get(ctx.target.id);
  return { edits: [{ type: "update", object_id: ctx.target.id, properties: { notes: t.properties.notes + "+" + ctx.parameters.q } }] };
}`))
	w := wi{c}

	t.Run("a function in a what-if branch stacks and leaves main alone", func(t *testing.T) {
		m := w.mustWhatIf(http.StatusCreated, id, "", obj.ID, jsonMap{"q": "a"})
		branch := m["branch_id"].(string)
		m = w.mustWhatIf(http.StatusOK, id, branch, obj.ID, jsonMap{"q": "b"})
		ch := objectChange(t, m, obj.ID)
		if prop(ch["before"], "notes") != "main+a" || prop(ch["after"], "notes") != "main+a+b" {
			t.Errorf("the function saw %v and left %v", prop(ch["before"], "notes"), prop(ch["after"], "notes"))
		}
		if c.notes(obj.ID) != "main" {
			t.Errorf("main changed: %q", c.notes(obj.ID))
		}
	})

	// Without the network capability there is no fetch at all: a what-if
	// runs every function so, whatever its capabilities.
	t.Run("fetch is refused in a what-if", func(t *testing.T) {
		net := e.action("fn-net", map[string]any{"inline": map[string]any{"runtime": "javascript", "source": `export default async function (ctx) {
  await fetch("http://127.0.0.1:9/");
  return { edits: [] };
}`}, "capabilities": map[string]any{"network": true}})
		st, m := w.whatIf(net, "", obj.ID, jsonMap{"q": "x"})
		if st != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(m), "FunctionFailed") || !strings.Contains(fmt.Sprint(m), "'fetch' is not defined") {
			t.Errorf("what-if with fetch: %d %v", st, m)
		}
	})

	t.Run("a function's run is reverted", func(t *testing.T) {
		st, ex := e.execute(id, "real")
		if st != http.StatusOK || c.notes(obj.ID) != "main+real" {
			t.Fatalf("execute: %d %v", st, ex)
		}
		if st, rv := revertAs(c, ex["id"].(string), "undo the function"); st != http.StatusOK || rv["status"] != "succeeded" {
			t.Fatalf("revert: %d %v", st, rv)
		}
		if c.notes(obj.ID) != "main" {
			t.Errorf("after revert notes = %q", c.notes(obj.ID))
		}
	})
}
