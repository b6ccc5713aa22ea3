package domain

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/apperr"
)

const (
	typeA = "11111111-1111-4111-8111-111111111111"
	objA1 = "aaaaaaaa-0000-4000-8000-000000000001"
	objB1 = "bbbbbbbb-0000-4000-8000-000000000001"
)

// decode is how values reach Check in the service: JSON with UseNumber.
func decode(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func TestPropertyTypeCheck(t *testing.T) {
	resolver := func(typeID, id string) (bool, error) { return typeID == typeA && id == objA1, nil }
	env := CheckEnv{ResolveReference: resolver}
	cases := []struct {
		typ    PropertyType
		json   string
		ok     bool
		reason string // expected Detail.Reason when refused
	}{
		{T(TypeString), `"hello"`, true, ""},
		{T(TypeString), `""`, true, ""},
		{T(TypeString), `5`, false, "type"},
		{T(TypeString), `null`, false, "null"},

		{T(TypeInteger), `42`, true, ""},
		{T(TypeInteger), `-9223372036854775808`, true, ""},
		{T(TypeInteger), `2.0`, true, ""},
		{T(TypeInteger), `1e3`, true, ""},
		{T(TypeInteger), `2.5`, false, "not_integer"},
		{T(TypeInteger), `9223372036854775808`, false, "not_integer"},
		{T(TypeInteger), `"42"`, false, "type"},
		{T(TypeInteger), `true`, false, "type"},

		{T(TypeDouble), `3.25`, true, ""},
		{T(TypeDouble), `7`, true, ""},
		{T(TypeDouble), `-1e-5`, true, ""},
		{T(TypeDouble), `"3.2"`, false, "type"},
		{T(TypeDouble), `[1]`, false, "type"},

		{T(TypeBoolean), `true`, true, ""},
		{T(TypeBoolean), `false`, true, ""},
		{T(TypeBoolean), `"true"`, false, "type"},
		{T(TypeBoolean), `0`, false, "type"},

		{T(TypeDate), `"2024-02-29"`, true, ""},
		{T(TypeDate), `"2023-02-29"`, false, "format"},
		{T(TypeDate), `"2024-13-01"`, false, "format"},
		{T(TypeDate), `"2024-1-01"`, false, "format"},
		{T(TypeDate), `"2024-01-01T00:00:00Z"`, false, "format"},
		{T(TypeDate), `20240101`, false, "type"},

		{T(TypeTimestamp), `"2024-05-01T12:00:00Z"`, true, ""},
		{T(TypeTimestamp), `"2024-05-01T12:00:00.123456+02:00"`, true, ""},
		{T(TypeTimestamp), `"2024-05-01 12:00:00"`, false, "format"},
		{T(TypeTimestamp), `"2024-05-01"`, false, "format"},
		{T(TypeTimestamp), `"2024-02-30T12:00:00Z"`, false, "format"},
		{T(TypeTimestamp), `1714564800`, false, "type"},

		{T(TypeJSON), `{"a":[1,2,{"b":null}]}`, true, ""},
		{T(TypeJSON), `"x"`, true, ""},
		{T(TypeJSON), `12`, true, ""},
		{T(TypeJSON), `null`, false, "null"},

		{ArrayOf(T(TypeInteger)), `[1,2,3]`, true, ""},
		{ArrayOf(T(TypeInteger)), `[]`, true, ""},
		{ArrayOf(T(TypeInteger)), `[1,"2"]`, false, "type"},
		{ArrayOf(T(TypeInteger)), `[1,null]`, false, "null"},
		{ArrayOf(T(TypeInteger)), `1`, false, "type"},
		{ArrayOf(ArrayOf(T(TypeString))), `[["a"],[]]`, true, ""},
		{ArrayOf(ArrayOf(T(TypeString))), `[["a"],[1]]`, false, "type"},

		{T(TypeVector), `[0.1, 2, -3e2]`, true, ""},
		{T(TypeVector), `[]`, false, "empty"},
		{T(TypeVector), `[1,"x"]`, false, "type"},
		{T(TypeVector), `{"a":1}`, false, "type"},
		{PropertyType{Base: TypeVector, Dimension: 2}, `[1,2]`, true, ""},
		{PropertyType{Base: TypeVector, Dimension: 2}, `[1,2,3]`, false, "dimension"},

		{T(TypeReference), `"` + objB1 + `"`, true, ""},
		{T(TypeReference), `"not-a-uuid"`, false, "format"},
		{T(TypeReference), `7`, false, "type"},
		{ReferenceTo(typeA), `"` + objA1 + `"`, true, ""},
		{ReferenceTo(typeA), `"` + objB1 + `"`, false, "not_found"},

		{T(TypeGeoPoint), `{"lat": 48.85, "lon": 2.35}`, true, ""},
		{T(TypeGeoPoint), `{"lat": -90, "lon": 180}`, true, ""},
		{T(TypeGeoPoint), `{"lat": 91, "lon": 0}`, false, "range"},
		{T(TypeGeoPoint), `{"lat": 0, "lon": -180.5}`, false, "range"},
		{T(TypeGeoPoint), `{"lat": "1", "lon": 0}`, false, "type"},
		{T(TypeGeoPoint), `{"lat": 1}`, false, "type"},
		{T(TypeGeoPoint), `{"lat": 1, "lon": 2, "alt": 3}`, false, "unknown_member"},
		{T(TypeGeoPoint), `[1,2]`, false, "type"},

		{T(TypeMediaReference), `"https://cdn.example.com/a.png"`, true, ""},
		{T(TypeMediaReference), `"s3://bucket/key"`, true, ""},
		{T(TypeMediaReference), `{"uri": "media://123"}`, true, ""},
		{T(TypeMediaReference), `{"url": "https://x/y", "mime_type": "image/png"}`, true, ""},
		{T(TypeMediaReference), `""`, false, "format"},
		{T(TypeMediaReference), `"has space"`, false, "format"},
		{T(TypeMediaReference), `{"uri": ""}`, false, "format"},
		{T(TypeMediaReference), `{"name": "x"}`, false, "format"},
		{T(TypeMediaReference), `{"uri": 5}`, false, "format"},
		{T(TypeMediaReference), `["https://x"]`, false, "type"},
		{T(TypeMediaReference), `5`, false, "type"},

		{T(TypeMarking), `"public"`, true, ""},
		{T(TypeMarking), `"pii"`, true, ""},
		{T(TypeMarking), `"secret"`, false, "unknown_marking"},
		{T(TypeMarking), `1`, false, "type"},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.typ.Base] = true
		name := c.typ.String() + " " + c.json
		t.Run(name, func(t *testing.T) {
			err := c.typ.Check("props.f", decode(t, c.json), env)
			if c.ok {
				if err != nil {
					t.Fatalf("want accepted, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want refused")
			}
			ae, ok := apperr.As(err)
			if !ok || ae.Code != apperr.InvalidProperty {
				t.Fatalf("want InvalidProperty, got %v", err)
			}
			if !strings.HasPrefix(ae.Message, "props.f") {
				t.Errorf("message %q does not name the field", ae.Message)
			}
			if len(ae.Details) != 1 || !strings.HasPrefix(ae.Details[0].Field, "props.f") || ae.Details[0].Reason != c.reason {
				t.Errorf("details = %+v, want reason %q", ae.Details, c.reason)
			}
		})
	}
	for _, b := range BaseTypes {
		if !covered[b] {
			t.Errorf("base type %s has no test case", b)
		}
	}
}

func TestCheckElementFieldNames(t *testing.T) {
	err := ArrayOf(T(TypeDate)).Check("parameters.days", decode(t, `["2024-01-01","2024-02-31"]`), CheckEnv{})
	ae, _ := apperr.As(err)
	if ae == nil || ae.Details[0].Field != "parameters.days[1]" || !strings.Contains(ae.Message, "YYYY-MM-DD") {
		t.Fatalf("got %v", err)
	}
}

func TestCheckGoNativeValues(t *testing.T) {
	env := CheckEnv{}
	for _, c := range []struct {
		typ PropertyType
		v   any
		ok  bool
	}{
		{T(TypeInteger), 5, true},
		{T(TypeInteger), int64(-5), true},
		{T(TypeInteger), float64(5), true},
		{T(TypeInteger), 5.5, false},
		{T(TypeInteger), uint64(1 << 63), false},
		{T(TypeDouble), float32(1.5), true},
		{T(TypeDouble), 3, true},
		{ArrayOf(T(TypeString)), []string{"a", "b"}, true},
		{ArrayOf(T(TypeString)), []int{1}, false},
		{T(TypeVector), []float64{1, 2}, true},
		{T(TypeJSON), map[string]any{"a": []any{1.5, "x"}}, true},
		{T(TypeJSON), make(chan int), false},
		{T(TypeString), []byte("x"), false},
	} {
		err := c.typ.Check("f", c.v, env)
		if (err == nil) != c.ok {
			t.Errorf("%s %#v: err=%v, want ok=%v", c.typ, c.v, err, c.ok)
		}
	}
}

func TestCheckMarkingsConfigured(t *testing.T) {
	env := CheckEnv{Markings: []string{"low", "high"}}
	if err := T(TypeMarking).Check("m", "high", env); err != nil {
		t.Fatal(err)
	}
	err := T(TypeMarking).Check("m", "public", env)
	if err == nil || !strings.Contains(err.Error(), "low, high") {
		t.Fatalf("want refusal naming the configured markings, got %v", err)
	}
}

func TestCheckResolverError(t *testing.T) {
	boom := errors.New("db down")
	env := CheckEnv{ResolveReference: func(string, string) (bool, error) { return false, boom }}
	if err := ReferenceTo(typeA).Check("r", objA1, env); !errors.Is(err, boom) {
		t.Fatalf("want resolver error, got %v", err)
	}
}

func TestPropertyTypeJSON(t *testing.T) {
	var in struct {
		A PropertyType `json:"a"`
		B PropertyType `json:"b"`
		C PropertyType `json:"c"`
	}
	src := `{"a":"string","b":{"type":"array","element_type":"integer"},"c":{"type":"reference","object_type_id":"` + typeA + `"}}`
	if err := json.Unmarshal([]byte(src), &in); err != nil {
		t.Fatal(err)
	}
	if !in.A.Equal(T(TypeString)) || !in.B.Equal(ArrayOf(T(TypeInteger))) || !in.C.Equal(ReferenceTo(typeA)) {
		t.Fatalf("decoded %+v", in)
	}
	out, _ := json.Marshal(in.B)
	if string(out) != `{"type":"array","element_type":{"type":"integer"}}` {
		t.Fatalf("encoded %s", out)
	}
	var bad PropertyType
	if err := json.Unmarshal([]byte(`{"type":"string","extra":1}`), &bad); err == nil {
		t.Fatal("unknown member of a property type accepted")
	}
}

func TestPropertyTypeValidate(t *testing.T) {
	cases := []struct {
		typ   PropertyType
		field string // "" = valid
	}{
		{T(TypeString), ""},
		{ArrayOf(ReferenceTo(typeA)), ""},
		{PropertyType{Base: TypeVector, Dimension: 3}, ""},
		{PropertyType{}, "t"},
		{T("text"), "t"},
		{T(TypeArray), "t.element_type"},
		{ArrayOf(T("nope")), "t.element_type"},
		{PropertyType{Base: TypeString, ElementType: &PropertyType{Base: TypeString}}, "t.element_type"},
		{PropertyType{Base: TypeString, ObjectTypeID: typeA}, "t.object_type_id"},
		{PropertyType{Base: TypeReference, ObjectTypeID: "x"}, "t.object_type_id"},
		{PropertyType{Base: TypeInteger, Dimension: 2}, "t.dimension"},
		{PropertyType{Base: TypeVector, Dimension: -1}, "t.dimension"},
	}
	for _, c := range cases {
		err := c.typ.Validate("t")
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: unexpected %v", c.typ, err)
			}
			continue
		}
		ae, ok := apperr.As(err)
		if !ok || ae.Code != apperr.InvalidDefinition || ae.Details[0].Field != c.field {
			t.Errorf("%+v: got %v, want InvalidDefinition at %s", c.typ, err, c.field)
		}
	}
}

func TestAssignableAndNormalize(t *testing.T) {
	if !T(TypeInteger).AssignableTo(T(TypeDouble)) || T(TypeDouble).AssignableTo(T(TypeInteger)) {
		t.Error("integer/double assignability")
	}
	if !ReferenceTo(typeA).AssignableTo(T(TypeReference)) || T(TypeReference).AssignableTo(ReferenceTo(typeA)) {
		t.Error("reference assignability")
	}
	if got := T(TypeInteger).Normalize(json.Number("2.0")); got != int64(2) {
		t.Errorf("normalize integer = %#v", got)
	}
	if got := ArrayOf(T(TypeDouble)).Normalize([]any{json.Number("1.5")}).([]any)[0]; got != 1.5 {
		t.Errorf("normalize array = %#v", got)
	}
	up := "AAAAAAAA-0000-4000-8000-00000000000B"
	if got := T(TypeReference).Normalize(up); got != strings.ToLower(up) {
		t.Errorf("normalize reference = %#v, want it lower-cased", got)
	}
	if got := ArrayOf(T(TypeReference)).Normalize([]any{up}).([]any)[0]; got != strings.ToLower(up) {
		t.Errorf("normalize array of references = %#v", got)
	}
	if got := T(TypeReference).Normalize("Not-A-UUID"); got != "Not-A-UUID" {
		t.Errorf("normalize of a non-UUID changed it: %#v", got)
	}
}
