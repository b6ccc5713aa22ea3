package domain

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fuzzDecode decodes s as the API does; ok is false for non-JSON input.
func fuzzDecode(s string) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// FuzzPropertyTypeCheck checks arbitrary values against arbitrary types:
// no panic, every refusal is an InvalidProperty error naming the field, and
// a value that passes still passes after Normalize (what is stored must be
// readable back).
func FuzzPropertyTypeCheck(f *testing.F) {
	seeds := []struct{ typ, val string }{
		{`"string"`, `"x"`}, {`"integer"`, `12`}, {`"integer"`, `1e3`}, {`"integer"`, `2.5`},
		{`"integer"`, `9223372036854775808`}, {`"double"`, `1e308`}, {`"double"`, `-0.0`},
		{`"boolean"`, `true`}, {`"date"`, `"2024-02-29"`}, {`"date"`, `"2023-02-29"`},
		{`"timestamp"`, `"2024-01-01T00:00:00+01:00"`}, {`"json"`, `{"a":[1,null]}`},
		{`{"type":"array","element_type":"integer"}`, `[1,2,"3"]`},
		{`{"type":"array","element_type":{"type":"array","element_type":"string"}}`, `[["a"],[]]`},
		{`{"type":"vector","dimension":2}`, `[1,2]`}, {`"vector"`, `[]`},
		{`{"type":"reference","object_type_id":"11111111-1111-4111-8111-111111111111"}`, `"aaaaaaaa-0000-4000-8000-000000000001"`},
		{`"geo_point"`, `{"lat":91,"lon":0}`}, {`"geo_point"`, `{"lat":1,"lon":2}`},
		{`"media_reference"`, `{"uri":"s3://b/k"}`}, {`"media_reference"`, `"https://x/y.png"`},
		{`"marking"`, `"pii"`}, {`"marking"`, `"secret"`}, {`"nope"`, `1`}, {`{"type":"array"}`, `[1]`},
	}
	for _, s := range seeds {
		f.Add(s.typ, s.val)
	}
	resolve := func(typeID, id string) (bool, error) { return len(id)%2 == 0, nil }
	f.Fuzz(func(t *testing.T, typJSON, valJSON string) {
		var typ PropertyType
		if err := json.Unmarshal([]byte(typJSON), &typ); err != nil {
			return
		}
		_ = typ.String()
		defErr := typ.Validate("type")
		v, ok := fuzzDecode(valJSON)
		if !ok {
			return
		}
		env := CheckEnv{ResolveReference: resolve}
		err := typ.Check("properties.p", v, env)
		if err != nil {
			ae, isApp := err.(interface{ Error() string })
			if !isApp || !bytes.Contains([]byte(ae.Error()), []byte("properties.p")) {
				t.Fatalf("refusal %q of %s as %s does not name the field", err, valJSON, typJSON)
			}
			return
		}
		if defErr != nil {
			// An invalid type may still accept values (e.g. a too-deep
			// array of strings); definitions never store one.
			return
		}
		n := typ.Normalize(v)
		if err := typ.Check("properties.p", n, env); err != nil {
			t.Fatalf("%s passes as %s but its normalized form %#v does not: %v", valJSON, typJSON, n, err)
		}
		if b, err := json.Marshal(n); err != nil {
			t.Fatalf("normalized %#v does not encode: %v", n, err)
		} else if back, ok := fuzzDecode(string(b)); !ok {
			t.Fatalf("normalized %s does not decode", b)
		} else if err := typ.Check("properties.p", back, env); err != nil {
			t.Fatalf("%s survives a JSON round trip as %s, which %s refuses: %v", valJSON, b, typJSON, err)
		}
	})
}

// FuzzConditionEvaluate evaluates arbitrary conditions over arbitrary
// parameters and target properties: no panic, not_exists is the negation
// of exists, is_not the negation of is, and definition checks never panic.
func FuzzConditionEvaluate(f *testing.F) {
	seeds := []struct{ path, op, val, params string }{
		{"parameters.a", OpExists, ``, `{"a":1}`},
		{"parameters.a", OpIs, `1.0`, `{"a":1}`},
		{"parameters.a", OpIsNot, `"x"`, `{"a":null}`},
		{"parameters.a", OpIncludes, `"b"`, `{"a":["a","b"]}`},
		{"parameters.a", OpIncludes, `"ell"`, `{"a":"hello"}`},
		{"parameters.a", OpGreaterThan, `"2024-01-01"`, `{"a":"2024-01-01T00:00:01Z"}`},
		{"parameters.a", OpGreaterThanOrEquals, `"confidential"`, `{"a":"pii"}`},
		{"parameters.a", OpLessThan, `1e400`, `{"a":123456789012345678901234567890}`},
		{"parameters.a", OpLessThanOrEquals, `{"x":1}`, `{"a":{"x":1}}`},
		{"target.properties.a", OpNotExists, ``, `{"a":[[[[1]]]]}`},
		{"target.marking", OpIs, `"public"`, `{}`},
		{"target.id", OpIs, `"aaaaaaaa-0000-4000-8000-000000000001"`, `{}`},
		{"parameters.", "nope", `1`, `{"":1}`},
	}
	for _, s := range seeds {
		f.Add(s.path, s.op, s.val, s.params)
	}
	f.Fuzz(func(t *testing.T, path, op, valJSON, paramsJSON string) {
		pv, ok := fuzzDecode(paramsJSON)
		if !ok {
			return
		}
		params, _ := pv.(map[string]any)
		var val any
		if valJSON != "" {
			if val, ok = fuzzDecode(valJSON); !ok {
				return
			}
		}
		env := EvalEnv{Parameters: params, Target: &EvalTarget{ID: "aaaaaaaa-0000-4000-8000-000000000001",
			Marking: "public", CreatedBy: "u", Properties: params}}
		c := Condition{Path: path, Operator: op, Value: val}
		got := c.Evaluate(env)
		switch op {
		case OpExists, OpNotExists:
			opp := Condition{Path: path, Operator: OpNotExists}
			if op == OpNotExists {
				opp.Operator = OpExists
			}
			if opp.Evaluate(env) == got {
				t.Fatalf("%s and its negation agree on %s over %s", op, path, paramsJSON)
			}
		case OpIs, OpIsNot:
			opp := Condition{Path: path, Operator: OpIsNot, Value: val}
			if op == OpIsNot {
				opp.Operator = OpIs
			}
			if opp.Evaluate(env) == got {
				t.Fatalf("%s and its negation agree on %s %s over %s", op, path, valJSON, paramsJSON)
			}
		}
		_ = EvaluateAll([]Condition{c, c}, EvalEnv{Parameters: params})
		sc := ConditionScope{Inputs: map[string]PropertyType{}, HasTarget: true, TargetProperties: map[string]PropertyType{}}
		for k, v := range params {
			typ := T(TypeJSON)
			switch v.(type) {
			case string:
				typ = T(TypeString)
			case json.Number:
				typ = T(TypeDouble)
			case []any:
				typ = ArrayOf(T(TypeString))
			}
			sc.Inputs[k], sc.TargetProperties[k] = typ, typ
		}
		_ = c.Validate("form_schema.parameter_overrides[0].conditions[0]", sc)
	})
}
