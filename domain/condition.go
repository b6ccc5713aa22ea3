package domain

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
)

// Condition operators.
const (
	OpExists              = "exists"
	OpNotExists           = "not_exists"
	OpIs                  = "is"
	OpIsNot               = "is_not"
	OpIncludes            = "includes"
	OpGreaterThan         = "greater_than"
	OpGreaterThanOrEquals = "greater_than_or_equals"
	OpLessThan            = "less_than"
	OpLessThanOrEquals    = "less_than_or_equals"
)

// Operators lists every condition operator.
var Operators = []string{OpExists, OpNotExists, OpIs, OpIsNot, OpIncludes,
	OpGreaterThan, OpGreaterThanOrEquals, OpLessThan, OpLessThanOrEquals}

// Condition paths.
const (
	PathParametersPrefix       = "parameters."
	PathTargetPropertiesPrefix = "target.properties."
	PathTargetID               = "target.id"
	PathTargetMarking          = "target.marking"
	PathTargetCreatedBy        = "target.created_by"
)

// Condition is one test of a form schema override: the value at Path
// compared by Operator with Value.
//
// Paths: "parameters.<input>", "target.properties.<property>", "target.id",
// "target.marking", "target.created_by".
//
// Semantics (a missing value is absent or null; missing target means every
// target path is missing):
//   - exists: the value is present and not null; not_exists: the opposite.
//   - is: present and equal to Value. Numbers compare numerically (1 is 1.0),
//     strings that both parse as dates/timestamps compare as instants
//     (2024-01-01T01:00:00+01:00 is 2024-01-01T00:00:00Z), arrays and
//     objects compare deeply. is_not is the negation of is (so it holds
//     for a missing value).
//   - includes: the value is an array with an element equal (as for is) to
//     Value, or a string containing the string Value as a substring.
//   - greater_than, greater_than_or_equals, less_than,
//     less_than_or_equals: both numbers → numeric order; both configured
//     markings → marking rank (public < confidential < pii); both dates or
//     timestamps (YYYY-MM-DD is midnight UTC) → chronological; other
//     strings → lexical (byte-wise) order. Anything else (missing,
//     mismatched kinds, booleans, arrays) is false.
type Condition struct {
	Path     string `json:"path"`
	Operator string `json:"operator"`
	Value    any    `json:"value,omitempty"`
}

// NeedsValue reports whether op takes a right-hand value.
func NeedsValue(op string) bool { return op != OpExists && op != OpNotExists }

// EvalTarget is the target object a condition may look at.
type EvalTarget struct {
	ID         string
	Marking    string
	CreatedBy  string
	Properties map[string]any
}

// EvalEnv is what conditions are evaluated over.
type EvalEnv struct {
	// Parameters are the supplied action parameters (after defaults, as the
	// caller chooses).
	Parameters map[string]any
	// Target is the action's target object, nil when there is none.
	Target *EvalTarget
	// Markings order marking values for comparisons (empty: DefaultMarkings).
	Markings []string
}

// Resolve returns the value at path and whether it is present (not null).
func (env EvalEnv) Resolve(path string) (any, bool) {
	switch {
	case strings.HasPrefix(path, PathParametersPrefix):
		v, ok := env.Parameters[path[len(PathParametersPrefix):]]
		return v, ok && v != nil
	case env.Target == nil:
		return nil, false
	case strings.HasPrefix(path, PathTargetPropertiesPrefix):
		v, ok := env.Target.Properties[path[len(PathTargetPropertiesPrefix):]]
		return v, ok && v != nil
	case path == PathTargetID:
		return env.Target.ID, env.Target.ID != ""
	case path == PathTargetMarking:
		return env.Target.Marking, env.Target.Marking != ""
	case path == PathTargetCreatedBy:
		return env.Target.CreatedBy, env.Target.CreatedBy != ""
	}
	return nil, false
}

// Evaluate reports whether c holds in env. Unknown operators never hold.
func (c Condition) Evaluate(env EvalEnv) bool {
	v, present := env.Resolve(c.Path)
	switch c.Operator {
	case OpExists:
		return present
	case OpNotExists:
		return !present
	case OpIs:
		return present && ValuesEqual(v, c.Value)
	case OpIsNot:
		return !present || !ValuesEqual(v, c.Value)
	case OpIncludes:
		if !present {
			return false
		}
		if s, ok := v.(string); ok {
			sub, ok := c.Value.(string)
			return ok && strings.Contains(s, sub)
		}
		if items, ok := asSlice(v); ok {
			for _, x := range items {
				if ValuesEqual(x, c.Value) {
					return true
				}
			}
		}
		return false
	case OpGreaterThan, OpGreaterThanOrEquals, OpLessThan, OpLessThanOrEquals:
		if !present {
			return false
		}
		cmp, ok := compareValues(v, c.Value, env.Markings)
		if !ok {
			return false
		}
		switch c.Operator {
		case OpGreaterThan:
			return cmp > 0
		case OpGreaterThanOrEquals:
			return cmp >= 0
		case OpLessThan:
			return cmp < 0
		default:
			return cmp <= 0
		}
	}
	return false
}

// EvaluateAll reports whether every condition holds (true for none).
func EvaluateAll(conds []Condition, env EvalEnv) bool {
	for _, c := range conds {
		if !c.Evaluate(env) {
			return false
		}
	}
	return true
}

// ValuesEqual compares two JSON-ish values: numbers numerically (across
// json.Number, floats and integers), date/timestamp strings as instants,
// arrays element-wise, objects member-wise.
func ValuesEqual(a, b any) bool {
	return valuesEqual(a, b, 0)
}

func valuesEqual(a, b any, depth int) bool {
	if depth > 64 {
		return false
	}
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if ra, ok := asRat(a); ok {
		rb, ok := asRat(b)
		return ok && ra.Cmp(rb) == 0
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		if tx, ok := parseInstant(x); ok {
			if ty, ok := parseInstant(y); ok {
				return tx.Equal(ty)
			}
		}
		return false
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !valuesEqual(xv, yv, depth+1) {
				return false
			}
		}
		return true
	}
	xs, okA := asSlice(a)
	ys, okB := asSlice(b)
	if okA && okB {
		if len(xs) != len(ys) {
			return false
		}
		for i := range xs {
			if !valuesEqual(xs[i], ys[i], depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// asRat converts a number exactly (so large integers compare exactly).
func asRat(v any) (*big.Rat, bool) {
	if x, ok := v.(json.Number); ok {
		return numberRat(string(x))
	}
	if n, ok := AsInt64(v); ok {
		if _, isFloat := v.(float64); !isFloat {
			return new(big.Rat).SetInt64(n), true
		}
	}
	f, ok := AsFloat(v)
	if !ok {
		return nil, false
	}
	r := new(big.Rat)
	if r.SetFloat64(f) == nil { // NaN or Inf
		return nil, false
	}
	return r, true
}

// compareValues orders a against b; ok is false when they do not compare.
func compareValues(a, b any, markings []string) (int, bool) {
	if ra, ok := asRat(a); ok {
		rb, ok := asRat(b)
		if !ok {
			return 0, false
		}
		return ra.Cmp(rb), true
	}
	sa, ok := a.(string)
	if !ok {
		return 0, false
	}
	sb, ok := b.(string)
	if !ok {
		return 0, false
	}
	if len(markings) == 0 {
		markings = DefaultMarkings
	}
	if ia, ib := indexOf(markings, sa), indexOf(markings, sb); ia >= 0 && ib >= 0 {
		return cmpInt(ia, ib), true
	}
	if ta, ok := parseInstant(sa); ok {
		if tb, ok := parseInstant(sb); ok {
			return ta.Compare(tb), true
		}
	}
	return strings.Compare(sa, sb), true
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ConditionScope is what a condition may refer to at definition time.
type ConditionScope struct {
	// Inputs are the action's input fields by name.
	Inputs map[string]PropertyType
	// HasTarget is true when the action runs on a target object.
	HasTarget bool
	// TargetProperties are the target object type's properties by name.
	TargetProperties map[string]PropertyType
	// Markings are the configured markings (empty: DefaultMarkings).
	Markings []string
}

// PathType returns the type of the value at path, or an error naming field
// when the path is not one the scope knows.
func (sc ConditionScope) PathType(field, path string) (PropertyType, error) {
	switch {
	case strings.HasPrefix(path, PathParametersPrefix):
		name := path[len(PathParametersPrefix):]
		t, ok := sc.Inputs[name]
		if !ok {
			return PropertyType{}, defErr(field, "unknown_input", "path %q names no input of this action (inputs: %s)", clip(path), strings.Join(sortedKeys(sc.Inputs), ", "))
		}
		return t, nil
	case strings.HasPrefix(path, "target."):
		if !sc.HasTarget {
			return PropertyType{}, defErr(field, "no_target", "path %q refers to the target object, but this action has no target object", clip(path))
		}
		switch {
		case strings.HasPrefix(path, PathTargetPropertiesPrefix):
			name := path[len(PathTargetPropertiesPrefix):]
			t, ok := sc.TargetProperties[name]
			if !ok {
				return PropertyType{}, defErr(field, "unknown_property", "path %q names no property of the action's object type (properties: %s)", clip(path), strings.Join(sortedKeys(sc.TargetProperties), ", "))
			}
			return t, nil
		case path == PathTargetID:
			return T(TypeReference), nil
		case path == PathTargetMarking:
			return T(TypeMarking), nil
		case path == PathTargetCreatedBy:
			return T(TypeString), nil
		}
	}
	return PropertyType{}, defErr(field, "unknown_path", "unknown condition path %q (expected parameters.<input>, target.properties.<property>, target.id, target.marking or target.created_by)", clip(path))
}

// Validate checks c against scope; field names it in errors (e.g.
// "form_schema.sections[0].overrides[1].conditions[0]").
func (c Condition) Validate(field string, sc ConditionScope) error {
	t, err := sc.PathType(field+".path", c.Path)
	if err != nil {
		return err
	}
	if indexOf(Operators, c.Operator) < 0 {
		return defErr(field+".operator", "unknown_operator", "unknown operator %q (expected one of %s)", clip(c.Operator), strings.Join(Operators, ", "))
	}
	vf := field + ".value"
	if !NeedsValue(c.Operator) {
		if c.Value != nil {
			return defErr(vf, "not_allowed", "operator %s takes no value", c.Operator)
		}
		return nil
	}
	if c.Value == nil {
		return defErr(vf, "required", "operator %s needs a value", c.Operator)
	}
	env := CheckEnv{Markings: sc.Markings}
	switch c.Operator {
	case OpIs, OpIsNot:
		if err := t.Check(vf, c.Value, env); err != nil {
			return asDef(err, fmt.Sprintf("a value of %s (the type of %s)", t, c.Path))
		}
	case OpIncludes:
		switch {
		case t.Base == TypeArray && t.ElementType != nil:
			if err := t.ElementType.Check(vf, c.Value, env); err != nil {
				return asDef(err, fmt.Sprintf("an element of %s (the type of %s)", t, c.Path))
			}
		case t.Base == TypeString:
			if _, ok := c.Value.(string); !ok {
				return defErr(vf, "type", "includes on a string needs a string value, got %s", describe(c.Value))
			}
		default:
			return defErr(field+".operator", "operator_type", "operator includes needs an array or string path, but %s is %s", c.Path, t)
		}
	default: // ordering operators
		if !t.Orderable() {
			return defErr(field+".operator", "operator_type", "operator %s needs a number, string, date, timestamp or marking path, but %s is %s", c.Operator, c.Path, t)
		}
		if err := t.Check(vf, c.Value, env); err != nil {
			return asDef(err, fmt.Sprintf("a value of %s (the type of %s)", t, c.Path))
		}
	}
	return nil
}

// asDef turns a value-check failure into a definition error keeping its
// field, saying what the value should have been. Other errors pass through.
func asDef(err error, expected string) error {
	ae, ok := apperr.As(err)
	if !ok || ae.Code != apperr.InvalidProperty {
		return err
	}
	field, msg := "", ae.Message
	if len(ae.Details) > 0 {
		field, msg = ae.Details[0].Field, ae.Details[0].Message
	}
	if expected == "" {
		return defErr(field, "value", "%s", msg)
	}
	return defErr(field, "value", "%s (expected %s)", msg, expected)
}

// parseInstant parses a date (midnight UTC) or an RFC 3339 timestamp.
func parseInstant(s string) (time.Time, bool) {
	if d, ok := ParseDate(s); ok {
		return d, true
	}
	return ParseTimestamp(s)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
