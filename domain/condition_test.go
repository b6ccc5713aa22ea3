package domain

import (
	"encoding/json"
	"testing"

	"github.com/ontoflow/ontoflow/apperr"
)

func evalEnv(t testing.TB) EvalEnv {
	return EvalEnv{
		Parameters: decode(t, `{
			"name": "Widget", "count": 5, "ratio": 0.5, "flag": true,
			"tags": ["red", "blue"], "nums": [1, 2.0], "day": "2024-03-01",
			"at": "2024-03-01T10:00:00+02:00", "level": "confidential",
			"empty": null, "obj": {"a": 1}
		}`).(map[string]any),
		Target: &EvalTarget{
			ID: objA1, Marking: "confidential", CreatedBy: "user-1",
			Properties: decode(t, `{"status": "open", "priority": 3, "owners": ["ann"]}`).(map[string]any),
		},
	}
}

func TestConditionOperators(t *testing.T) {
	env := evalEnv(t)
	cases := []struct {
		path, op string
		value    string // JSON, "" = none
		want     bool
	}{
		{"parameters.name", OpExists, "", true},
		{"parameters.missing", OpExists, "", false},
		{"parameters.empty", OpExists, "", false},
		{"target.properties.status", OpExists, "", true},
		{"target.id", OpExists, "", true},

		{"parameters.missing", OpNotExists, "", true},
		{"parameters.empty", OpNotExists, "", true},
		{"parameters.name", OpNotExists, "", false},

		{"parameters.name", OpIs, `"Widget"`, true},
		{"parameters.name", OpIs, `"widget"`, false},
		{"parameters.count", OpIs, `5.0`, true},
		{"parameters.count", OpIs, `"5"`, false},
		{"parameters.flag", OpIs, `true`, true},
		{"parameters.tags", OpIs, `["red","blue"]`, true},
		{"parameters.tags", OpIs, `["blue","red"]`, false},
		{"parameters.obj", OpIs, `{"a":1.0}`, true},
		{"parameters.at", OpIs, `"2024-03-01T08:00:00Z"`, true},
		{"parameters.missing", OpIs, `"x"`, false},
		{"target.marking", OpIs, `"confidential"`, true},
		{"target.created_by", OpIs, `"user-1"`, true},
		{"target.properties.status", OpIs, `"open"`, true},

		{"parameters.name", OpIsNot, `"Other"`, true},
		{"parameters.name", OpIsNot, `"Widget"`, false},
		{"parameters.missing", OpIsNot, `"x"`, true},
		{"target.properties.priority", OpIsNot, `3`, false},

		{"parameters.tags", OpIncludes, `"red"`, true},
		{"parameters.tags", OpIncludes, `"green"`, false},
		{"parameters.nums", OpIncludes, `2`, true},
		{"parameters.name", OpIncludes, `"idg"`, true},
		{"parameters.name", OpIncludes, `"xyz"`, false},
		{"parameters.name", OpIncludes, `1`, false},
		{"parameters.count", OpIncludes, `5`, false},
		{"parameters.missing", OpIncludes, `"a"`, false},
		{"target.properties.owners", OpIncludes, `"ann"`, true},

		{"parameters.count", OpGreaterThan, `4`, true},
		{"parameters.count", OpGreaterThan, `5`, false},
		{"parameters.ratio", OpGreaterThan, `0.25`, true},
		{"parameters.day", OpGreaterThan, `"2024-02-29"`, true},
		{"parameters.at", OpGreaterThan, `"2024-03-01T09:00:00Z"`, false}, // 08:00Z
		{"parameters.name", OpGreaterThan, `"Apple"`, true},
		{"parameters.level", OpGreaterThan, `"public"`, true}, // by rank, not lexically
		{"parameters.count", OpGreaterThan, `"4"`, false},
		{"parameters.flag", OpGreaterThan, `false`, false},
		{"parameters.missing", OpGreaterThan, `1`, false},
		{"target.marking", OpGreaterThan, `"public"`, true},

		{"parameters.count", OpGreaterThanOrEquals, `5`, true},
		{"parameters.count", OpGreaterThanOrEquals, `6`, false},
		{"parameters.day", OpGreaterThanOrEquals, `"2024-03-01"`, true},

		{"parameters.count", OpLessThan, `6`, true},
		{"parameters.count", OpLessThan, `5`, false},
		{"parameters.at", OpLessThan, `"2024-03-01T08:00:01Z"`, true},
		{"parameters.level", OpLessThan, `"pii"`, true},
		{"target.properties.priority", OpLessThan, `3`, false},

		{"parameters.count", OpLessThanOrEquals, `5`, true},
		{"parameters.count", OpLessThanOrEquals, `4.99`, false},
		{"parameters.name", OpLessThanOrEquals, `"Widget"`, true},

		{"parameters.name", "matches", `"W"`, false},
		{"nowhere.name", OpExists, "", false},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.op] = true
		cond := Condition{Path: c.path, Operator: c.op}
		if c.value != "" {
			cond.Value = decode(t, c.value)
		}
		if got := cond.Evaluate(env); got != c.want {
			t.Errorf("%s %s %s = %v, want %v", c.path, c.op, c.value, got, c.want)
		}
	}
	for _, op := range Operators {
		if !seen[op] {
			t.Errorf("operator %s has no case", op)
		}
	}
}

func TestConditionsWithoutTarget(t *testing.T) {
	env := EvalEnv{Parameters: map[string]any{"a": "x"}}
	for _, c := range []Condition{
		{Path: "target.id", Operator: OpExists},
		{Path: "target.properties.status", Operator: OpIs, Value: "open"},
		{Path: "target.marking", Operator: OpGreaterThan, Value: "public"},
	} {
		if c.Evaluate(env) {
			t.Errorf("%+v holds without a target", c)
		}
	}
	if !(Condition{Path: "target.id", Operator: OpNotExists}).Evaluate(env) {
		t.Error("not_exists on target.id without target should hold")
	}
}

func TestEvaluateAll(t *testing.T) {
	env := evalEnv(t)
	yes := Condition{Path: "parameters.name", Operator: OpExists}
	no := Condition{Path: "parameters.missing", Operator: OpExists}
	if !EvaluateAll(nil, env) || !EvaluateAll([]Condition{yes, yes}, env) || EvaluateAll([]Condition{yes, no}, env) {
		t.Fatal("EvaluateAll must require every condition")
	}
}

func TestConditionValidate(t *testing.T) {
	sc := ConditionScope{
		Inputs: map[string]PropertyType{
			"name": T(TypeString), "count": T(TypeInteger), "tags": ArrayOf(T(TypeString)),
			"flag": T(TypeBoolean), "blob": T(TypeJSON),
		},
		HasTarget:        true,
		TargetProperties: map[string]PropertyType{"status": T(TypeString), "due": T(TypeDate)},
	}
	noTarget := sc
	noTarget.HasTarget = false
	cases := []struct {
		name  string
		c     Condition
		sc    ConditionScope
		field string // "" valid
	}{
		{"exists ok", Condition{Path: "parameters.name", Operator: OpExists}, sc, ""},
		{"is ok", Condition{Path: "parameters.count", Operator: OpIs, Value: json.Number("3")}, sc, ""},
		{"includes array ok", Condition{Path: "parameters.tags", Operator: OpIncludes, Value: "x"}, sc, ""},
		{"includes string ok", Condition{Path: "target.properties.status", Operator: OpIncludes, Value: "op"}, sc, ""},
		{"date compare ok", Condition{Path: "target.properties.due", Operator: OpLessThan, Value: "2024-01-01"}, sc, ""},
		{"marking compare ok", Condition{Path: "target.marking", Operator: OpGreaterThanOrEquals, Value: "confidential"}, sc, ""},
		{"target id ok", Condition{Path: "target.id", Operator: OpIs, Value: objA1}, sc, ""},
		{"created_by ok", Condition{Path: "target.created_by", Operator: OpIsNot, Value: "u"}, sc, ""},
		{"unknown input", Condition{Path: "parameters.nope", Operator: OpExists}, sc, "c.path"},
		{"unknown property", Condition{Path: "target.properties.nope", Operator: OpExists}, sc, "c.path"},
		{"unknown path", Condition{Path: "actor.id", Operator: OpExists}, sc, "c.path"},
		{"unknown target member", Condition{Path: "target.name", Operator: OpExists}, sc, "c.path"},
		{"target without target", Condition{Path: "target.id", Operator: OpExists}, noTarget, "c.path"},
		{"unknown operator", Condition{Path: "parameters.name", Operator: "like", Value: "x"}, sc, "c.operator"},
		{"exists with value", Condition{Path: "parameters.name", Operator: OpExists, Value: "x"}, sc, "c.value"},
		{"is without value", Condition{Path: "parameters.name", Operator: OpIs}, sc, "c.value"},
		{"is wrong type", Condition{Path: "parameters.count", Operator: OpIs, Value: "three"}, sc, "c.value"},
		{"includes element type", Condition{Path: "parameters.tags", Operator: OpIncludes, Value: json.Number("1")}, sc, "c.value"},
		{"includes on integer", Condition{Path: "parameters.count", Operator: OpIncludes, Value: json.Number("1")}, sc, "c.operator"},
		{"includes string needs string", Condition{Path: "parameters.name", Operator: OpIncludes, Value: true}, sc, "c.value"},
		{"compare boolean", Condition{Path: "parameters.flag", Operator: OpGreaterThan, Value: true}, sc, "c.operator"},
		{"compare json", Condition{Path: "parameters.blob", Operator: OpLessThan, Value: "x"}, sc, "c.operator"},
		{"compare wrong value", Condition{Path: "target.properties.due", Operator: OpLessThan, Value: "soon"}, sc, "c.value"},
		{"marking unknown", Condition{Path: "target.marking", Operator: OpIs, Value: "secret"}, sc, "c.value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.c.Validate("c", c.sc)
			if c.field == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			ae, ok := apperr.As(err)
			if !ok || ae.Code != apperr.InvalidDefinition {
				t.Fatalf("want InvalidDefinition, got %v", err)
			}
			if ae.Details[0].Field != c.field {
				t.Fatalf("field = %s, want %s (%s)", ae.Details[0].Field, c.field, ae.Message)
			}
		})
	}
}

func TestValuesEqualLargeIntegers(t *testing.T) {
	if ValuesEqual(json.Number("9007199254740993"), json.Number("9007199254740992")) {
		t.Fatal("large integers must compare exactly")
	}
	if !ValuesEqual(json.Number("1e2"), int64(100)) {
		t.Fatal("1e2 == 100")
	}
	if ValuesEqual(json.Number("1e99999"), json.Number("1e99999")) {
		t.Fatal("numbers with huge exponents are not compared")
	}
}
