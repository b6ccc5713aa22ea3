package ontology

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// The query path: every filtered read of objects (the REST listing,
// the console's pickers and search, functions' ctx.ontology.query) is
// one SQL query over objects and the property-value index
// (models.ObjectValue), the read rule included. docs/ontology.md, "The
// query path", describes the plans.

// valueFilter is one condition as SQL over index rows of one property:
// an object matches when it has a row of prop (the property's PropKey,
// or ElementKey for its elements) for which pred holds (or, negated,
// has none).
type valueFilter struct {
	prop   int64
	pred   func(a string) (string, []any)
	negate bool
	// none: no row can match (a value equal to nothing).
	none bool
	// drive ranks how well the filter drives the query from the index
	// (lower is better); 0 means it is not used to drive.
	drive int
	// text, when set, is a substring found through the trigram index
	// (textDriver) when the filter drives.
	text string
	// eq: pred is an equality of the key.
	eq bool
	// block, when set, narrows a driving filter of a loose order to one
	// block of it (settleTies): a millisecond's text labels, or one
	// creation time.
	block *[2]int64
}

// Driving ranks.
const (
	driveNever    = 0
	driveEquality = 1 // rows in creation order for one key
	driveRange    = 2 // a key range, sorted afterwards
)

// sqlFilter translates a validated condition on a property of ts.
func (s *Store) sqlFilter(ts *typeState, c domain.Condition) valueFilter {
	name := strings.TrimPrefix(c.Path, domain.PathTargetPropertiesPrefix)
	t := ts.byKey[name].Type.V
	f := valueFilter{prop: models.PropKey(*ts.byKey[name])}
	switch c.Operator {
	case domain.OpExists:
		// Every object has a value row per property; KeyNull's when it
		// has no value. Checked per object: most objects have a value.
		f.pred = func(a string) (string, []any) { return a + ".key < ?", []any{[]byte{models.KeyNull}} }
	case domain.OpNotExists:
		f.drive, f.eq = driveEquality, true
		f.pred = func(a string) (string, []any) { return a + ".key = ?", []any{[]byte{models.KeyNull}} }
	case domain.OpIs, domain.OpIsNot:
		f.negate = c.Operator == domain.OpIsNot
		f.drive, f.eq = driveEquality, true
		f.pred, f.none = equalPred(c.Value)
	case domain.OpIncludes:
		if t.Base == domain.TypeArray {
			f.prop = models.ElementKey(f.prop)
			f.drive, f.eq = driveEquality, true
			f.pred, f.none = equalPred(c.Value)
			break
		}
		sub, _ := c.Value.(string)
		f.pred = s.substringPred(sub)
		// Trigrams find substrings of three characters or more.
		if utf8.RuneCountInString(sub) >= 3 && !strings.ContainsRune(sub, 0) && s.trigram.get(func() bool { return models.TrigramSearch(s.db) }) {
			f.text, f.drive = sub, driveRange
		}
	default:
		f.drive = driveRange
		f.pred, f.none = s.orderPred(t, c.Operator, c.Value)
	}
	if f.negate {
		f.drive = driveNever
	}
	return f
}

// equalPred matches the rows whose value equals v (domain.ValuesEqual).
func equalPred(v any) (func(a string) (string, []any), bool) {
	k, ok := domain.EqualityKey(v)
	if !ok {
		return nil, true
	}
	if k[0] == domain.KeyString {
		return func(a string) (string, []any) { return strPred(a, k[0], "=", k[1:]) }, false
	}
	k = models.IndexedKey(k)
	return func(a string) (string, []any) { return a + ".key = ?", []any{k} }, false
}

// sqlOps are the SQL comparison of each ordering operator.
var sqlOps = map[string]string{domain.OpGreaterThan: ">", domain.OpGreaterThanOrEquals: ">=",
	domain.OpLessThan: "<", domain.OpLessThanOrEquals: "<="}

// rangePred compares keys of one class with k (not cut: only strings are
// long, and they go through strPred).
func rangePred(a, op string, k []byte) (string, []any) {
	class := k[0]
	if op == ">" || op == ">=" {
		return fmt.Sprintf("(%[1]s.key %[2]s ? AND %[1]s.key < ?)", a, op), []any{k, []byte{class + 1}}
	}
	return fmt.Sprintf("(%[1]s.key %[2]s ? AND %[1]s.key >= ?)", a, op), []any{k, []byte{class}}
}

// strPred compares the strings of one class (domain.KeyString or
// KeyInstantText) byte-wise with s, through the cut key and, at the cut,
// the full text.
func strPred(a string, class byte, op string, s []byte) (string, []any) {
	vk, vfull := models.CutKey(append([]byte{class}, s...))
	cut := vfull != nil
	key, full := a+".key", a+".full"
	switch op {
	case "=":
		if cut {
			return "(" + key + " = ? AND " + full + " = ?)", []any{vk, s}
		}
		return "(" + key + " = ? AND " + full + " IS NULL)", []any{vk}
	case ">", ">=":
		tie := full + " " + op + " ?"
		if op == ">=" && !cut {
			tie = "(" + tie + " OR " + full + " IS NULL)"
		}
		return fmt.Sprintf("((%[1]s > ? AND %[1]s < ?) OR (%[1]s = ? AND %[2]s))", key, tie),
			[]any{vk, []byte{class + 1}, vk, s}
	default:
		tie := full + " " + op + " ?"
		if op == "<=" || cut {
			tie = "(" + tie + " OR " + full + " IS NULL)"
		}
		return fmt.Sprintf("((%[1]s < ? AND %[1]s >= ?) OR (%[1]s = ? AND %[2]s))", key, tie),
			[]any{vk, []byte{class}, vk, s}
	}
}

// orderPred is an ordering operator on a property of type t: numbers
// numerically, dates and timestamps chronologically; strings as
// conditions compare them (both markings: by rank; both dates or
// timestamps: as instants; else byte-wise).
func (s *Store) orderPred(t domain.PropertyType, operator string, v any) (func(a string) (string, []any), bool) {
	op := sqlOps[operator]
	switch t.Base {
	case domain.TypeInteger, domain.TypeDouble:
		k, ok := domain.NumberKey(v)
		if !ok {
			return nil, true
		}
		return func(a string) (string, []any) { return rangePred(a, op, k) }, false
	}
	str, _ := v.(string)
	inst, isInst := domain.InstantOf(str)
	if t.Base == domain.TypeDate || t.Base == domain.TypeTimestamp {
		if !isInst {
			return nil, true
		}
		return func(a string) (string, []any) { return rangePred(a, op, inst) }, false
	}
	return func(a string) (string, []any) {
		var parts []string
		var args []any
		add := func(q string, as []any) {
			parts = append(parts, q)
			args = append(args, as...)
		}
		if r := s.levels.Rank(str); r >= 0 {
			var ranked, all [][]byte
			for i, l := range s.levels {
				k := append([]byte{domain.KeyString}, l...)
				all = append(all, k)
				if cmpHolds(op, i, r) {
					ranked = append(ranked, k)
				}
			}
			if len(ranked) > 0 {
				add(a+".key IN ?", []any{ranked})
			}
			q, as := strPred(a, domain.KeyString, op, []byte(str))
			add("("+a+".key NOT IN ? AND "+q+")", append([]any{all}, as...))
		} else {
			add(strPred(a, domain.KeyString, op, []byte(str)))
		}
		if isInst {
			add(rangePred(a, op, inst))
		} else {
			add(strPred(a, domain.KeyInstantText, op, []byte(str)))
		}
		return "(" + strings.Join(parts, " OR ") + ")", args
	}, false
}

func cmpHolds(op string, a, b int) bool {
	switch op {
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "<":
		return a < b
	}
	return a <= b
}

// substringPred matches string values containing sub (byte-wise, case
// sensitive, as strings.Contains).
func (s *Store) substringPred(sub string) func(a string) (string, []any) {
	return func(a string) (string, []any) {
		text := "COALESCE(" + a + ".full, substr(" + a + ".key, 2))"
		contains := "instr(" + text + ", ?) > 0"
		if models.IsPostgres(s.db) {
			contains = "position( ? in " + text + ") > 0" // "( ?": gorm expands a []byte after "("
		}
		q := fmt.Sprintf("((%[1]s.key >= ? AND %[1]s.key < ?) OR (%[1]s.key >= ? AND %[1]s.key < ?)) AND %[2]s", a, contains)
		args := []any{[]byte{domain.KeyString}, []byte{domain.KeyString + 1},
			[]byte{domain.KeyInstantText}, []byte{domain.KeyInstantText + 1}}
		return q, append(args, []byte(sub))
	}
}

// rowPred is f's condition on index rows aliased a.
func (f valueFilter) rowPred(a string) (string, []any) {
	q := a + ".prop = ?"
	args := []any{f.prop}
	if p, as := f.pred(a); p != "" {
		q += " AND " + p
		args = append(args, as...)
	}
	return q, args
}

// queryObjects runs the filters (all must hold) over ts's objects that u
// may read, in the order ord, after the keyset position after (if any),
// skipping offset and returning at most limit.
func (s *Store) queryObjects(ctx context.Context, u *models.User, ts *typeState, fs []valueFilter, ord order, after *cursor, offset, limit int) ([]models.Object, error) {
	if out, ok, err := s.windowed(ctx, u, ts, fs, ord, after, offset, limit); ok || err != nil {
		return out, err
	}
	out, err := s.runObjects(ctx, u, ts, fs, ord, after, offset, limit)
	if err != nil {
		return nil, err
	}
	if di, lo := s.looseOrder(fs, ord, offset); lo != orderExact {
		return s.settleTies(ctx, u, ts, fs, di, lo, ord, after, limit, out)
	}
	return out, nil
}

// runObjects runs objectsSQL's statement.
func (s *Store) runObjects(ctx context.Context, u *models.User, ts *typeState, fs []valueFilter, ord order, after *cursor, offset, limit int) ([]models.Object, error) {
	out := []models.Object{}
	q, args, ok := s.objectsSQL(u, ts, fs, ord, after, offset, limit)
	if !ok {
		return out, nil
	}
	if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("query objects of %s: %w", ts.ot.Name, err)
	}
	return out, nil
}

// driver is the index of the filter that drives a listing in creation
// order (-1: none, ordered by a property or by update, or the type's
// objects in creation order); none: a filter matches nothing.
func driver(fs []valueFilter, ord order) (di int, none bool) {
	di = -1
	for i, f := range fs {
		if f.none && !f.negate {
			return -1, true
		}
		if ord.field == "" && f.drive != driveNever && (di < 0 || f.drive < fs[di].drive) {
			di = i
		}
	}
	return di, false
}

// looseOrders: how a statement in creation order orders its rows
// when the listing's exact order (creation time, then id) would cost
// more than settling ties afterwards (settleTies).
type looseOrder int

const (
	orderExact looseOrder = iota
	// orderLabels: SQLite's text labels (models.TextBlock), in FTS5's
	// rowid order, which is creation order by the millisecond.
	orderLabels
	// orderCreated: creation time alone, not the id after it. On
	// Postgres idx_object_value ends at created, so for an equality the
	// index gives that order, and no plan needs a sort. With the id too
	// the planner weighs a sort of every row of the key against an
	// incremental one by its estimate of the key's rows, and a key of
	// 1% estimated at 3 rows got the sort of all 1,000 at 100,000
	// objects (10 ms a page instead of 1.5).
	orderCreated
)

// looseOrder is the driving filter of a listing in creation order and
// how its statement orders rows (orderExact: exactly; an offset page,
// from an old page token, is ordered exactly too).
func (s *Store) looseOrder(fs []valueFilter, ord order, offset int) (int, looseOrder) {
	di, none := driver(fs, ord)
	if none || di < 0 || offset > 0 {
		return -1, orderExact
	}
	pg := models.IsPostgres(s.db)
	switch {
	case fs[di].text != "" && !pg:
		return di, orderLabels
	case fs[di].text == "" && fs[di].drive == driveEquality && pg:
		return di, orderCreated
	}
	return -1, orderExact
}

// block is the block of lo that an object created at created (µs) is in.
func (lo looseOrder) block(created int64) (int64, int64) {
	if lo == orderLabels {
		return models.TextBlock(created)
	}
	return created, created + 1
}

// settleTies puts a page in a loose order (out) into the listing's
// order: the statement orders rows by block (a millisecond, or a
// creation time), not within one, so the page is sorted, and when it is
// full the matches of its last block are read whole (the filter
// narrowed to that block) in case one that sorts earlier was left out.
func (s *Store) settleTies(ctx context.Context, u *models.User, ts *typeState, fs []valueFilter, di int, lo looseOrder, ord order, after *cursor, limit int, out []models.Object) ([]models.Object, error) {
	sortCreated(out, ord.desc)
	if len(out) < limit || len(out) == 0 {
		return out, nil
	}
	first, end := lo.block(models.CreatedKey(out[len(out)-1].CreatedAt))
	narrowed := append([]valueFilter(nil), fs...)
	narrowed[di].block = &[2]int64{first, end}
	tie, err := s.runObjects(ctx, u, ts, narrowed, ord, after, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	merged := tie
	for _, o := range out {
		if b, _ := lo.block(models.CreatedKey(o.CreatedAt)); b != first {
			merged = append(merged, o)
		}
	}
	sortCreated(merged, ord.desc)
	return merged[:min(limit, len(merged))], nil
}

// A textWindow is how Postgres finds a common substring: by reading the
// type's next objects in creation order, as many as window, and keeping
// those whose JSON text holds the substring (like) and whose property
// does (the filter's probe of the index). The trigram index finds every
// match and the table rows of every candidate before it can sort them,
// whatever the page needs (230 ms at a million objects for a phrase in
// 2% of them); reading objects in order costs about 2 µs each and stops
// at the page, so where matches are dense it reads a few thousand. A
// first window of textWindowFirst objects measures how dense they are;
// a second is read if that predicts a full page within textWindowMax,
// and otherwise the trigram index answers (windowed).
type textWindow struct {
	window int
	like   string
}

const (
	textWindowFirst = 1000
	textWindowMax   = 20000
)

// windowable is the text filter's index and its pattern over objects'
// JSON text when a page may be read through windows: on Postgres, in
// creation order, at no offset, a substring whose characters the JSON
// of objects.properties holds as they are (encoding/json escapes quotes,
// backslashes, control characters, <, >, &, U+2028 and U+2029).
func (s *Store) windowable(fs []valueFilter, ord order, offset int) (int, string) {
	di, none := driver(fs, ord)
	if none || di < 0 || fs[di].text == "" || offset > 0 || !models.IsPostgres(s.db) || !utf8.ValidString(fs[di].text) ||
		strings.ContainsAny(fs[di].text, "\"\\<>&\u2028\u2029") || strings.IndexFunc(fs[di].text, func(r rune) bool { return r < 0x20 }) >= 0 {
		return -1, ""
	}
	return di, likeContains(fs[di].text)
}

// windowSQL reads the window: the type's next w.window objects after the
// keyset position, in the listing's order, whose JSON text holds the
// substring (a necessary condition; the probe decides).
func (s *Store) windowSQL(ts *typeState, w *textWindow, desc bool, after *cursor) (string, []any) {
	cols := sortCols{at: "o.created_at", id: "o.id", atTime: true}
	q := "SELECT o.* FROM (SELECT * FROM objects o WHERE o.object_type_id = ?"
	args := []any{ts.ot.ID}
	if after != nil {
		k, as := keysetSQL(cols, after, desc)
		q, args = q+" AND "+k, append(args, as...)
	}
	q += " ORDER BY " + orderSQL(cols, desc) + ` LIMIT ?) o WHERE o.properties LIKE ? ESCAPE '\'`
	return q, append(args, w.window, w.like)
}

// windowed answers a page of a Postgres substring search through windows
// of objects (textWindow) when their matches are dense enough; false
// when the trigram index should.
func (s *Store) windowed(ctx context.Context, u *models.User, ts *typeState, fs []valueFilter, ord order, after *cursor, offset, limit int) ([]models.Object, bool, error) {
	_, like := s.windowable(fs, ord, offset)
	if like == "" {
		return nil, false, nil
	}
	read := func(window int) ([]models.Object, error) {
		out := []models.Object{}
		q, args, _ := s.statement(u, ts, fs, ord, after, 0, limit, &textWindow{window: window, like: like})
		if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&out).Error; err != nil {
			return nil, fmt.Errorf("query objects of %s: %w", ts.ot.Name, err)
		}
		return out, nil
	}
	out, err := read(textWindowFirst)
	if err != nil || len(out) == limit {
		return out, err == nil, err
	}
	// The first window's matches predict the second's: half again as
	// many objects as a page needs at their density.
	if len(out) == 0 || textWindowFirst*(limit-len(out))*3/(2*len(out)) > textWindowMax {
		return nil, false, nil
	}
	// The second window starts where the first did: its first matches
	// are the first window's, and its page is whole or it falls through.
	more, err := read(textWindowMax)
	if err != nil || len(more) == limit {
		return more, err == nil, err
	}
	return nil, false, nil
}

// sortCreated sorts objs in creation order (ties by id), or its reverse.
func sortCreated(objs []models.Object, desc bool) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := models.CreatedKey(objs[i].CreatedAt), models.CreatedKey(objs[j].CreatedAt)
		if a != b {
			return (a < b) != desc
		}
		return (objs[i].ID < objs[j].ID) != desc
	})
}

// objectsSQL is queryObjects' statement; false when no object can match.
// In creation order the best-driving filter is joined (its index rows
// in creation order for an equality) and the others are probes of an
// object's rows; ordered by a property, that property's index rows
// drive (one range of the index, already in order) and every filter is
// a probe; ordered by update, idx_object_updated drives.
func (s *Store) objectsSQL(u *models.User, ts *typeState, fs []valueFilter, ord order, after *cursor, offset, limit int) (string, []any, bool) {
	return s.statement(u, ts, fs, ord, after, offset, limit, nil)
}

// statement is objectsSQL, or, with a window, windowSQL's statement.
func (s *Store) statement(u *models.User, ts *typeState, fs []valueFilter, ord order, after *cursor, offset, limit int, w *textWindow) (string, []any, bool) {
	di, none := driver(fs, ord)
	if none {
		return "", nil, false
	}
	var sb strings.Builder
	var args []any
	cols := sortCols{at: "d.created", id: "d.object_id", idKey: true}
	_, loose := s.looseOrder(fs, ord, offset)
	if w != nil {
		di, loose = -1, orderExact // every filter a probe of the window's objects
	}
	switch {
	case w != nil:
		q, as := s.windowSQL(ts, w, ord.desc, after)
		sb.WriteString(q)
		args = append(args, as...)
		cols = sortCols{at: "o.created_at", id: "o.id", atTime: true}
	case ord.field == OrderUpdated:
		sb.WriteString("SELECT o.* FROM objects o WHERE 1 = 1")
		cols = sortCols{at: "o.updated_at", id: "o.id", atTime: true}
	case ord.field != "":
		sb.WriteString("SELECT o.* FROM object_values d CROSS JOIN objects o WHERE d.prop = ?")
		args = append(args, ord.prop)
		if ord.strs {
			// One row per object: not the second row of a date-like string.
			sb.WriteString(" AND (d.key < ? OR d.key >= ?)")
			args = append(args, []byte{domain.KeyInstantText}, []byte{domain.KeyInstantText + 1})
		}
		sb.WriteString(" AND o.id = " + s.idText("d.object_id"))
		cols.key = "d.key"
	case loose == orderLabels:
		q, as := s.labelledTextDriver(fs[di], ord.desc, after)
		sb.WriteString(q)
		args = append(args, as...)
	case di >= 0 && fs[di].text != "":
		q, as := s.textDriver(fs[di], ord.desc)
		sb.WriteString(q)
		args = append(args, as...)
	case di >= 0:
		p, as := fs[di].rowPred("d")
		sb.WriteString("SELECT o.* FROM object_values d CROSS JOIN objects o WHERE o.id = " + s.idText("d.object_id") + " AND " + p)
		args = append(args, as...)
		if b := fs[di].block; b != nil {
			sb.WriteString(" AND d.created >= ? AND d.created < ?")
			args = append(args, b[0], b[1])
		}
	default:
		sb.WriteString("SELECT o.* FROM objects o WHERE 1 = 1")
		cols = sortCols{at: "o.created_at", id: "o.id", atTime: true}
	}
	sb.WriteString(" AND o.object_type_id = ?")
	args = append(args, ts.ot.ID)
	if sc := s.levels.ReadScope(u); !sc.All {
		cond, as := sc.SQL("o")
		sb.WriteString(" AND " + cond)
		args = append(args, as...)
	}
	// Ordered, the order's index must drive and each filter be probed
	// per object: Postgres would turn a probe into a semi-join and sort
	// all its matches (2 s for a filter of 50% at 100,000 objects);
	// OFFSET 0 keeps it a per-row subplan. So in a text window, whose
	// objects are read in order.
	probeEnd := ")"
	if (ord.field != "" || w != nil) && models.IsPostgres(s.db) {
		probeEnd = " OFFSET 0)"
	}
	// A probe names the driving index row's object id (and creation
	// time) where there is one, so it runs before the object is read: an
	// object a probe rejects costs no read of its row (half the reads of
	// an ordered page filtered to 50%).
	probeID, created := s.idKey("o.id"), "CAST(EXTRACT(EPOCH FROM o.created_at) * 1000000 AS bigint)"
	if cols.idKey {
		probeID, created = "d.object_id", "d.created"
	}
	for i, f := range fs {
		if i == di || (f.none && f.negate) {
			continue
		}
		p, as := f.rowPred("e")
		if f.eq && models.IsPostgres(s.db) {
			// Postgres has no index of (object_id, prop, key): with
			// the object's creation time an equality's probe is one
			// entry of idx_object_value, not a scan of the key's entries
			// for the object (which the planner picks, 50 ms for a key
			// of 5,000 objects).
			p += " AND e.created = " + created
		}
		not := ""
		if f.negate {
			not = "NOT "
		}
		sb.WriteString(" AND " + not + "EXISTS (SELECT 1 FROM object_values e WHERE e.object_id = " + probeID + " AND " + p + probeEnd)
		args = append(args, as...)
	}
	if after != nil {
		q, as := keysetSQL(cols, after, ord.desc)
		sb.WriteString(" AND " + q)
		args = append(args, as...)
	}
	by := orderSQL(cols, ord.desc)
	switch loose { // settled by settleTies
	case orderLabels:
		by = orderSQL(sortCols{id: "t.rowid"}, ord.desc)
	case orderCreated:
		by = orderSQL(sortCols{at: "d.created"}, ord.desc)
	}
	sb.WriteString(" ORDER BY " + by + " LIMIT ? OFFSET ?")
	args = append(args, limit, offset)
	return sb.String(), args, true
}

// textDriver selects the objects whose property holds f.text through the
// trigram index: FTS5's phrase of the text's trigrams (case-sensitive)
// over object_texts, Postgres' LIKE over the strings of object_values,
// served by pg_trgm (models.ValueText).
//
// The matches' ids and creation times are sorted first (SQLite: the
// materialized hits; Postgres: a subquery that OFFSET 0 keeps from being
// merged into the join, whose order the join keeps), and objects are
// read from there until the page is full: reading every match's object
// before sorting cost one random row read per match (2,000 matches of
// a search at 100,000 objects for a page of 100: 31 ms on Postgres, 24
// ms sorted first). SQLite does this only for a page at an offset;
// otherwise its labelled texts come in order (labelledTextDriver).
func (s *Store) textDriver(f valueFilter, desc bool) (string, []any) {
	order := orderSQL(sortCols{at: "d.created", id: "d.object_id"}, desc)
	if models.IsPostgres(s.db) {
		return "SELECT o.* FROM (SELECT d.object_id, d.created FROM object_values d WHERE " + models.ValueTextOf("d") + ` LIKE ? ESCAPE '\' AND d.prop = ? ORDER BY ` + order +
				" OFFSET 0) d CROSS JOIN objects o WHERE o.id = " + s.idText("d.object_id"),
			[]any{likeContains(f.text), f.prop}
	}
	return "WITH hits AS MATERIALIZED (SELECT d.object_id, d.created FROM object_texts_fts t CROSS JOIN object_texts d WHERE t.object_texts_fts MATCH ? AND d.id = t.rowid AND d.prop = ? ORDER BY " + order +
			") SELECT o.* FROM hits d CROSS JOIN objects o WHERE o.id = " + s.idText("d.object_id"),
		[]any{ftsPhrase(f.text), f.prop}
}

// ftsPhrase is an FTS5 phrase of s: with the trigram tokenizer, the
// strings containing s.
func ftsPhrase(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// labelledTextDriver selects the objects whose property holds f.text
// through SQLite's FTS5 table in label order (models.TextBlock): FTS5
// returns a phrase's matches in rowid order and stops when the page is
// full, so a search reads about the matches its page needs. The keyset
// position after becomes a label bound too, so a later page starts in
// the trigram lists where the last one stopped.
func (s *Store) labelledTextDriver(f valueFilter, desc bool, after *cursor) (string, []any) {
	q := "SELECT o.* FROM object_texts_fts t CROSS JOIN object_texts d CROSS JOIN objects o WHERE t.object_texts_fts MATCH ?"
	args := []any{ftsPhrase(f.text)}
	if f.block != nil {
		q += " AND t.rowid >= ? AND t.rowid < ?"
		args = append(args, f.block[0], f.block[1])
	}
	if after != nil {
		lo, hi := models.TextBlock(after.At)
		if desc {
			q, args = q+" AND t.rowid < ?", append(args, hi)
		} else {
			q, args = q+" AND t.rowid >= ?", append(args, lo)
		}
	}
	q += " AND d.id = t.rowid AND d.prop = ? AND o.id = " + s.idText("d.object_id")
	return q, append(args, f.prop)
}

// idText is the object id (text, as objects.id) of the index's id
// bytes (models.IDKey) in column col; idKey is the index's id bytes of
// the object id in column col. The index's columns are compared with
// them, so the indexes on either side serve the join.
func (s *Store) idText(col string) string {
	if models.IsPostgres(s.db) {
		return "CAST(CAST(encode(" + col + ", 'hex') AS uuid) AS text)"
	}
	h := "hex(" + col + ")"
	return "lower(substr(" + h + ", 1, 8) || '-' || substr(" + h + ", 9, 4) || '-' || substr(" + h + ", 13, 4) || '-' || substr(" +
		h + ", 17, 4) || '-' || substr(" + h + ", 21))"
}

func (s *Store) idKey(col string) string {
	if models.IsPostgres(s.db) {
		return "uuid_send(CAST(" + col + " AS uuid))"
	}
	return "unhex(" + col + ", '-')"
}

// mergeObjects merges lists each in creation order into one, each object
// once, at most limit.
func mergeObjects(lists [][]models.Object, limit int) []models.Object {
	out := []models.Object{}
	seen := map[string]bool{}
	for _, l := range lists {
		for _, o := range l {
			if !seen[o.ID] {
				seen[o.ID] = true
				out = append(out, o)
			}
		}
	}
	sortCreated(out, false)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// indexObject replaces the index rows of o (of type ts) inside tx.
func (s *Store) indexObject(ctx context.Context, tx *gorm.DB, ts *typeState, o *models.Object, fresh bool) error {
	return models.IndexObject(ctx, tx, o.ID, o.CreatedAt, ts.props, o.Properties.V, fresh)
}
