package invokefunction

import (
	"encoding/json"
	"testing"

	"github.com/ontoflow/ontoflow/apperr"
)

// TestParseReturnStrict refuses return values in shapes the engine does
// not know, naming the member, and reads OpenFoundry's top-level form as
// edits of the target.
func TestParseReturnStrict(t *testing.T) {
	const target = "7f1c0a52-7d4e-4c38-9a51-0d1e9a3b2c10"
	refused := []struct{ ret, field string }{
		{`42`, "return"},
		{`"done"`, "return"},
		{`null`, "return"},
		{`[{"type":"update"}]`, "return"},
		{`{"object_patchh":{"priority":6}}`, "object_patchh"},
		{`{"edits":[{"type":"update","object_id":"x","properties":{"a":1}},{"type":"upsert","object_id":"x"}]}`, "edits[1]"},
		{`{"edits":[{"object_id":"x"}]}`, "edits[0]"},
		{`{"edits":[7]}`, "edits[0]"},
		{`{"edits":{"type":"update"}}`, "edits"},
		{`{"object_patch":{}}`, "object_patch"},
		{`{"delete_object":"yes"}`, "delete_object"},
		{`{"link":{"link_type":"relates"}}`, "link"},
		{`{"result":1,"output":2}`, "output"},
	}
	for _, c := range refused {
		_, _, err := parseReturn(json.RawMessage(c.ret), target)
		ae, ok := apperr.As(err)
		if !ok || ae.Code != apperr.FunctionResultInvalid || len(ae.Details) == 0 || ae.Details[0].Field != c.field {
			t.Errorf("%s: %v, want FunctionResultInvalid naming %s", c.ret, err, c.field)
		}
	}
	if _, _, err := parseReturn(json.RawMessage(`{"object_patch":{"a":1}}`), ""); apperr.CodeOf(err) != apperr.FunctionResultInvalid {
		t.Errorf("object_patch without a target: %v", err)
	}

	edits, result, err := parseReturn(json.RawMessage(`{"delete_object":true,"edits":[{"type":"create","object_type":"Ticket"}],
		"object_patch":{"priority":6},"link":{"link_type":"relates","target":"o2"},"output":{"n":1}}`), target)
	if err != nil {
		t.Fatal(err)
	}
	want := []FunctionEdit{
		{Type: FnEditUpdate, ObjectID: target, Field: "object_patch"},
		{Type: FnEditLink, LinkType: "relates", Source: target, Target: "o2", Field: "link"},
		{Type: FnEditCreate, ObjectType: "Ticket"},
		{Type: FnEditDelete, ObjectID: target, Field: "delete_object"},
	}
	if len(edits) != len(want) {
		t.Fatalf("edits = %+v", edits)
	}
	for i, w := range want {
		e := edits[i]
		if e.Type != w.Type || e.ObjectID != w.ObjectID || e.LinkType != w.LinkType || e.Source != w.Source || e.Target != w.Target ||
			e.ObjectType != w.ObjectType || e.Field != w.Field {
			t.Errorf("edit %d = %+v, want %+v", i, e, w)
		}
	}
	if edits[0].Properties["priority"] != json.Number("6") || string(result) != `{"n":1}` {
		t.Errorf("patch %v result %s", edits[0].Properties, result)
	}
	if edits, _, err := parseReturn(json.RawMessage(`{"delete_object":false,"result":null}`), target); err != nil || len(edits) != 0 {
		t.Errorf("delete_object false: %v %v", edits, err)
	}
}
