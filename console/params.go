package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/ontoflow/ontoflow/domain"
)

// paramPrefix names a parameter's form field: "p.<input name>" (geo
// points add ".lat" and ".lon").
const paramPrefix = "p."

func fieldID(name string) string { return "p-" + name }

// parseParams turns the posted form into the parameters of an execution
// request: an empty field is not supplied (so the engine applies its
// default), other values are read as the input's type. Values the console
// cannot read (JSON that does not parse) are reported per input; the
// engine type-checks the rest.
func parseParams(inputs []domain.InputField, form url.Values) (map[string]any, map[string]string) {
	params := map[string]any{}
	bad := map[string]string{}
	for _, in := range inputs {
		v, ok, err := parseField(in.Type, paramPrefix+in.Name, form)
		if err != nil {
			bad[in.Name] = err.Error()
			continue
		}
		if ok {
			params[in.Name] = v
		}
	}
	return params, bad
}

func parseField(t domain.PropertyType, key string, form url.Values) (any, bool, error) {
	switch t.Base {
	case domain.TypeGeoPoint:
		lat, lon := strings.TrimSpace(form.Get(key+".lat")), strings.TrimSpace(form.Get(key+".lon"))
		if lat == "" && lon == "" {
			return nil, false, nil
		}
		return map[string]any{"lat": number(lat), "lon": number(lon)}, true, nil
	case domain.TypeBoolean:
		// A checkbox posts a hidden "false" and, when ticked, "true" after it.
		vs := form[key]
		if len(vs) == 0 {
			return nil, false, nil
		}
		return vs[len(vs)-1] == "true", true, nil
	case domain.TypeArray:
		return parseList(t, form.Get(key))
	}
	raw := form.Get(key)
	if strings.TrimSpace(raw) == "" {
		return nil, false, nil
	}
	v, err := parseScalar(t, raw)
	return v, err == nil, err
}

// parseList reads an array field: one element per line.
func parseList(t domain.PropertyType, raw string) (any, bool, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, false, nil
	}
	elem := domain.T(domain.TypeString)
	if t.ElementType != nil {
		elem = *t.ElementType
	}
	out := []any{}
	for i, line := range strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		v, err := parseScalar(elem, line)
		if err != nil {
			return nil, false, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, v)
	}
	return out, true, nil
}

// parseScalar reads one text value as type t. Numbers stay exact
// (json.Number); a datetime-local value (no zone) is taken as UTC.
func parseScalar(t domain.PropertyType, raw string) (any, error) {
	s := strings.TrimSpace(raw)
	switch t.Base {
	case domain.TypeInteger, domain.TypeDouble:
		return number(s), nil
	case domain.TypeBoolean:
		return s == "true" || s == "on", nil
	case domain.TypeTimestamp:
		if len(s) == len("2006-01-02T15:04") {
			s += ":00Z"
		} else if len(s) == len("2006-01-02T15:04:05") {
			s += "Z"
		}
		return s, nil
	case domain.TypeJSON, domain.TypeVector, domain.TypeGeoPoint, domain.TypeArray:
		return parseJSON(s)
	case domain.TypeString:
		return raw, nil
	}
	return s, nil
}

// number keeps a numeric text exact; text that is no number goes to the
// engine as it is, whose type check then names the problem.
func number(s string) any {
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return s
	}
	return json.Number(s)
}

func parseJSON(s string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not a single JSON value")
	}
	return v, nil
}

// formText renders a value into an input of type t (the inverse of
// parseScalar, for defaults and current values).
func formText(t domain.PropertyType, v any) string {
	if v == nil {
		return ""
	}
	switch t.Base {
	case domain.TypeArray:
		xs, ok := v.([]any)
		if !ok {
			return valueText(v)
		}
		lines := make([]string, len(xs))
		for i, x := range xs {
			lines[i] = valueText(x)
		}
		return strings.Join(lines, "\n")
	case domain.TypeTimestamp:
		s := valueText(v)
		if len(s) >= 16 {
			return s[:16]
		}
		return s
	case domain.TypeJSON:
		return jsonText(v)
	}
	return valueText(v)
}
