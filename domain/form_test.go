package domain

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func formFixture(t *testing.T) ([]InputField, FormSchema) {
	t.Helper()
	var d ActionDefinition
	dec := json.NewDecoder(strings.NewReader(`{"name":"a","operation_kind":"update_object",
		"inputs":[
			{"name":"status","type":"string","required":true},
			{"name":"reason","type":"string","display_name":"Reason","default_value":"none"},
			{"name":"priority","type":"integer"},
			{"name":"notes","type":"string"}
		],
		"form_schema":{
			"sections":[
				{"id":"main","title":"Main","parameters":["status","reason"],
				 "overrides":[
					{"conditions":[{"path":"target.properties.priority","operator":"greater_than","value":3}],"title":"Urgent","columns":2},
					{"conditions":[{"path":"target.marking","operator":"is","value":"confidential"}],"title":"Restricted"}
				 ]},
				{"id":"extra","parameters":["notes"],
				 "overrides":[{"conditions":[{"path":"parameters.status","operator":"is_not","value":"closed"}],"visible":false}]}
			],
			"parameter_overrides":[
				{"parameter":"reason","conditions":[{"path":"parameters.status","operator":"is","value":"closed"},
					{"path":"target.properties.priority","operator":"greater_than_or_equals","value":1}],
				 "required":true,"label":"Why closed?","default_value":"fixed"},
				{"parameter":"reason","conditions":[{"path":"parameters.status","operator":"is","value":"closed"}],"required":false,"description":"second"},
				{"parameter":"priority","conditions":[{"path":"target.id","operator":"not_exists"}],"visible":false}
			]}}`))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	sc := Scope(d, true, &ObjectTypeInfo{ID: typeA, Name: "Ticket", Properties: []PropertyInfo{{Name: "priority", Type: T(TypeInteger)}}}, nil)
	if err := d.FormSchema.Validate("form_schema", d.Inputs, sc, CheckEnv{}); err != nil {
		t.Fatalf("fixture form is invalid: %v", err)
	}
	return d.Inputs, d.FormSchema
}

// TestFormResolve applies every override whose conditions all hold, in
// definition order and member by member, for sections and parameters,
// over the inputs' base values.
func TestFormResolve(t *testing.T) {
	inputs, fs := formFixture(t)
	target := func(priority int, marking string) *EvalTarget {
		return &EvalTarget{ID: objA1, Marking: marking, Properties: map[string]any{"priority": json.Number(string(rune('0' + priority)))}}
	}
	cases := []struct {
		name   string
		params map[string]any
		target *EvalTarget
		check  func(t *testing.T, rf ResolvedForm)
	}{
		{"base values", map[string]any{"status": "open"}, target(1, "public"), func(t *testing.T, rf ResolvedForm) {
			r, _ := rf.Parameter("reason")
			if r.Required || r.Label != "Reason" || r.Default != "none" || !r.HasDefault || r.Overrides != nil || r.Section != "main" {
				t.Fatalf("reason = %+v", r)
			}
			if rf.Sections[0].Title != "Main" || rf.Sections[0].Columns != 1 {
				t.Fatalf("main = %+v", rf.Sections[0])
			}
			// status is not closed: the extra section and its notes are hidden.
			if n, _ := rf.Parameter("notes"); rf.Sections[1].Visible || n.Visible {
				t.Fatalf("extra section or notes visible: %+v %+v", rf.Sections[1], n)
			}
			if p, _ := rf.Parameter("priority"); !p.Visible || p.Section != "" {
				t.Fatalf("priority = %+v", p)
			}
		}},
		{"every matching override applies, a later one wins per member", map[string]any{"status": "closed"}, target(5, "confidential"), func(t *testing.T, rf ResolvedForm) {
			r, _ := rf.Parameter("reason")
			// Override 0 sets required, label and default; override 1, also
			// matching, sets required back to false and a description.
			if r.Required || r.Label != "Why closed?" || r.Default != "fixed" || !slices.Equal(r.Overrides, []int{0, 1}) || r.Description != "second" {
				t.Fatalf("reason = %+v", r)
			}
			// Both section overrides hold: the later title, the earlier columns.
			if rf.Sections[0].Title != "Restricted" || rf.Sections[0].Columns != 2 {
				t.Fatalf("main = %+v", rf.Sections[0])
			}
			if n, _ := rf.Parameter("notes"); !rf.Sections[1].Visible || !n.Visible {
				t.Fatal("extra section hidden although status is closed")
			}
		}},
		{"all conditions must hold", map[string]any{"status": "closed"}, target(0, "confidential"), func(t *testing.T, rf ResolvedForm) {
			r, _ := rf.Parameter("reason")
			if r.Required || !slices.Equal(r.Overrides, []int{1}) || r.Description != "second" || r.Label != "Reason" || r.Default != "none" {
				t.Fatalf("reason = %+v", r)
			}
			if rf.Sections[0].Title != "Restricted" {
				t.Fatalf("main = %+v", rf.Sections[0])
			}
		}},
		{"no target", map[string]any{"status": "closed"}, nil, func(t *testing.T, rf ResolvedForm) {
			if p, _ := rf.Parameter("priority"); p.Visible || !slices.Equal(p.Overrides, []int{2}) {
				t.Fatalf("priority = %+v", p)
			}
			if r, _ := rf.Parameter("reason"); !slices.Equal(r.Overrides, []int{1}) {
				t.Fatalf("reason = %+v", r)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rf := fs.Resolve(inputs, EvalEnv{Parameters: c.params, Target: c.target})
			if len(rf.Parameters) != len(inputs) {
				t.Fatalf("%d parameters resolved, want %d", len(rf.Parameters), len(inputs))
			}
			c.check(t, rf)
		})
	}
}
