package console

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"

	"github.com/ontoflow/ontoflow/domain"
)

func TestParseParams(t *testing.T) {
	inputs := []domain.InputField{
		{Name: "s", Type: domain.T(domain.TypeString)}, {Name: "n", Type: domain.T(domain.TypeInteger)},
		{Name: "b", Type: domain.T(domain.TypeBoolean)}, {Name: "ts", Type: domain.T(domain.TypeTimestamp)},
		{Name: "g", Type: domain.T(domain.TypeGeoPoint)}, {Name: "l", Type: domain.ArrayOf(domain.T(domain.TypeInteger))},
		{Name: "j", Type: domain.T(domain.TypeJSON)}, {Name: "bad", Type: domain.T(domain.TypeJSON)},
		{Name: "empty", Type: domain.T(domain.TypeString)},
	}
	form := url.Values{"p.s": {" hi "}, "p.n": {"12345678901234567890"}, "p.b": {"false", "true"},
		"p.ts": {"2026-01-02T03:04"}, "p.g.lat": {"1.5"}, "p.g.lon": {"-2"}, "p.l": {"1\n\n2\r\n"},
		"p.j": {`{"a":[1]}`}, "p.bad": {"{"}, "p.empty": {""}}
	got, bad := parseParams(inputs, form)
	want := map[string]any{"s": " hi ", "n": json.Number("12345678901234567890"), "b": true, "ts": "2026-01-02T03:04:00Z",
		"g": map[string]any{"lat": json.Number("1.5"), "lon": json.Number("-2")},
		"l": []any{json.Number("1"), json.Number("2")}, "j": map[string]any{"a": []any{json.Number("1")}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("params = %#v\nwant %#v", got, want)
	}
	if len(bad) != 1 || bad["bad"] == "" {
		t.Errorf("bad = %v", bad)
	}
}
