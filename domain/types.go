// Package domain is the pure (database-free) part of Ontoflow's ontology:
// the property type system, form schema conditions, action type definitions
// and their definition-time validation. It depends on nothing but apperr, so
// the records in package models can hold its types in JSON columns and the
// action engine can use it without a database.
//
// Values checked here are what encoding/json produces (preferably decoded
// with UseNumber, so numbers arrive as json.Number); float64 and Go integer
// types are accepted as well.
package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ontoflow/ontoflow/apperr"
)

// Base type names of the property type system.
const (
	TypeString         = "string"
	TypeInteger        = "integer"
	TypeDouble         = "double"
	TypeBoolean        = "boolean"
	TypeDate           = "date"
	TypeTimestamp      = "timestamp"
	TypeJSON           = "json"
	TypeArray          = "array"
	TypeVector         = "vector"
	TypeReference      = "reference"
	TypeGeoPoint       = "geo_point"
	TypeMediaReference = "media_reference"
	TypeMarking        = "marking"
)

// BaseTypes lists every base type, in documentation order.
var BaseTypes = []string{TypeString, TypeInteger, TypeDouble, TypeBoolean, TypeDate, TypeTimestamp,
	TypeJSON, TypeArray, TypeVector, TypeReference, TypeGeoPoint, TypeMediaReference, TypeMarking}

// DefaultMarkings is the marking list used when a CheckEnv names none; it
// equals auth.DefaultLevels.
var DefaultMarkings = []string{"public", "confidential", "pii"}

// maxTypeDepth bounds nested array types (array of array of ...).
const maxTypeDepth = 8

// PropertyType is a type of the ontology type system. Its JSON form is an
// object {"type":"array","element_type":{"type":"string"}}; the plain string
// "string" is accepted as shorthand for {"type":"string"}.
type PropertyType struct {
	// Base is one of BaseTypes.
	Base string `json:"type"`
	// ElementType is the element type of an array (required for arrays,
	// refused otherwise).
	ElementType *PropertyType `json:"element_type,omitempty"`
	// ObjectTypeID restricts a reference to objects of that type (optional,
	// references only).
	ObjectTypeID string `json:"object_type_id,omitempty"`
	// Dimension fixes the length of a vector (optional, vectors only; 0 is
	// any non-empty length).
	Dimension int `json:"dimension,omitempty"`
}

// T is shorthand for a PropertyType with only a base.
func T(base string) PropertyType { return PropertyType{Base: base} }

// ArrayOf is an array type of elem.
func ArrayOf(elem PropertyType) PropertyType {
	return PropertyType{Base: TypeArray, ElementType: &elem}
}

// ReferenceTo is a reference type to objects of objectTypeID.
func ReferenceTo(objectTypeID string) PropertyType {
	return PropertyType{Base: TypeReference, ObjectTypeID: objectTypeID}
}

// UnmarshalJSON accepts the object form and the plain string shorthand.
func (t *PropertyType) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = PropertyType{Base: s}
		return nil
	}
	type plain PropertyType
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("property type: %w", err)
	}
	*t = PropertyType(p)
	return nil
}

// String renders the type for messages: "string", "array<integer>",
// "reference<ID>", "vector[3]".
func (t PropertyType) String() string {
	switch t.Base {
	case TypeArray:
		if t.ElementType != nil {
			return "array<" + t.ElementType.String() + ">"
		}
	case TypeReference:
		if t.ObjectTypeID != "" {
			return "reference<" + t.ObjectTypeID + ">"
		}
	case TypeVector:
		if t.Dimension > 0 {
			return fmt.Sprintf("vector[%d]", t.Dimension)
		}
	}
	if t.Base == "" {
		return "(no type)"
	}
	return t.Base
}

// Equal reports whether t and u are the same type (structurally).
func (t PropertyType) Equal(u PropertyType) bool {
	if t.Base != u.Base || t.ObjectTypeID != u.ObjectTypeID || t.Dimension != u.Dimension {
		return false
	}
	if (t.ElementType == nil) != (u.ElementType == nil) {
		return false
	}
	return t.ElementType == nil || t.ElementType.Equal(*u.ElementType)
}

// AssignableTo reports whether every valid value of t is a valid value of
// dst: equal types, integer to double, a reference to an unrestricted
// reference, a vector of fixed dimension to one of any dimension, and
// arrays whose elements are assignable.
func (t PropertyType) AssignableTo(dst PropertyType) bool {
	if t.Equal(dst) {
		return true
	}
	switch {
	case t.Base == TypeInteger && dst.Base == TypeDouble:
		return true
	case t.Base == TypeReference && dst.Base == TypeReference:
		return dst.ObjectTypeID == ""
	case t.Base == TypeVector && dst.Base == TypeVector:
		return dst.Dimension == 0
	case t.Base == TypeArray && dst.Base == TypeArray && t.ElementType != nil && dst.ElementType != nil:
		return t.ElementType.AssignableTo(*dst.ElementType)
	}
	return false
}

// Orderable reports whether greater_than and friends are meaningful for t.
func (t PropertyType) Orderable() bool {
	switch t.Base {
	case TypeString, TypeInteger, TypeDouble, TypeDate, TypeTimestamp, TypeMarking:
		return true
	}
	return false
}

// Validate checks the type definition itself. field names the member in
// messages (e.g. "inputs[0].type"); errors are InvalidDefinition.
func (t PropertyType) Validate(field string) error {
	return t.validate(field, 0)
}

func (t PropertyType) validate(field string, depth int) error {
	if depth > maxTypeDepth {
		return defErr(field, "too_deep", "types nest at most %d levels", maxTypeDepth)
	}
	if t.Base == "" {
		return defErr(field, "required", "a property type is required (one of %s)", strings.Join(BaseTypes, ", "))
	}
	if !knownBase(t.Base) {
		return defErr(field, "unknown_type", "unknown property type %q (expected one of %s)", t.Base, strings.Join(BaseTypes, ", "))
	}
	if t.Base == TypeArray {
		if t.ElementType == nil {
			return defErr(field+".element_type", "required", "an array type needs an element_type")
		}
		if err := t.ElementType.validate(field+".element_type", depth+1); err != nil {
			return err
		}
	} else if t.ElementType != nil {
		return defErr(field+".element_type", "not_allowed", "element_type is only allowed on array types, not on %s", t.Base)
	}
	if t.ObjectTypeID != "" {
		if t.Base != TypeReference {
			return defErr(field+".object_type_id", "not_allowed", "object_type_id is only allowed on reference types, not on %s", t.Base)
		}
		if !IsUUID(t.ObjectTypeID) {
			return defErr(field+".object_type_id", "format", "object_type_id must be a UUID, got %q", t.ObjectTypeID)
		}
	}
	if t.Dimension != 0 {
		if t.Base != TypeVector {
			return defErr(field+".dimension", "not_allowed", "dimension is only allowed on vector types, not on %s", t.Base)
		}
		if t.Dimension < 0 || t.Dimension > 65536 {
			return defErr(field+".dimension", "range", "dimension must be from 1 to 65536, got %d", t.Dimension)
		}
	}
	return nil
}

// References returns the object type ids t refers to (reference types,
// also inside arrays).
func (t PropertyType) References() []string {
	switch {
	case t.Base == TypeReference && t.ObjectTypeID != "":
		return []string{t.ObjectTypeID}
	case t.Base == TypeArray && t.ElementType != nil:
		return t.ElementType.References()
	}
	return nil
}

func knownBase(b string) bool {
	for _, x := range BaseTypes {
		if x == b {
			return true
		}
	}
	return false
}

// CheckEnv is what a value check needs from its surroundings.
type CheckEnv struct {
	// Markings are the configured marking levels (auth.Levels converts
	// implicitly); empty means DefaultMarkings.
	Markings []string
	// ResolveReference reports whether id names an object of objectTypeID.
	// It is called only for references whose type names an object type;
	// nil checks UUID syntax only. An error from it is returned as is.
	ResolveReference func(objectTypeID, id string) (bool, error)
	// CheckMedia, when set, checks a media reference's URI: isFile says
	// it names a file of the writer's WebDAV tree, readable whether that
	// file exists and the writer may read it (one answer for every reason
	// it does not). nil checks the URI's shape only.
	CheckMedia func(uri string) (isFile, readable bool, err error)
}

func (e CheckEnv) markings() []string {
	if len(e.Markings) == 0 {
		return DefaultMarkings
	}
	return e.Markings
}

// Check reports whether v is a valid value of t. field names the value in
// the error (e.g. "properties.age", "parameters.tags[2]"). null is not a
// value of any type: callers decide what null means (absent, clear) before
// checking. Failures are *apperr.Error with code InvalidProperty and one
// Detail {Field: field, Reason, Message} whose message names the field and
// what was expected.
func (t PropertyType) Check(field string, v any, env CheckEnv) error {
	return t.check(field, v, env, 0)
}

func (t PropertyType) check(field string, v any, env CheckEnv, depth int) error {
	if v == nil {
		return valErr(field, "null", "expected %s, got null", t.String())
	}
	switch t.Base {
	case TypeString:
		if _, ok := v.(string); !ok {
			return wrongType(field, t, v)
		}
	case TypeInteger:
		if _, ok := AsInt64(v); !ok {
			if _, isNum := AsFloat(v); isNum {
				return valErr(field, "not_integer", "must be a whole number (no fraction, within ±9.2 quintillion), got %s", describe(v))
			}
			return wrongType(field, t, v)
		}
	case TypeDouble:
		f, ok := AsFloat(v)
		if !ok {
			return wrongType(field, t, v)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return valErr(field, "not_finite", "expected a finite double, got %s", describe(v))
		}
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			return wrongType(field, t, v)
		}
	case TypeDate:
		s, ok := v.(string)
		if !ok {
			return wrongType(field, t, v)
		}
		if _, ok := ParseDate(s); !ok {
			return valErr(field, "format", "expected a date YYYY-MM-DD naming a real calendar day, got %q", clip(s))
		}
	case TypeTimestamp:
		s, ok := v.(string)
		if !ok {
			return wrongType(field, t, v)
		}
		if _, ok := ParseTimestamp(s); !ok {
			return valErr(field, "format", "expected an RFC 3339 timestamp (e.g. 2024-05-01T12:00:00Z), got %q", clip(s))
		}
	case TypeJSON:
		if !isJSONValue(v, 0) {
			return valErr(field, "type", "expected a JSON value, got %T", v)
		}
	case TypeArray:
		items, ok := asSlice(v)
		if !ok {
			return wrongType(field, t, v)
		}
		if t.ElementType == nil {
			return valErr(field, "type", "array type has no element type")
		}
		if depth > maxTypeDepth {
			return valErr(field, "too_deep", "arrays nest at most %d levels", maxTypeDepth)
		}
		for i, x := range items {
			if err := t.ElementType.check(fmt.Sprintf("%s[%d]", field, i), x, env, depth+1); err != nil {
				return err
			}
		}
	case TypeVector:
		items, ok := asSlice(v)
		if !ok {
			return wrongType(field, t, v)
		}
		if len(items) == 0 {
			return valErr(field, "empty", "expected a non-empty vector of numbers, got an empty array")
		}
		if t.Dimension > 0 && len(items) != t.Dimension {
			return valErr(field, "dimension", "expected a vector of %d numbers, got %d", t.Dimension, len(items))
		}
		for i, x := range items {
			f, ok := AsFloat(x)
			if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
				return valErr(fmt.Sprintf("%s[%d]", field, i), "type", "expected a finite number in a vector, got %s", describe(x))
			}
		}
	case TypeReference:
		s, ok := v.(string)
		if !ok {
			return wrongType(field, t, v)
		}
		if !IsUUID(s) {
			return valErr(field, "format", "expected a reference (an object id, a UUID), got %q", clip(s))
		}
		if t.ObjectTypeID != "" && env.ResolveReference != nil {
			found, err := env.ResolveReference(t.ObjectTypeID, s)
			if err != nil {
				return err
			}
			if !found {
				return valErr(field, "not_found", "expected a reference to an object of type %s, but %s names no such object", t.ObjectTypeID, s)
			}
		}
	case TypeGeoPoint:
		m, ok := v.(map[string]any)
		if !ok {
			return valErr(field, "type", "expected a geo_point {\"lat\": -90..90, \"lon\": -180..180}, got %s", describe(v))
		}
		for k := range m {
			if k != "lat" && k != "lon" {
				return valErr(field, "unknown_member", "expected a geo_point with only lat and lon, got member %q", clip(k))
			}
		}
		lat, okLat := AsFloat(m["lat"])
		lon, okLon := AsFloat(m["lon"])
		if !okLat || !okLon {
			return valErr(field, "type", "expected a geo_point with numeric lat and lon")
		}
		if math.IsNaN(lat) || lat < -90 || lat > 90 {
			return valErr(field+".lat", "range", "expected latitude from -90 to 90, got %s", describe(m["lat"]))
		}
		if math.IsNaN(lon) || lon < -180 || lon > 180 {
			return valErr(field+".lon", "range", "expected longitude from -180 to 180, got %s", describe(m["lon"]))
		}
	case TypeMediaReference:
		var uri string
		switch x := v.(type) {
		case string:
			if !validURI(x) {
				return valErr(field, "format", "expected a media reference: a non-empty URI/URL, got %q", clip(x))
			}
			uri = x
		case map[string]any:
			u, hasURI := x["uri"]
			if !hasURI {
				u = x["url"]
			}
			s, ok := u.(string)
			if !ok || !validURI(s) {
				return valErr(field, "format", "expected a media reference object with a non-empty string \"uri\" or \"url\" member")
			}
			uri = s
		default:
			return valErr(field, "type", "expected a media reference (a URI string or an object with \"uri\"/\"url\"), got %s", describe(v))
		}
		if env.CheckMedia != nil {
			isFile, readable, err := env.CheckMedia(uri)
			if err != nil {
				return err
			}
			if isFile && !readable {
				return valErr(field, "media", "expected a file of your WebDAV tree that exists and that you may read")
			}
		}
	case TypeMarking:
		s, ok := v.(string)
		if !ok {
			return wrongType(field, t, v)
		}
		ms := env.markings()
		if indexOf(ms, s) < 0 {
			return valErr(field, "unknown_marking", "expected a marking (one of %s), got %q", strings.Join(ms, ", "), clip(s))
		}
	default:
		return valErr(field, "unknown_type", "unknown property type %q", t.Base)
	}
	return nil
}

// Normalize returns v in its canonical stored form, assuming Check passed:
// integers become int64, doubles float64 (json.Number decoded), arrays
// []any with normalized elements, references (UUIDs) lower-cased, other
// values unchanged.
func (t PropertyType) Normalize(v any) any {
	switch t.Base {
	case TypeReference:
		// Object ids are stored lower-case; an upper-case spelling of the
		// same id must be the same value (unique checks, filters, links).
		if s, ok := v.(string); ok && IsUUID(s) {
			return strings.ToLower(s)
		}
	case TypeInteger:
		if n, ok := AsInt64(v); ok {
			return n
		}
	case TypeDouble:
		if f, ok := AsFloat(v); ok {
			return f
		}
	case TypeArray:
		if items, ok := asSlice(v); ok && t.ElementType != nil {
			out := make([]any, len(items))
			for i, x := range items {
				out[i] = t.ElementType.Normalize(x)
			}
			return out
		}
	case TypeVector:
		if items, ok := asSlice(v); ok {
			out := make([]any, len(items))
			for i, x := range items {
				if f, ok := AsFloat(x); ok {
					out[i] = f
				} else {
					out[i] = x
				}
			}
			return out
		}
	case TypeGeoPoint:
		if m, ok := v.(map[string]any); ok {
			lat, _ := AsFloat(m["lat"])
			lon, _ := AsFloat(m["lon"])
			return map[string]any{"lat": lat, "lon": lon}
		}
	}
	return v
}

// AsInt64 converts an integral number (json.Number, float64, Go integer
// types) to int64. Numbers with a fractional part, outside the int64 range,
// and non-numbers are refused.
func AsInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, true
		}
		// 1e3 or 2.0: integral values written in float syntax.
		r, ok := numberRat(string(x))
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return 0, false
		}
		return r.Num().Int64(), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) || x < -9.223372036854775808e18 || x >= 9.223372036854775808e18 {
			return 0, false
		}
		return int64(x), true
	case float32:
		return AsInt64(float64(x))
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		if uint64(x) > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// numberSyntax is JSON number syntax with a bounded exponent, so exact
// conversion to big.Rat stays cheap (1e999999999 would not be).
var numberSyntax = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]{1,4})?$`)

// numberRat converts JSON number text exactly.
func numberRat(s string) (*big.Rat, bool) {
	if len(s) > 1000 || !numberSyntax.MatchString(s) {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// AsFloat converts a number (json.Number, float, Go integer types) to
// float64. It reports false for non-numbers and unparsable json.Numbers.
func AsFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, false
		}
		return f, true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// IsNumber reports whether v is a number of any representation.
func IsNumber(v any) bool {
	_, ok := AsFloat(v)
	return ok
}

// ParseDate parses a YYYY-MM-DD calendar date (rejecting 2023-02-30).
func ParseDate(s string) (time.Time, bool) {
	if len(s) != 10 {
		return time.Time{}, false
	}
	d, err := time.Parse(time.DateOnly, s)
	return d, err == nil
}

// ParseTimestamp parses an RFC 3339 timestamp (fractional seconds allowed).
func ParseTimestamp(s string) (time.Time, bool) {
	if len(s) < 20 || len(s) > 64 {
		return time.Time{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	return ts, err == nil
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsUUID reports whether s is a UUID in the canonical 8-4-4-4-12 form.
func IsUUID(s string) bool { return uuidRE.MatchString(s) }

func validURI(s string) bool {
	if strings.TrimSpace(s) == "" || len(s) > 8192 {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	_, err := url.Parse(s)
	return err == nil
}

func asSlice(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case nil:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, false // []byte is not an array value
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

func isJSONValue(v any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string:
		return true
	case json.Number:
		_, err := strconv.ParseFloat(string(x), 64)
		return err == nil
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	case []any:
		for _, e := range x {
			if !isJSONValue(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !isJSONValue(e, depth+1) {
				return false
			}
		}
		return true
	}
	if items, ok := asSlice(v); ok {
		return isJSONValue(items, depth)
	}
	return false
}

// describe names the JSON kind of v for messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", clip(x))
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case json.Number:
		return "number " + clip(string(x))
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprintf("number %v", x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > 5 {
			keys = append(keys[:5], "...")
		}
		return "object {" + clip(strings.Join(keys, ", ")) + "}"
	}
	if _, ok := asSlice(v); ok {
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func wrongType(field string, t PropertyType, v any) error {
	return valErr(field, "type", "expected %s, got %s", article(t), describe(v))
}

func article(t PropertyType) string {
	switch t.Base {
	case TypeString:
		return "a string"
	case TypeInteger:
		return "an integer"
	case TypeDouble:
		return "a number (double)"
	case TypeBoolean:
		return "a boolean"
	case TypeDate:
		return "a date string YYYY-MM-DD"
	case TypeTimestamp:
		return "an RFC 3339 timestamp string"
	case TypeArray:
		if t.ElementType != nil {
			return "an array of " + t.ElementType.String()
		}
		return "an array"
	case TypeVector:
		return "a non-empty array of numbers (vector)"
	case TypeReference:
		return "a reference (an object id, a UUID string)"
	case TypeMarking:
		return "a marking string"
	}
	return t.String()
}

// valErr is a value-check failure: InvalidProperty naming the field.
func valErr(field, reason, format string, args ...any) *apperr.Error {
	msg := fmt.Sprintf(format, args...)
	return apperr.New(apperr.InvalidProperty, "%s: %s", field, msg).
		WithDetails(apperr.Detail{Field: field, Reason: reason, Message: msg})
}

// defErr is a definition-time failure: InvalidDefinition naming the member.
func defErr(field, reason, format string, args ...any) *apperr.Error {
	msg := fmt.Sprintf(format, args...)
	return apperr.New(apperr.InvalidDefinition, "%s: %s", field, msg).
		WithDetails(apperr.Detail{Field: field, Reason: reason, Message: msg})
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}
