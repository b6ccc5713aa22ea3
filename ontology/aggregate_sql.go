package ontology

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/defaults"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// sqlFilters parses raw filters on typeRef into the query path's (the
// listing's filters, for an aggregation and for the tests' plans).
func (s *Store) sqlFilters(ctx context.Context, typeRef string, raw []RawFilter) (*typeState, []valueFilter, error) {
	ts, err := loadTypeState(ctx, s.db, typeRef)
	if err != nil {
		return nil, nil, err
	}
	conds, err := parseFilters(ts, raw, s.levels)
	if err != nil {
		return nil, nil, err
	}
	fs := make([]valueFilter, len(conds))
	for i, c := range conds {
		fs[i] = s.sqlFilter(ts, c)
	}
	return ts, fs, nil
}

// aggSQL is the statement of one pass of an aggregation: the index rows
// of each group level's property (LEFT JOIN for array elements: an
// object without any is in the no-value group) and, with metric, of the
// metric's property, joined to the objects of ts that u may read and the
// filters select (the listing's probes), counted per distinct key tuple.
// Rows of class U (a date-like string's second row, for byte-wise
// comparisons) are left out: each value is one row. A date level is
// grouped by its keys' slot (slotPrefix: 256 seconds) with the least and
// greatest key of each, not by every instant (aggPass buckets them).
// false: a filter matches nothing.
func (s *Store) aggSQL(u *models.User, ts *typeState, fs []valueFilter, search *aggSearch, ls []levelSpec, metric *models.Property, exact map[int][][]byte) (string, []any, bool) {
	var sel, from, group []string
	var args []any
	sc := s.levels.ReadScope(u)
	drv := aggIndexDriver(ls, metric)
	if len(fs) > 0 || !sc.All || search != nil {
		drv = ""
	}
	_, cover := s.coverProp(u, fs, search, ls, metric, exact)
	idk := s.idKey("o.id")
	if drv != "" {
		// Index only: every value row of a property is one of its type's
		// objects (a property's key belongs to one type, and every object
		// has a row per property, KeyNull without a value), so without a
		// read rule or filter the objects need not be read.
		idk = drv + ".object_id"
	}
	notU := func(a string) (string, []any) {
		return "(" + a + ".key < ? OR " + a + ".key >= ?)", []any{[]byte{domain.KeyInstantText}, []byte{domain.KeyInstantText + 1}}
	}
	// Objects drive (idx_object_type and the read rule), each joined
	// property's rows are one probe of the object's rows; CROSS JOIN
	// keeps SQLite's planner from driving from object_values, where the
	// join's unhex(o.id) would be computed per pair of rows.
	var where []string
	var whereArgs []any
	var drvCond string
	var drvArgs []any
	var slotConds []string
	var slotArgs []any
	join := func(a string, prop int64, left, date bool, slots [][]byte) {
		u, uargs := notU(a)
		if a == drv {
			drvCond = fmt.Sprintf("%s.prop = ? AND %s", a, u)
			drvArgs = append(append(drvArgs, prop), uargs...)
		} else {
			cond := fmt.Sprintf("%s.object_id = %s AND %s.prop = ? AND %s", a, idk, a, u)
			if left {
				from = append(from, "LEFT JOIN object_values "+a+" ON "+cond)
				args = append(args, prop)
				args = append(args, uargs...)
			} else {
				from = append(from, "CROSS JOIN object_values "+a)
				where = append(where, cond)
				whereArgs = append(whereArgs, prop)
				whereArgs = append(whereArgs, uargs...)
			}
		}
		if slots != nil {
			// The rows of the slots whose keys span two buckets, exactly.
			// Key ranges, not IN (?): gorm would expand a []byte there.
			for _, sl := range slots {
				slotConds = append(slotConds, a+".key BETWEEN ? AND ?")
				slotArgs = append(slotArgs, sl, append(append([]byte{}, sl...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
			}
		}
		if a == drv && cover {
			// The index entry alone (prop, key): full only for cut keys
			// (aggQuery reads those again).
			sel = append(sel, a+".key", "NULL")
			group = append(group, a+".key")
			return
		}
		if date && slots == nil {
			slot := "substr(" + a + ".key, 1, " + fmt.Sprint(slotPrefix) + ")"
			sel = append(sel, slot, s.minKey(a+".key"), s.maxKey(a+".key"))
			group = append(group, slot)
			return
		}
		sel = append(sel, a+".key", a+".full")
		group = append(group, a+".key", a+".full")
	}
	for i, l := range ls {
		prop := models.PropKey(*l.prop)
		if l.elements {
			prop = models.ElementKey(prop)
		}
		join(fmt.Sprintf("g%d", i), prop, l.elements, l.Type == GroupDate, exact[i])
	}
	if metric != nil {
		join("m", models.PropKey(*metric), false, false, nil)
	}
	if len(slotConds) > 0 {
		where = append(where, "("+strings.Join(slotConds, " OR ")+")")
		whereArgs = append(whereArgs, slotArgs...)
	}
	if drv != "" {
		q := "SELECT " + strings.Join(append(sel, "COUNT(*)"), ", ") + " FROM object_values " + drv + " " + strings.Join(from, " ") + " WHERE " + drvCond
		args = append(args, drvArgs...)
		for _, w := range where {
			q += " AND " + w
		}
		args = append(args, whereArgs...)
		return q + " GROUP BY " + strings.Join(group, ", "), args, true
	}
	// The type's objects through idx_object_type (SQLite's planner,
	// seeing one type in its statistics, otherwise scans objects whole),
	// or, when a filter can drive as in the listing (an equality or a
	// range of keys), that filter's index rows, each object read by its
	// id: a filter of 1% reads 1% of the objects.
	objs := "objects o"
	if !models.IsPostgres(s.db) {
		objs = "objects o INDEXED BY idx_object_type"
	}
	di := aggDriver(fs)
	var pre []any
	if di >= 0 {
		p, as := fs[di].rowPred("d")
		objs = "object_values d CROSS JOIN objects o"
		where = append([]string{p, "o.id = " + s.idText("d.object_id")}, where...)
		pre = as
	}
	q := "SELECT " + strings.Join(append(sel, "COUNT(*)"), ", ") + " FROM " + objs + " " + strings.Join(from, " ") + " WHERE o.object_type_id = ?"
	args = append(args, ts.ot.ID)
	args = append(args, pre...)
	for _, w := range where {
		q += " AND " + w
	}
	args = append(args, whereArgs...)
	if !sc.All {
		cond, as := sc.SQL("o")
		q += " AND " + cond
		args = append(args, as...)
	}
	for i, f := range fs {
		if i == di {
			continue
		}
		if f.none {
			if f.negate {
				continue
			}
			return "", nil, false
		}
		p, as := f.rowPred("e")
		if f.eq && models.IsPostgres(s.db) {
			// As the listing's probes: one entry of idx_object_value.
			p += " AND e.created = CAST(EXTRACT(EPOCH FROM o.created_at) * 1000000 AS bigint)"
		}
		not := ""
		if f.negate {
			not = "NOT "
		}
		q += " AND " + not + "EXISTS (SELECT 1 FROM object_values e WHERE e.object_id = " + idk + " AND " + p + ")"
		args = append(args, as...)
	}
	if search != nil {
		cond, as, ok := s.searchCond(search, idk)
		if !ok {
			return "", nil, false
		}
		q += " AND " + cond
		args = append(args, as...)
	}
	if len(group) > 0 {
		q += " GROUP BY " + strings.Join(group, ", ")
	}
	return q, args, true
}

// aggSearch is a search term as the explorer runs it: the object of
// that id, or any object a filter matches.
type aggSearch struct {
	id    string
	anyOf []valueFilter
}

// aggSearchOf is q's search over ts (nil without q): per property, as
// the explorer's search (console.searchFilters), a substring of text
// and lists of text ("includes"), an equality of the other scalar types
// that can be named; a q that is no value of a property's type matches
// nothing in it.
func (s *Store) aggSearchOf(ts *typeState, q string) (*aggSearch, error) {
	if q == "" {
		return nil, nil
	}
	if len(q) > defaults.MaxSearchBytes {
		return nil, badMember("q", "too_long", "q is %d bytes, more than %d", len(q), defaults.MaxSearchBytes)
	}
	sr := &aggSearch{}
	if domain.IsUUID(q) {
		sr.id = strings.ToLower(q)
	}
	for _, p := range ts.props {
		key, ok := SearchKey(p.Name, p.Type.V)
		if !ok {
			continue
		}
		conds, err := parseFilters(ts, []RawFilter{{Key: key, Value: q}}, s.levels)
		if apperr.Is(err, apperr.InvalidArgument) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("search %s for %q: %w", p.Name, q, err)
		}
		if f := s.sqlFilter(ts, conds[0]); !f.none {
			sr.anyOf = append(sr.anyOf, f)
		}
	}
	return sr, nil
}

// SearchKey is the filter key that matches a search in a property of
// type t (the explorer's and an aggregation's q); false for types a
// typed search cannot name (json, vectors, geo points, media).
func SearchKey(name string, t domain.PropertyType) (string, bool) {
	switch t.Base {
	case domain.TypeString:
		return name + "." + domain.OpIncludes, true
	case domain.TypeArray:
		if t.ElementType != nil && t.ElementType.Base == domain.TypeString {
			return name + "." + domain.OpIncludes, true
		}
	case domain.TypeInteger, domain.TypeDouble, domain.TypeBoolean, domain.TypeDate,
		domain.TypeTimestamp, domain.TypeMarking, domain.TypeReference:
		return name, true
	}
	return "", false
}

// searchCond is the search as one condition on the object of id idk;
// false: it matches nothing.
func (s *Store) searchCond(sr *aggSearch, idk string) (string, []any, bool) {
	var ors []string
	var args []any
	if sr.id != "" {
		ors = append(ors, "o.id = ?")
		args = append(args, sr.id)
	}
	for _, f := range sr.anyOf {
		p, as := f.rowPred("e")
		ors = append(ors, "EXISTS (SELECT 1 FROM object_values e WHERE e.object_id = "+idk+" AND "+p+")")
		args = append(args, as...)
	}
	if len(ors) == 0 {
		return "", nil, false
	}
	return "(" + strings.Join(ors, " OR ") + ")", args, true
}

// slotPrefix is the length of an instant key's prefix that date levels
// group by in SQL: its class and 8 bytes of seconds less the last, slots
// of 256 seconds. Buckets (of any zone) are computed in Go from the
// slots; a slot whose least and greatest keys fall in two buckets is
// read again key by key.
const slotPrefix = 8

// coverProp is the property key of a pass that reads idx_object_value's
// entries alone (an index-only pass of one exact level or one metric,
// grouped by key without full: Postgres' index-only scan, no lookup of
// each row on SQLite), or false.
func (s *Store) coverProp(u *models.User, fs []valueFilter, search *aggSearch, ls []levelSpec, metric *models.Property, exact map[int][][]byte) (int64, bool) {
	if len(fs) > 0 || search != nil || exact != nil || !s.levels.ReadScope(u).All {
		return 0, false
	}
	switch {
	case len(ls) == 1 && metric == nil && !ls[0].elements && ls[0].Type != GroupDate:
		return models.PropKey(*ls[0].prop), true
	case len(ls) == 0 && metric != nil:
		return models.PropKey(*metric), true
	}
	return 0, false
}

// withFull replaces the rows of cut keys (MaxIndexedKey long: their
// strings are in full) of a covering pass by their rows per full value.
func (s *Store) withFull(ctx context.Context, prop int64, rows []aggRow) ([]aggRow, error) {
	var conds []string
	var args []any
	out := rows[:0:0]
	for _, r := range rows {
		if len(r.keys[0][0]) >= models.MaxIndexedKey {
			conds = append(conds, "v.key = ?")
			args = append(args, r.keys[0][0])
			continue
		}
		out = append(out, r)
	}
	if len(conds) == 0 {
		return rows, nil
	}
	q := "SELECT v.key, v.full, COUNT(*) FROM object_values v WHERE v.prop = ? AND (" + strings.Join(conds, " OR ") + ") GROUP BY v.key, v.full"
	res, err := s.db.WithContext(ctx).Raw(q, append([]any{prop}, args...)...).Rows()
	if err != nil {
		return nil, fmt.Errorf("read the cut keys' strings: %w", err)
	}
	defer res.Close()
	for res.Next() {
		r := aggRow{keys: make([][2][]byte, 1)}
		if err := res.Scan(&r.keys[0][0], &r.keys[0][1], &r.n); err != nil {
			return nil, fmt.Errorf("read the cut keys' strings: %w", err)
		}
		out = append(out, r)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("read the cut keys' strings: %w", err)
	}
	return out, nil
}

// aggIndexDriver is the alias whose index rows can drive an index-only
// pass (a level not of array elements, else the metric), or "".
func aggIndexDriver(ls []levelSpec, metric *models.Property) string {
	for i, l := range ls {
		if !l.elements {
			return fmt.Sprintf("g%d", i)
		}
	}
	if metric != nil {
		return "m"
	}
	return ""
}

// minKey and maxKey are the least and greatest of a key column in a
// group (Postgres has no min of bytea: its hex text, ordered bytewise).
func (s *Store) minKey(col string) string {
	if models.IsPostgres(s.db) {
		return "decode(MIN(encode(" + col + ", 'hex') COLLATE \"C\"), 'hex')"
	}
	return "MIN(" + col + ")"
}

func (s *Store) maxKey(col string) string {
	if models.IsPostgres(s.db) {
		return "decode(MAX(encode(" + col + ", 'hex') COLLATE \"C\"), 'hex')"
	}
	return "MAX(" + col + ")"
}

// aggDriver is the filter whose index rows drive an aggregation: the
// best equality or key range (not a substring: its predicate is no key
// range), or -1.
func aggDriver(fs []valueFilter) int {
	di := -1
	for i, f := range fs {
		if f.none && !f.negate {
			return -1
		}
		if f.drive != driveNever && f.text == "" && (di < 0 || f.drive < fs[di].drive) {
			di = i
		}
	}
	return di
}

// aggregation accumulates groups from the statements' rows.
type aggregation struct {
	levels  []levelSpec
	metrics []metricSpec
	groups  []*aggGroup
	byID    map[string]*aggGroup
	approx  bool // the request allows approximation
	search  *aggSearch
}

// aggGroup is one bucket tuple: its ids (sortable, one per level), keys,
// object count and metric states.
type aggGroup struct {
	ids     []string
	keys    []GroupKey
	count   int64
	metrics []*metricState
}

// metricState is a metric's running state: n values, their exact sum,
// least and greatest keys, and for a distinct metric its distinct keys or,
// past defaults.ExactDistinctUpTo where approximation is allowed, a
// sketch of them.
type metricState struct {
	n        int64
	sum      big.Rat
	min, max []byte
	distinct map[string]struct{} // distinct metrics only
	sketch   *hyperloglog.Sketch // approximate_distinct past the exact limit
	approx   bool                // the sketch may replace distinct
}

// exactDistinctUpTo is defaults.ExactDistinctUpTo (lowered by tests to
// reach the sketch with few objects).
var exactDistinctUpTo = defaults.ExactDistinctUpTo

// newMetricState is the empty state of metric m; approx: the request
// allows approximation.
func newMetricState(m metricSpec, approx bool) *metricState {
	st := &metricState{}
	switch m.kind {
	case MetricExactDistinct:
		st.distinct = map[string]struct{}{}
	case MetricApproximateDistinct:
		st.distinct, st.approx = map[string]struct{}{}, approx
	}
	return st
}

func newAggregation(ls []levelSpec, ms []metricSpec, approx bool) *aggregation {
	return &aggregation{levels: ls, metrics: ms, byID: map[string]*aggGroup{}, approx: approx}
}

// Bucket ids: no value sorts after every value, other after that.
const (
	idMissing = string(models.KeyNull)
	idOther   = "\xff"
)

// bucket is the bucket of level l for a value key (nil: no row); false
// when the value falls in no bucket (outside every range).
func (l *levelSpec) bucket(k, full []byte) (string, GroupKey, bool) {
	if len(k) == 0 || k[0] == models.KeyNull || k[0] == models.KeyUnequal {
		return idMissing, GroupKey{}, true
	}
	switch l.Type {
	case GroupDate:
		t, ok := keyInstant(k)
		if !ok {
			return idMissing, GroupKey{}, true
		}
		from, to := dateBucket(t.In(l.loc), l.Interval)
		id := string(domain.InstantKey(from.Unix(), 0))
		return id, GroupKey{Value: from.Format(time.RFC3339), From: from.Format(time.RFC3339), To: to.Format(time.RFC3339)}, true
	case GroupFixedWidth:
		r, ok := keyRat(k)
		if !ok {
			return idMissing, GroupKey{}, true
		}
		q := new(big.Rat).Quo(r, l.width)
		n := new(big.Int).Div(q.Num(), q.Denom()) // floor (Euclidean: Denom > 0)
		from := new(big.Rat).Mul(new(big.Rat).SetInt(n), l.width)
		to := new(big.Rat).Add(from, l.width)
		fs := json.Number(from.FloatString(l.scale))
		fk, _ := domain.NumberKey(fs)
		return string(fk), GroupKey{Value: fs, From: fs, To: json.Number(to.FloatString(l.scale))}, true
	case GroupRanges:
		r, ok := keyRat(k)
		if !ok {
			return idMissing, GroupKey{}, true
		}
		for i, b := range l.ranges {
			if (b[0] == nil || r.Cmp(b[0]) >= 0) && (b[1] == nil || r.Cmp(b[1]) < 0) {
				id := binary.BigEndian.AppendUint32([]byte{0}, uint32(i))
				gk := GroupKey{Value: i}
				if rg := l.Ranges[i]; rg.From != nil {
					gk.From = *rg.From
				}
				if rg := l.Ranges[i]; rg.To != nil {
					gk.To = *rg.To
				}
				return string(id), gk, true
			}
		}
		return "", GroupKey{}, false
	}
	v, ok := keyValue(k, full, l.base)
	if !ok {
		return idMissing, GroupKey{}, true
	}
	return string(k) + string(full), GroupKey{Value: v}, true
}

// dateBucket is the bucket of t (in its location) of an interval: its
// start and the next one's.
func dateBucket(t time.Time, interval string) (time.Time, time.Time) {
	y, m, d := t.Date()
	loc := t.Location()
	switch interval {
	case "hour":
		from := t.Truncate(time.Hour)
		if _, off := t.Zone(); off%3600 != 0 { // a zone off the hour: its own hours
			from = time.Date(y, m, d, t.Hour(), 0, 0, 0, loc)
		}
		return from, from.Add(time.Hour)
	case "day":
		return time.Date(y, m, d, 0, 0, 0, 0, loc), time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	case "week":
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back, 0, 0, 0, 0, loc), time.Date(y, m, d-back+7, 0, 0, 0, 0, loc)
	case "month":
		return time.Date(y, m, 1, 0, 0, 0, 0, loc), time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
	}
	return time.Date(y, 1, 1, 0, 0, 0, 0, loc), time.Date(y+1, 1, 1, 0, 0, 0, 0, loc)
}

// group is the group of a row's level keys (created on first use); nil
// when a value falls in no bucket.
func (a *aggregation) group(keys [][2][]byte) *aggGroup {
	ids := make([]string, len(a.levels))
	gks := make([]GroupKey, len(a.levels))
	var sb strings.Builder
	for i := range a.levels {
		id, gk, ok := a.levels[i].bucket(keys[i][0], keys[i][1])
		if !ok {
			return nil
		}
		ids[i], gks[i] = id, gk
		fmt.Fprintf(&sb, "%d:%s", len(id), id)
	}
	return a.groupOf(sb.String(), ids, gks)
}

func (a *aggregation) groupOf(key string, ids []string, gks []GroupKey) *aggGroup {
	if g := a.byID[key]; g != nil {
		return g
	}
	g := &aggGroup{ids: ids, keys: gks, metrics: make([]*metricState, len(a.metrics))}
	for i, m := range a.metrics {
		g.metrics[i] = newMetricState(m, a.approx)
	}
	a.byID[key] = g
	a.groups = append(a.groups, g)
	return g
}

// add counts n values of key k into a metric's state.
func (st *metricState) add(k, full []byte, n int64) {
	if len(k) == 0 || k[0] == models.KeyNull || k[0] == models.KeyUnequal {
		return
	}
	st.n += n
	st.addDistinct(string(k) + string(full))
	if r, ok := keyRat(k); ok {
		st.sum.Add(&st.sum, r.Mul(r, new(big.Rat).SetInt64(n)))
	} else if t, ok := keyInstant(k); ok {
		r := new(big.Rat).SetFrac(new(big.Int).Add(new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(1e9)), big.NewInt(int64(t.Nanosecond()))), big.NewInt(1))
		st.sum.Add(&st.sum, r.Mul(r, new(big.Rat).SetInt64(n)))
	}
	if st.min == nil || bytes.Compare(k, st.min) < 0 {
		st.min = k
	}
	if st.max == nil || bytes.Compare(k, st.max) > 0 {
		st.max = k
	}
}

// addDistinct counts one value key of a distinct metric: into the exact
// set, or the sketch once the set would pass the exact limit.
func (st *metricState) addDistinct(key string) {
	switch {
	case st.sketch != nil:
		st.sketch.Insert([]byte(key))
	case st.distinct != nil:
		st.distinct[key] = struct{}{}
		if st.approx && len(st.distinct) > exactDistinctUpTo {
			st.toSketch()
		}
	}
}

// toSketch replaces the exact set by a sketch of it.
func (st *metricState) toSketch() {
	st.sketch = hyperloglog.New14()
	for k := range st.distinct {
		st.sketch.Insert([]byte(k))
	}
	st.distinct = nil
}

// distinctCount is the metric's distinct values, and whether it is an
// estimate.
func (st *metricState) distinctCount() (int64, bool) {
	if st.sketch != nil {
		return int64(st.sketch.Estimate()), true
	}
	return int64(len(st.distinct)), false
}

// merge adds o into st.
func (st *metricState) merge(o *metricState) {
	st.n += o.n
	st.sum.Add(&st.sum, &o.sum)
	if o.sketch != nil && st.sketch == nil {
		st.toSketch()
	}
	if st.sketch != nil && o.sketch != nil {
		_ = st.sketch.Merge(o.sketch) // one precision: merging cannot fail
	} else {
		for k := range o.distinct {
			st.addDistinct(k)
		}
	}
	if o.min != nil && (st.min == nil || bytes.Compare(o.min, st.min) < 0) {
		st.min = o.min
	}
	if o.max != nil && (st.max == nil || bytes.Compare(o.max, st.max) > 0) {
		st.max = o.max
	}
}

// aggRows runs the passes: the counts, then one statement per metric
// property (each metric of that property reads its rows).
func (s *Store) aggRows(ctx context.Context, u *models.User, ts *typeState, fs []valueFilter, a *aggregation) error {
	if len(a.levels) == 0 {
		a.groupOf("", []string{}, []GroupKey{}) // one group, even of no objects
	}
	if done, err := s.aggCounters(ctx, u, ts, fs, a); done || err != nil {
		return err
	}
	if err := s.aggPass(ctx, u, ts, fs, a, nil); err != nil {
		return err
	}
	done := map[int32]bool{}
	for _, m := range a.metrics {
		if m.prop == nil || done[m.prop.IndexKey] {
			continue
		}
		done[m.prop.IndexKey] = true
		if err := s.aggPass(ctx, u, ts, fs, a, m.prop); err != nil {
			return err
		}
	}
	return nil
}

// aggRow is one row of a pass: per level (and the metric) a key and its
// full value, or for a date level grouped by slot its least and
// greatest keys; and its object count.
type aggRow struct {
	keys [][2][]byte
	n    int64
}

// aggPass runs one pass and folds its rows into a. Date levels come back
// by slot; a slot whose least and greatest keys lie in two buckets is
// left out and its rows read again key by key (a second statement), so
// every bucket is exact in any time zone.
func (s *Store) aggPass(ctx context.Context, u *models.User, ts *typeState, fs []valueFilter, a *aggregation, metric *models.Property) error {
	rows, err := s.aggQuery(ctx, u, ts, fs, a, metric, nil)
	if err != nil {
		return err
	}
	split := map[int]map[string]bool{} // level → slots spanning two buckets
	for _, r := range rows {
		for i, l := range a.levels {
			if l.Type != GroupDate {
				continue
			}
			lo, _, _ := l.bucket(r.keys[i][0], nil)
			hi, _, _ := l.bucket(r.keys[i][1], nil)
			if lo != hi {
				if split[i] == nil {
					split[i] = map[string]bool{}
				}
				split[i][string(r.keys[i][0][:min(slotPrefix, len(r.keys[i][0]))])] = true
			}
		}
	}
	inSplit := func(r aggRow) bool {
		for i, sl := range split {
			if sl[string(r.keys[i][0][:min(slotPrefix, len(r.keys[i][0]))])] {
				return true
			}
		}
		return false
	}
	for _, r := range rows {
		if !inSplit(r) {
			a.fold(r, metric)
		}
	}
	if len(split) == 0 {
		return nil
	}
	// One statement reads the split slots of every level key by key
	// (the other date levels by slot: no slot of theirs spans buckets);
	// only its rows in a split slot are folded, the others were folded.
	exact := map[int][][]byte{}
	for i, sl := range split {
		for k := range sl {
			exact[i] = append(exact[i], []byte(k))
		}
	}
	rows, err = s.aggQuery(ctx, u, ts, fs, a, metric, exact)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if inSplit(r) {
			a.fold(r, metric)
		}
	}
	return nil
}

// aggQuery runs one statement of a pass and returns its rows; exact: the
// slots of date levels read key by key.
func (s *Store) aggQuery(ctx context.Context, u *models.User, ts *typeState, fs []valueFilter, a *aggregation, metric *models.Property, exact map[int][][]byte) ([]aggRow, error) {
	q, args, ok := s.aggSQL(u, ts, fs, a.search, a.levels, metric, exact)
	if !ok {
		return nil, nil
	}
	rows, err := s.db.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("aggregate objects of %s: %w", ts.ot.Name, err)
	}
	defer rows.Close()
	nk := len(a.levels)
	if metric != nil {
		nk++
	}
	var out []aggRow
	for rows.Next() {
		r := aggRow{keys: make([][2][]byte, nk)}
		dest := make([]any, 0, 3*nk+1)
		var slot []byte
		for i := range r.keys {
			if i < len(a.levels) && a.levels[i].Type == GroupDate && exact[i] == nil {
				dest = append(dest, &slot, &r.keys[i][0], &r.keys[i][1])
				continue
			}
			dest = append(dest, &r.keys[i][0], &r.keys[i][1])
		}
		if err := rows.Scan(append(dest, &r.n)...); err != nil {
			return nil, fmt.Errorf("aggregate objects of %s: %w", ts.ot.Name, err)
		}
		for i := range r.keys {
			if i < len(a.levels) && a.levels[i].Type == GroupDate && exact[i] != nil {
				r.keys[i][1] = r.keys[i][0] // one key: its own least and greatest
			}
		}
		if r.n > 0 { // 0: COUNT(*) of an empty set without groups
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("aggregate objects of %s: %w", ts.ot.Name, err)
	}
	if prop, ok := s.coverProp(u, fs, a.search, a.levels, metric, exact); ok {
		return s.withFull(ctx, prop, out)
	}
	return out, nil
}

// fold adds a row of a pass into its group.
func (a *aggregation) fold(r aggRow, metric *models.Property) {
	keys := r.keys
	for i, l := range a.levels {
		if l.Type == GroupDate {
			keys[i] = [2][]byte{keys[i][0], nil}
		}
	}
	g := a.group(keys)
	if g == nil {
		return
	}
	if metric == nil {
		g.count += r.n
		return
	}
	mk := keys[len(keys)-1]
	for i, m := range a.metrics {
		if m.prop != nil && m.prop.IndexKey == metric.IndexKey {
			g.metrics[i].add(mk[0], mk[1], r.n)
		}
	}
}

// applyMaxGroups keeps, at each exact level with max_groups, the values
// with the most objects within each parent group and merges the rest
// into an other bucket (counts are summed: at a level of array elements
// an object in two merged values counts twice).
func (a *aggregation) applyMaxGroups() error {
	for li, l := range a.levels {
		if l.MaxGroups == 0 {
			continue
		}
		type val struct {
			id string
			n  int64
		}
		totals := map[string]map[string]int64{} // parent prefix → bucket id → count
		for _, g := range a.groups {
			p := strings.Join(g.ids[:li], "\x00\x01")
			if totals[p] == nil {
				totals[p] = map[string]int64{}
			}
			totals[p][g.ids[li]] += g.count
		}
		keep := map[string]map[string]bool{}
		for p, vs := range totals {
			list := make([]val, 0, len(vs))
			for id, n := range vs {
				list = append(list, val{id, n})
			}
			sort.Slice(list, func(i, j int) bool {
				if list[i].n != list[j].n {
					return list[i].n > list[j].n
				}
				return list[i].id < list[j].id
			})
			keep[p] = map[string]bool{}
			for _, v := range list[:min(l.MaxGroups, len(list))] {
				keep[p][v.id] = true
			}
		}
		old := a.groups
		a.groups, a.byID = nil, map[string]*aggGroup{}
		for _, g := range old {
			if !keep[strings.Join(g.ids[:li], "\x00\x01")][g.ids[li]] {
				g.ids[li], g.keys[li] = idOther, GroupKey{Other: true}
			}
			var sb strings.Builder
			for _, id := range g.ids {
				fmt.Fprintf(&sb, "%d:%s", len(id), id)
			}
			m := a.groupOf(sb.String(), g.ids, g.keys) // fresh: byID was reset
			m.count += g.count
			for i := range m.metrics {
				m.metrics[i].merge(g.metrics[i])
			}
		}
	}
	return nil
}

// value is a metric's figure for a group.
func (a *aggregation) value(g *aggGroup, mi int) any {
	m, st := a.metrics[mi], g.metrics[mi]
	switch m.kind {
	case MetricCount:
		return g.count
	case MetricExactDistinct, MetricApproximateDistinct:
		n, _ := st.distinctCount()
		return n
	case MetricSum:
		f, _ := st.sum.Float64()
		return f
	case MetricAvg:
		if st.n == 0 {
			return nil
		}
		avg := new(big.Rat).Quo(&st.sum, new(big.Rat).SetInt64(st.n))
		if isInstantType(m.base) {
			ns := new(big.Int).Quo(avg.Num(), avg.Denom())
			sec, nsec := new(big.Int).DivMod(ns, big.NewInt(1e9), new(big.Int))
			return time.Unix(sec.Int64(), nsec.Int64()).UTC().Format(time.RFC3339Nano)
		}
		f, _ := avg.Float64()
		return f
	}
	k := st.min
	if m.kind == MetricMax {
		k = st.max
	}
	if k == nil {
		return nil
	}
	v, _ := keyValue(k, nil, m.base)
	return v
}

// result is the answer in ord.
func (a *aggregation) result(ord AggOrder, acc string) *AggregateResult {
	a.sortGroups(ord)
	out := &AggregateResult{Accuracy: AccuracyAccurate, Groups: make([]AggGroup, 0, len(a.groups))}
	for _, g := range a.groups {
		ms := make(map[string]any, len(a.metrics))
		for i, m := range a.metrics {
			ms[m.name] = a.value(g, i)
			if _, est := g.metrics[i].distinctCount(); est {
				out.Accuracy = AccuracyApproximate
			}
		}
		out.Groups = append(out.Groups, AggGroup{Key: g.keys, Metrics: ms})
	}
	return out
}

// aggCounters answers from the counters kept in the writes'
// transactions (models.ObjectCount, models.ValueCount) what they hold
// exactly: the count of a type, and its count by one counted property
// (a boolean or marking), for a caller who may read every object and
// without filter or search; false: they do not answer it. A reader with
// a read rule is not given them: they count objects the reader may not
// see.
func (s *Store) aggCounters(ctx context.Context, u *models.User, ts *typeState, fs []valueFilter, a *aggregation) (bool, error) {
	if len(fs) > 0 || a.search != nil || !s.levels.ReadScope(u).All {
		return false, nil
	}
	for _, m := range a.metrics {
		if m.kind != MetricCount {
			return false, nil
		}
	}
	switch {
	case len(a.levels) == 0:
		n, err := models.TypeCount(ctx, s.db, ts.ot.ID)
		if err != nil {
			return false, err
		}
		a.groups[0].count = n
		return true, nil
	case len(a.levels) == 1 && a.levels[0].Type == GroupExact && !a.levels[0].elements && models.Counted(*a.levels[0].prop):
		kcs, err := models.ValueCounts(ctx, s.db, models.PropKey(*a.levels[0].prop))
		if err != nil {
			return false, err
		}
		for _, kc := range kcs {
			if len(kc.Key) >= models.MaxIndexedKey {
				return false, nil // a cut key: its full values are in the index alone
			}
		}
		for _, kc := range kcs {
			a.fold(aggRow{keys: [][2][]byte{{kc.Key, nil}}, n: kc.N}, nil)
		}
		return true, nil
	}
	return false, nil
}
