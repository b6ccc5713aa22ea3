package ontology

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// Aggregations over a type's objects (docs/ontology.md, "Aggregations"):
// the listing's filters and read rule select the objects, the
// property-value index gives their values. Each statement groups index
// rows by their keys in the database (COUNT per distinct key tuple);
// buckets and metrics are computed in Go from those keys, exactly (big
// rationals), so both dialects answer the same.

// AggregateRequest is the body of POST .../types/{type}/aggregate.
type AggregateRequest struct {
	// Filters are the listing's filter.<key>=<value> pairs.
	Filters []AggFilter `json:"filters,omitempty"`
	// Q is the explorer's search: objects whose id is Q or any of whose
	// properties matches it (searchFilters), besides the filters.
	Q        string    `json:"q,omitempty"`
	Metrics  []Metric  `json:"metrics,omitempty"`
	GroupBy  []GroupBy `json:"group_by,omitempty"`
	Order    *AggOrder `json:"order,omitempty"`
	Accuracy string    `json:"accuracy,omitempty"`
}

// AggFilter is one listing filter: Key "<property>[.<operator>]", Value
// the text a query string would carry (a JSON non-string is taken as its
// JSON text).
type AggFilter struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Metric kinds.
const (
	MetricCount               = "count"
	MetricSum                 = "sum"
	MetricAvg                 = "avg"
	MetricMin                 = "min"
	MetricMax                 = "max"
	MetricExactDistinct       = "exact_distinct"
	MetricApproximateDistinct = "approximate_distinct"
)

// Metric is one figure per group. Name defaults to the kind, or
// kind_property.
type Metric struct {
	Name     string `json:"name,omitempty"`
	Type     string `json:"type"`
	Property string `json:"property,omitempty"`
}

// Group-by kinds.
const (
	GroupExact      = "exact"
	GroupDate       = "date"
	GroupFixedWidth = "fixed_width"
	GroupRanges     = "ranges"
)

// GroupBy is one level of grouping.
type GroupBy struct {
	Property string `json:"property"`
	Type     string `json:"type,omitempty"` // exact (default), date, fixed_width, ranges
	// MaxGroups (exact): keep the values with the most objects within
	// each parent group; the rest are one group whose key is other.
	MaxGroups int `json:"max_groups,omitempty"`
	// Interval (date): hour, day, week (from Monday), month, year, in
	// TimeZone (IANA name, default UTC).
	Interval string `json:"interval,omitempty"`
	TimeZone string `json:"time_zone,omitempty"`
	// Width (fixed_width): buckets [k×width, (k+1)×width).
	Width json.Number `json:"width,omitempty"`
	// Ranges (ranges): buckets [from, to); a missing bound is open.
	Ranges []AggRange `json:"ranges,omitempty"`
}

// AggRange is one explicit bucket.
type AggRange struct {
	From *json.Number `json:"from,omitempty"`
	To   *json.Number `json:"to,omitempty"`
}

// AggOrder orders the groups: By "key" (the default: values as the
// listing orders them, no value then other last) or a metric's name;
// Direction asc (default) or desc.
type AggOrder struct {
	By        string `json:"by,omitempty"`
	Direction string `json:"direction,omitempty"`
}

// Accuracy values.
const (
	AccuracyAccurate         = "accurate"
	AccuracyAllowApproximate = "allow_approximate"
	AccuracyApproximate      = "approximate"
)

// AggregateResult is the answer: one group per bucket tuple (one group
// with an empty key without group_by).
type AggregateResult struct {
	Accuracy string     `json:"accuracy"`
	Groups   []AggGroup `json:"groups"`
}

// AggGroup is one group's key (one entry per group_by level) and metrics.
type AggGroup struct {
	Key     []GroupKey     `json:"key"`
	Metrics map[string]any `json:"metrics"`
}

// GroupKey is a group's bucket at one level: the value (null: no value),
// a bucket's bounds, or the other bucket of max_groups.
type GroupKey struct {
	Value any  `json:"value"`
	From  any  `json:"from,omitempty"`
	To    any  `json:"to,omitempty"`
	Other bool `json:"other,omitempty"`
}

// metricSpec is a validated metric.
type metricSpec struct {
	name, kind string
	prop       *models.Property
	base       string
}

// levelSpec is a validated group_by level.
type levelSpec struct {
	GroupBy
	prop     *models.Property
	base     string // the property's base type, or its elements'
	elements bool   // an array: grouped by element
	loc      *time.Location
	width    *big.Rat
	scale    int // decimals of width
	ranges   [][2]*big.Rat
}

// badMember is the 400 of an aggregation naming the member at fault.
func badMember(field, reason, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return apperr.New(apperr.InvalidArgument, "%s: %s", field, msg).
		WithDetails(apperr.Detail{Field: field, Reason: reason, Message: msg})
}

// rawFilters are the request's filters as the listing takes them.
func (r AggregateRequest) rawFilters() ([]RawFilter, error) {
	if len(r.Filters) > defaults.MaxFilters {
		return nil, apperr.OverLimit("filters", defaults.MaxFilters, "filters", len(r.Filters))
	}
	out := make([]RawFilter, 0, len(r.Filters))
	for i, f := range r.Filters {
		v := string(f.Value)
		var s string
		if len(f.Value) > 0 && f.Value[0] == '"' {
			if err := json.Unmarshal(f.Value, &s); err != nil {
				return nil, badMember(fmt.Sprintf("filters[%d].value", i), "value", "not a JSON string")
			}
			v = s
		}
		out = append(out, RawFilter{Key: f.Key, Value: v})
	}
	return out, nil
}

// numericBases are the types sum applies to; ordered ones avg, min, max.
func isNumeric(base string) bool { return base == domain.TypeInteger || base == domain.TypeDouble }

func isInstantType(base string) bool { return base == domain.TypeDate || base == domain.TypeTimestamp }

// groupable are the types whose values the index holds readably (not as
// hashes): exact groups and distinct values apply to them.
func isGroupable(base string) bool {
	switch base {
	case domain.TypeJSON, domain.TypeArray, domain.TypeGeoPoint, domain.TypeVector:
		return false
	}
	return true
}

// propOf finds a member's property.
func propOf(ts *typeState, field, name string) (*models.Property, error) {
	p, ok := ts.byKey[name]
	if !ok {
		return nil, badMember(field, "unknown_property", "object type %s has no property %q", ts.ot.Name, name)
	}
	return p, nil
}

// metricSpecs validates the metrics (count alone by default).
func metricSpecs(ts *typeState, ms []Metric) ([]metricSpec, error) {
	if len(ms) == 0 {
		ms = []Metric{{Type: MetricCount}}
	}
	if len(ms) > defaults.MaxAggregationMetrics {
		return nil, apperr.OverLimit("metrics", defaults.MaxAggregationMetrics, "metrics", len(ms))
	}
	seen := map[string]bool{}
	out := make([]metricSpec, 0, len(ms))
	for i, m := range ms {
		field := fmt.Sprintf("metrics[%d]", i)
		sp := metricSpec{name: m.Name, kind: m.Type}
		if sp.name == "" {
			sp.name = m.Type
			if m.Property != "" {
				sp.name += "_" + m.Property
			}
		}
		if seen[sp.name] {
			return nil, badMember(field+".name", "duplicate", "metric name %q is used twice", sp.name)
		}
		seen[sp.name] = true
		if m.Type == MetricCount {
			if m.Property != "" {
				return nil, badMember(field+".property", "unexpected", "count counts objects and takes no property")
			}
			out = append(out, sp)
			continue
		}
		p, err := propOf(ts, field+".property", m.Property)
		if err != nil {
			return nil, err
		}
		sp.prop, sp.base = p, p.Type.V.Base
		var fits bool
		switch m.Type {
		case MetricSum:
			fits = isNumeric(sp.base)
		case MetricAvg, MetricMin, MetricMax:
			fits = isNumeric(sp.base) || isInstantType(sp.base)
		case MetricExactDistinct, MetricApproximateDistinct:
			fits = true // hashes of arrays and objects are distinct as their values
		default:
			return nil, badMember(field+".type", "unknown_metric", "unknown metric %q (count, sum, avg, min, max, exact_distinct, approximate_distinct)", m.Type)
		}
		if !fits {
			return nil, badMember(field+".type", "metric_type", "metric %s does not apply to %s, a property of type %s", m.Type, m.Property, sp.base)
		}
		out = append(out, sp)
	}
	return out, nil
}

// levelSpecs validates the group_by levels.
func levelSpecs(ts *typeState, gs []GroupBy) ([]levelSpec, error) {
	if len(gs) > defaults.MaxGroupByLevels {
		return nil, badMember("group_by", "too_deep", "at most %d levels (got %d)", defaults.MaxGroupByLevels, len(gs))
	}
	out := make([]levelSpec, 0, len(gs))
	for i, g := range gs {
		field := fmt.Sprintf("group_by[%d]", i)
		p, err := propOf(ts, field+".property", g.Property)
		if err != nil {
			return nil, err
		}
		l := levelSpec{GroupBy: g, prop: p, base: p.Type.V.Base}
		if l.Type == "" {
			l.Type = GroupExact
		}
		if t := p.Type.V; t.Base == domain.TypeArray && t.ElementType != nil {
			l.elements, l.base = true, t.ElementType.Base
		}
		if err := l.check(field); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// check validates one level of type l.Type over a property of l.base.
func (l *levelSpec) check(field string) error {
	if l.MaxGroups < 0 || l.MaxGroups > defaults.MaxAggregationGroups {
		return badMember(field+".max_groups", "over_limit", "max_groups is 1 to %d", defaults.MaxAggregationGroups)
	}
	if l.MaxGroups > 0 && l.Type != GroupExact {
		return badMember(field+".max_groups", "unexpected", "max_groups applies to exact groups")
	}
	wrong := func(want string) error {
		return badMember(field+".property", "group_type", "a %s group needs a %s property; %s is %s", l.Type, want, l.Property, l.prop.Type.V)
	}
	switch l.Type {
	case GroupExact:
		if !isGroupable(l.base) {
			return badMember(field+".property", "group_type", "%s (%s) has no readable values to group by (json, arrays of arrays, geo points and vectors are indexed as hashes)", l.Property, l.prop.Type.V)
		}
	case GroupDate:
		if !isInstantType(l.base) {
			return wrong("date or timestamp")
		}
		switch l.Interval {
		case "hour", "day", "week", "month", "year":
		default:
			return badMember(field+".interval", "interval", "interval is hour, day, week, month or year (got %q)", l.Interval)
		}
		loc, err := time.LoadLocation(l.TimeZone)
		if err != nil || l.TimeZone == "Local" {
			return badMember(field+".time_zone", "time_zone", "unknown time zone %q", l.TimeZone)
		}
		l.loc = loc
	case GroupFixedWidth:
		if !isNumeric(l.base) {
			return wrong("numeric")
		}
		w, ok := new(big.Rat).SetString(string(l.Width))
		if !ok || w.Sign() <= 0 {
			return badMember(field+".width", "width", "width must be a positive number")
		}
		l.width, l.scale = w, decimals(string(l.Width))
	case GroupRanges:
		if !isNumeric(l.base) {
			return wrong("numeric")
		}
		if len(l.Ranges) == 0 || len(l.Ranges) > defaults.MaxAggregationGroups {
			return badMember(field+".ranges", "ranges", "1 to %d ranges", defaults.MaxAggregationGroups)
		}
		for j, r := range l.Ranges {
			b, err := rangeBounds(r)
			if err != nil {
				return badMember(fmt.Sprintf("%s.ranges[%d]", field, j), "range", "%v", err)
			}
			l.ranges = append(l.ranges, b)
		}
	default:
		return badMember(field+".type", "group_type", "unknown group type %q (exact, date, fixed_width, ranges)", l.Type)
	}
	return nil
}

func rangeBounds(r AggRange) ([2]*big.Rat, error) {
	var b [2]*big.Rat
	for i, n := range []*json.Number{r.From, r.To} {
		if n == nil {
			continue
		}
		v, ok := new(big.Rat).SetString(string(*n))
		if !ok {
			return b, fmt.Errorf("bound %q is not a number", *n)
		}
		b[i] = v
	}
	if b[0] != nil && b[1] != nil && b[0].Cmp(b[1]) >= 0 {
		return b, fmt.Errorf("from must be less than to")
	}
	return b, nil
}

// decimals counts the decimal places of a number's text (with its
// exponent), so bucket bounds print exactly.
func decimals(s string) int {
	s = strings.ToLower(s)
	exp := 0
	if i := strings.IndexByte(s, 'e'); i >= 0 {
		fmt.Sscan(s[i+1:], &exp)
		s = s[:i]
	}
	d := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		d = len(s) - i - 1
	}
	return max(d-exp, 0)
}

// Aggregate computes req's metrics over the objects of typeRef that u may
// read and the filters select, grouped by req.GroupBy.
func (s *Store) Aggregate(ctx context.Context, u *models.User, typeRef string, req AggregateRequest) (*AggregateResult, error) {
	raw, err := req.rawFilters()
	if err != nil {
		return nil, err
	}
	acc := req.Accuracy
	if acc == "" {
		acc = AccuracyAccurate
	}
	if acc != AccuracyAccurate && acc != AccuracyAllowApproximate {
		return nil, badMember("accuracy", "accuracy", "accuracy is accurate or allow_approximate (got %q)", req.Accuracy)
	}
	ts, fs, err := s.sqlFilters(ctx, typeRef, raw)
	if err != nil {
		return nil, err
	}
	search, err := s.aggSearchOf(ts, req.Q)
	if err != nil {
		return nil, err
	}
	ms, err := metricSpecs(ts, req.Metrics)
	if err != nil {
		return nil, err
	}
	ls, err := levelSpecs(ts, req.GroupBy)
	if err != nil {
		return nil, err
	}
	ord, err := orderSpec(req.Order, ms)
	if err != nil {
		return nil, err
	}
	a := newAggregation(ls, ms, acc == AccuracyAllowApproximate)
	a.search = search
	if err := s.aggRows(ctx, u, ts, fs, a); err != nil {
		return nil, err
	}
	if err := a.applyMaxGroups(); err != nil {
		return nil, err
	}
	if len(a.groups) > defaults.MaxAggregationGroups {
		return nil, badMember("group_by", "too_many_groups", "%d groups exceed the limit of %d: narrow the filters, set max_groups or widen the buckets",
			len(a.groups), defaults.MaxAggregationGroups)
	}
	return a.result(ord, acc), nil
}

// orderSpec validates the order of groups.
func orderSpec(o *AggOrder, ms []metricSpec) (AggOrder, error) {
	out := AggOrder{By: "key", Direction: "asc"}
	if o == nil {
		return out, nil
	}
	if o.By != "" {
		out.By = o.By
	}
	if o.Direction != "" {
		out.Direction = o.Direction
	}
	if out.Direction != "asc" && out.Direction != "desc" {
		return out, badMember("order.direction", "direction", "direction is asc or desc (got %q)", o.Direction)
	}
	if out.By == "key" {
		return out, nil
	}
	for _, m := range ms {
		if m.name == out.By {
			return out, nil
		}
	}
	return out, badMember("order.by", "unknown_metric", "order by key or a metric's name (no metric %q)", out.By)
}

// sortGroups sorts keys of groups (the bucket ids) as the answer orders them.
func lessIDs(a, b []string) bool {
	for i := range a {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c < 0
		}
	}
	return false
}

// sortable is a metric's value for ordering groups (nil last).
func (a *aggregation) sortable(g *aggGroup, mi int) (*big.Rat, []byte) {
	m := a.metrics[mi]
	st := g.metrics[mi]
	switch m.kind {
	case MetricCount:
		return new(big.Rat).SetInt64(g.count), nil
	case MetricExactDistinct, MetricApproximateDistinct:
		n, _ := st.distinctCount()
		return new(big.Rat).SetInt64(n), nil
	case MetricSum:
		return new(big.Rat).Set(&st.sum), nil
	case MetricAvg:
		if st.n == 0 {
			return nil, nil
		}
		return new(big.Rat).Quo(&st.sum, new(big.Rat).SetInt64(st.n)), nil
	case MetricMin:
		return nil, st.min
	}
	return nil, st.max
}

func (a *aggregation) sortGroups(ord AggOrder) {
	mi := -1
	for i, m := range a.metrics {
		if m.name == ord.By {
			mi = i
		}
	}
	desc := ord.Direction == "desc"
	sort.SliceStable(a.groups, func(i, j int) bool {
		gi, gj := a.groups[i], a.groups[j]
		if mi >= 0 {
			ri, bi := a.sortable(gi, mi)
			rj, bj := a.sortable(gj, mi)
			c := 0
			switch {
			case ri != nil && rj != nil:
				c = ri.Cmp(rj)
			case bi != nil && bj != nil:
				c = bytes.Compare(bi, bj)
			case (ri == nil && bi == nil) != (rj == nil && bj == nil):
				return rj == nil && bj == nil // no value last
			}
			if c != 0 {
				return (c < 0) != desc
			}
			return lessIDs(gi.ids, gj.ids)
		}
		if desc {
			return lessIDs(gj.ids, gi.ids)
		}
		return lessIDs(gi.ids, gj.ids)
	})
}
