package ontology_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// The differential test of aggregations: random objects (the listing's
// differential test's type and values) and random aggregation requests,
// answered by the database path and by a Go evaluation over the same
// objects' JSON values under the same read rule and filters.

var (
	aggExact  = []string{"s", "i", "d", "b", "dt", "ts", "k", "r", "m", "as", "ai", "at"}
	aggNum    = []string{"i", "d"}
	aggInst   = []string{"dt", "ts"}
	aggZones  = []string{"UTC", "Europe/Paris", "America/Los_Angeles", "Asia/Kolkata"}
	aggIntvls = []string{"hour", "day", "week", "month", "year"}
	aggWidths = []string{"1", "0.5", "10", "3", "1e20"}
)

func randomGroupBy(r *rand.Rand) ontology.GroupBy {
	switch r.Intn(4) {
	case 0:
		return ontology.GroupBy{Property: pick(r, aggInst), Type: ontology.GroupDate, Interval: pick(r, aggIntvls), TimeZone: pick(r, aggZones)}
	case 1:
		return ontology.GroupBy{Property: pick(r, aggNum), Type: ontology.GroupFixedWidth, Width: json.Number(pick(r, aggWidths))}
	case 2:
		n := func(s string) *json.Number { x := json.Number(s); return &x }
		rg := []ontology.AggRange{{To: n("0")}, {From: n("0"), To: n("2.5")}, {From: n("3"), To: n("1e20")}}
		return ontology.GroupBy{Property: pick(r, aggNum), Type: ontology.GroupRanges, Ranges: rg[:1+r.Intn(3)]}
	}
	g := ontology.GroupBy{Property: pick(r, aggExact)}
	if r.Intn(3) == 0 && !strings.HasPrefix(g.Property, "a") {
		g.MaxGroups = 1 + r.Intn(4)
	}
	return g
}

func randomMetric(r *rand.Rand, i int) ontology.Metric {
	m := ontology.Metric{Name: fmt.Sprint("m", i)}
	switch r.Intn(6) {
	case 0:
		m.Type = ontology.MetricCount
	case 1:
		m.Type, m.Property = ontology.MetricSum, pick(r, aggNum)
	case 2:
		m.Type, m.Property = ontology.MetricAvg, pick(r, append(aggNum, aggInst...))
	case 3:
		m.Type, m.Property = pick(r, []string{ontology.MetricMin, ontology.MetricMax}), pick(r, append(aggNum, aggInst...))
	default:
		m.Type, m.Property = ontology.MetricExactDistinct, pick(r, []string{"s", "i", "d", "b", "dt", "ts", "k", "j", "as", "r", "g", "v"})
	}
	return m
}

// TestAggregateMatchesGoEvaluator compares random aggregations with the
// Go evaluation, for an admin and for a user whose read rule hides
// objects, on both dialects.
func TestAggregateMatchesGoEvaluator(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, diffType, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		r := rand.New(rand.NewSource(48))
		reader := &models.User{ID: "00000000-0000-4000-8000-0000000000bb", Username: "reader",
			Roles: models.NewJSON([]string{"viewer"}), Clearance: "confidential", Organization: "o1"}
		props := map[string]map[string]any{}
		err := db.Transaction(func(tx *gorm.DB) error {
			for i := 0; i < diffCount(800); i++ {
				p := randomObject(t, r)
				o, err := s.CreateObject(ctx, tx, "Diff", p, pick(r, []string{"public", "confidential", "pii"}), admin.ID, pick(r, diffOrgs))
				if err != nil {
					return err
				}
				props[o.ID] = o.Properties // as stored (references normalized)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		users := []*models.User{admin, reader}
		loadReadable(t, s, users)
		compared := 0
		for round := 0; round < diffCount(400); round++ {
			var req ontology.AggregateRequest
			for n := r.Intn(3); n > 0; n-- {
				f := diffFilter(r, pick(r, diffProps))
				v, _ := json.Marshal(f.Value)
				req.Filters = append(req.Filters, ontology.AggFilter{Key: f.Key, Value: v})
			}
			for n := r.Intn(4); n > 0; n-- {
				req.GroupBy = append(req.GroupBy, randomGroupBy(r))
			}
			for n := 1 + r.Intn(3); n > 0; n-- {
				req.Metrics = append(req.Metrics, randomMetric(r, n))
			}
			u := pick(r, users)
			got, err := s.Aggregate(ctx, u, "Diff", req)
			raw := make([]ontology.RawFilter, len(req.Filters))
			for i, f := range req.Filters {
				var v string
				_ = json.Unmarshal(f.Value, &v)
				raw[i] = ontology.RawFilter{Key: f.Key, Value: v}
			}
			conds, cerr := s.OracleConditions(ctx, "Diff", raw)
			if cerr != nil || err != nil {
				if cerr == nil || err == nil {
					t.Fatalf("request %+v: filters error %v, aggregate error %v", req, cerr, err)
				}
				continue
			}
			var objs []map[string]any
			for _, o := range readable[u.ID] {
				if s.OracleMatch(conds, &o) {
					objs = append(objs, props[o.ID])
				}
			}
			want := oracleAggregate(t, req, objs)
			if g, w := canonGroups(t, got.Groups), canonGroups(t, want); g != w {
				t.Fatalf("request %s as %s:\ndatabase only %s\noracle only   %s", aggJSON(req), u.Username, lineDiff(g, w), lineDiff(w, g))
			}
			compared++
		}
		if compared < diffCount(400)/2 {
			t.Fatalf("only %d requests compared", compared)
		}
		t.Logf("%d aggregation requests compared", compared)
	})
}

func aggJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// canonGroups renders groups comparably: values by their equality keys,
// groups sorted.
func canonGroups(t *testing.T, gs []ontology.AggGroup) string {
	var out []string
	for _, g := range gs {
		var parts []string
		for _, k := range g.Key {
			parts = append(parts, canonValue(k.Value)+"|"+canonValue(k.From)+"|"+canonValue(k.To)+fmt.Sprint(k.Other))
		}
		var names []string
		for n := range g.Metrics {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			parts = append(parts, n+"="+canonValue(g.Metrics[n]))
		}
		out = append(out, strings.Join(parts, ";"))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func canonValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case int:
		v = json.Number(fmt.Sprint(x))
	case int64:
		v = json.Number(fmt.Sprint(x))
	case float64:
		return fmt.Sprintf("f%v", x)
	}
	k, ok := domain.EqualityKey(v)
	if !ok {
		return fmt.Sprintf("?%v", v)
	}
	return hex.EncodeToString(k)
}

// oracle buckets: an id (for max_groups' ties and identity) and a key.
type oBucket struct {
	id  string
	key ontology.GroupKey
}

func oRat(v any) (*big.Rat, bool) {
	switch n := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(string(n))
	case float64:
		return new(big.Rat).SetString(strconv.FormatFloat(n, 'g', -1, 64))
	case int64:
		return new(big.Rat).SetInt64(n), true
	case int:
		return new(big.Rat).SetInt64(int64(n)), true
	}
	return nil, false
}

func oTime(v any) (time.Time, bool) {
	s, _ := v.(string)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// oBuckets are the buckets of one object at one level (none: excluded).
func oBuckets(t *testing.T, g ontology.GroupBy, v any) []oBucket {
	missing := []oBucket{{id: "Z", key: ontology.GroupKey{}}}
	if items, isArr := v.([]any); isArr && strings.HasPrefix(g.Property, "a") {
		seen := map[string]bool{}
		var out []oBucket
		for _, it := range items {
			k, ok := domain.EqualityKey(it)
			if ok && !seen[string(k)] {
				seen[string(k)] = true
				out = append(out, oBucket{id: string(k), key: ontology.GroupKey{Value: oNorm(it)}})
			}
		}
		if len(out) == 0 {
			return missing
		}
		return out
	}
	if v == nil {
		return missing
	}
	switch g.Type {
	case ontology.GroupDate:
		tm, _ := oTime(v)
		loc, _ := time.LoadLocation(g.TimeZone)
		tm = tm.In(loc)
		y, m, d := tm.Date()
		var from, to time.Time
		switch g.Interval {
		case "hour":
			from = time.Date(y, m, d, tm.Hour(), 0, 0, 0, loc)
			to = from.Add(time.Hour)
		case "day":
			from, to = time.Date(y, m, d, 0, 0, 0, 0, loc), time.Date(y, m, d+1, 0, 0, 0, 0, loc)
		case "week":
			for from = time.Date(y, m, d, 0, 0, 0, 0, loc); from.Weekday() != time.Monday; {
				from = from.AddDate(0, 0, -1)
			}
			to = from.AddDate(0, 0, 7)
		case "month":
			from, to = time.Date(y, m, 1, 0, 0, 0, 0, loc), time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
		default:
			from, to = time.Date(y, 1, 1, 0, 0, 0, 0, loc), time.Date(y+1, 1, 1, 0, 0, 0, 0, loc)
		}
		f := from.Format(time.RFC3339)
		return []oBucket{{id: fmt.Sprintf("%020d", from.Unix()+1e15), key: ontology.GroupKey{Value: f, From: f, To: to.Format(time.RFC3339)}}}
	case ontology.GroupFixedWidth:
		x, _ := oRat(v)
		w, _ := new(big.Rat).SetString(string(g.Width))
		q := new(big.Rat).Quo(x, w)
		n := new(big.Int).Div(q.Num(), q.Denom())
		from := new(big.Rat).Mul(new(big.Rat).SetInt(n), w)
		sc := map[string]int{"0.5": 1}[string(g.Width)]
		fs := json.Number(from.FloatString(sc))
		return []oBucket{{id: from.String(), key: ontology.GroupKey{Value: fs, From: fs, To: json.Number(new(big.Rat).Add(from, w).FloatString(sc))}}}
	case ontology.GroupRanges:
		x, _ := oRat(v)
		for i, rg := range g.Ranges {
			lo, hi := true, true
			if rg.From != nil {
				b, _ := new(big.Rat).SetString(string(*rg.From))
				lo = x.Cmp(b) >= 0
			}
			if rg.To != nil {
				b, _ := new(big.Rat).SetString(string(*rg.To))
				hi = x.Cmp(b) < 0
			}
			if lo && hi {
				k := ontology.GroupKey{Value: i}
				if rg.From != nil {
					k.From = *rg.From
				}
				if rg.To != nil {
					k.To = *rg.To
				}
				return []oBucket{{id: fmt.Sprint(i), key: k}}
			}
		}
		return nil
	}
	k, ok := domain.EqualityKey(v)
	if !ok {
		return missing
	}
	return []oBucket{{id: string(k), key: ontology.GroupKey{Value: oNorm(v)}}}
}

type oGroup struct {
	ids    []string
	keys   []ontology.GroupKey
	count  int64
	values [][]any // per metric, the values of the group's objects
}

// oracleAggregate evaluates req over objs' JSON values.
func oracleAggregate(t *testing.T, req ontology.AggregateRequest, objs []map[string]any) []ontology.AggGroup {
	groups := map[string]*oGroup{}
	var order []string
	get := func(bs []oBucket) *oGroup {
		var ids []string
		var keys []ontology.GroupKey
		for _, b := range bs {
			ids, keys = append(ids, b.id), append(keys, b.key)
		}
		id := strings.Join(ids, "\x00\x01")
		if groups[id] == nil {
			groups[id] = &oGroup{ids: ids, keys: keys, values: make([][]any, len(req.Metrics))}
			order = append(order, id)
		}
		return groups[id]
	}
	if len(req.GroupBy) == 0 {
		get(nil)
	}
	for _, o := range objs {
		tuples := [][]oBucket{nil}
		for _, g := range req.GroupBy {
			var next [][]oBucket
			for _, tu := range tuples {
				for _, b := range oBuckets(t, g, o[g.Property]) {
					next = append(next, append(append([]oBucket(nil), tu...), b))
				}
			}
			tuples = next
		}
		for _, tu := range tuples {
			g := get(tu)
			g.count++
			for i, m := range req.Metrics {
				if m.Property != "" {
					g.values[i] = append(g.values[i], o[m.Property])
				}
			}
		}
	}
	// max_groups: per parent, the values with the most objects (ties by
	// bucket id), the rest merged into other.
	for li, l := range req.GroupBy {
		if l.MaxGroups == 0 {
			continue
		}
		totals := map[string]map[string]int64{}
		for _, g := range groups {
			p := strings.Join(g.ids[:li], "\x00\x01")
			if totals[p] == nil {
				totals[p] = map[string]int64{}
			}
			totals[p][g.ids[li]] += g.count
		}
		keep := map[string]bool{}
		for p, vs := range totals {
			var ids []string
			for id := range vs {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool {
				if vs[ids[i]] != vs[ids[j]] {
					return vs[ids[i]] > vs[ids[j]]
				}
				return ids[i] < ids[j]
			})
			for _, id := range ids[:min(l.MaxGroups, len(ids))] {
				keep[p+"\x00\x02"+id] = true
			}
		}
		old := groups
		groups = map[string]*oGroup{}
		for _, g := range old {
			if !keep[strings.Join(g.ids[:li], "\x00\x01")+"\x00\x02"+g.ids[li]] {
				g.ids[li], g.keys[li] = "\xff", ontology.GroupKey{Other: true}
			}
			id := strings.Join(g.ids, "\x00\x01")
			if m := groups[id]; m != nil {
				m.count += g.count
				for i := range m.values {
					m.values[i] = append(m.values[i], g.values[i]...)
				}
				continue
			}
			groups[id] = g
		}
	}
	var out []ontology.AggGroup
	for _, g := range groups {
		ms := map[string]any{}
		for i, m := range req.Metrics {
			ms[m.Name] = oMetric(m, g.count, g.values[i])
		}
		out = append(out, ontology.AggGroup{Key: g.keys, Metrics: ms})
	}
	return out
}

// oMetric is one metric over a group's values.
func oMetric(m ontology.Metric, count int64, vals []any) any {
	if m.Type == ontology.MetricCount {
		return count
	}
	if m.Type == ontology.MetricExactDistinct {
		seen := map[string]bool{}
		for _, v := range vals {
			if k, ok := domain.EqualityKey(v); ok {
				seen[string(models.IndexedKey(k))] = true
			}
		}
		return int64(len(seen))
	}
	inst := m.Property == "dt" || m.Property == "ts"
	sum, n := new(big.Rat), int64(0)
	var best any
	var bestR *big.Rat
	var bestT time.Time
	for _, v := range vals {
		if v == nil {
			continue
		}
		var r *big.Rat
		if inst {
			tm, _ := oTime(v)
			r = new(big.Rat).SetFrac(new(big.Int).Add(new(big.Int).Mul(big.NewInt(tm.Unix()), big.NewInt(1e9)), big.NewInt(int64(tm.Nanosecond()))), big.NewInt(1))
			if best == nil || (m.Type == ontology.MetricMin) == tm.Before(bestT) && !tm.Equal(bestT) {
				best, bestT = v, tm
			}
		} else {
			r, _ = oRat(v)
			if best == nil || (m.Type == ontology.MetricMin) == (r.Cmp(bestR) < 0) && r.Cmp(bestR) != 0 {
				best, bestR = v, r
			}
		}
		sum.Add(sum, r)
		n++
	}
	switch m.Type {
	case ontology.MetricSum:
		f, _ := sum.Float64()
		return f
	case ontology.MetricAvg:
		if n == 0 {
			return nil
		}
		avg := new(big.Rat).Quo(sum, new(big.Rat).SetInt64(n))
		if inst {
			ns := new(big.Int).Quo(avg.Num(), avg.Denom())
			sec, nsec := new(big.Int).DivMod(ns, big.NewInt(1e9), new(big.Int))
			return time.Unix(sec.Int64(), nsec.Int64()).UTC().Format(time.RFC3339Nano)
		}
		f, _ := avg.Float64()
		return f
	}
	return oNorm(best)
}

// oNorm is a stored value as a JSON number where it is one (a value,
// not a computed figure such as a sum).
func oNorm(v any) any {
	if f, isF := v.(float64); isF {
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return v
}

// lineDiff is the lines of a not in b.
func lineDiff(a, b string) string {
	in := map[string]bool{}
	for _, l := range strings.Split(b, "\n") {
		in[l] = true
	}
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !in[l] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
