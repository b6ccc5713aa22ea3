package ontology_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// Value pools of the differential test: small, so that equalities and
// ranges hit, with the edge cases of every comparison (instants written
// differently, markings among strings, strings longer than an index key,
// exact decimals, nested JSON).
var (
	long        = strings.Repeat("x", 128)
	diffStrings = []string{"", "a", "alpha", "Alpha", "alphabet", "beta", "b", "public", "confidential", "pii",
		"2024-01-01", "2024-01-01T00:00:00Z", "2024-01-01T01:00:00+01:00", "2023-06-15T08:30:00.5Z", "zeta", "é",
		"ab%_c", long, long + "x", long + "xa", long + "xb", long + "y", long[:120], "x"}
	diffSubstrings = []string{"a", "lph", "", "x", "xa", "T00", "%", "_", "é", "b%_c", "%_c", "xxx", "pha", "lphab", "01:00:00+", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxb"}
	diffInts       = []string{"-3", "-2", "-1", "0", "1", "2", "3", "100", "9223372036854775807", "-9223372036854775808"}
	diffIntFilters = append([]string{"2.0", "1e1", "-0"}, diffInts...)
	diffDoubles    = []string{"0.1", "0.5", "-1.25", "1e21", "3", "2.5e-7", "-0", "100", "0.30000000000000004", "-1e-300"}
	diffDates      = []string{"2024-01-01", "2024-02-29", "2023-12-31", "1999-01-01"}
	diffTimes      = []string{"2024-01-01T00:00:00Z", "2024-01-01T01:00:00+01:00", "2023-12-31T23:59:59.999Z",
		"2024-01-01T00:00:00.000000001Z", "2024-06-01T12:00:00-07:00", "0001-01-01T00:00:00Z", "2024-01-01T00:00:00.5+00:30"}
	diffJSON = []string{`1`, `1.0`, `"a"`, `"2024-01-01"`, `"2024-01-01T00:00:00Z"`, `true`, `false`, `[1,2]`, `[1.0,2]`,
		`{"x":1}`, `{"x":1.0}`, `[]`, `{}`, `["a",[1]]`, `["a",[1.0]]`, `{"y":{"z":[null]}}`, `1e-00001`, `[1e-00001]`}
	diffRefs  = []string{"6f1c3f1e-0000-4000-8000-000000000001", "6f1c3f1e-0000-4000-8000-000000000002", "6F1C3F1E-0000-4000-8000-000000000003"}
	diffGeo   = []string{`{"lat":1,"lon":2}`, `{"lat":1.0,"lon":2}`, `{"lat":-3.5,"lon":100}`}
	diffMedia = []string{"http://a/b", "2024-01-01", `s3://bucket/key`}
	diffVec   = []string{`[1,2,3]`, `[1.0,2,3]`, `[0,0,1]`}
	diffOrgs  = []string{"o1", "o2"}
)

// diffType is the object type of the differential test: a property of
// every type the listing filters.
const diffType = `{"name":"Diff","properties":[
	{"name":"s","type":"string"},{"name":"s2","type":"string"},{"name":"i","type":"integer"},
	{"name":"d","type":"double"},{"name":"b","type":"boolean"},{"name":"dt","type":"date"},
	{"name":"ts","type":"timestamp"},{"name":"k","type":"marking"},{"name":"j","type":"json"},
	{"name":"as","type":{"type":"array","element_type":"string"}},
	{"name":"ai","type":{"type":"array","element_type":"integer"}},
	{"name":"at","type":{"type":"array","element_type":"timestamp"}},
	{"name":"aa","type":{"type":"array","element_type":{"type":"array","element_type":"double"}}},
	{"name":"r","type":"reference"},{"name":"g","type":"geo_point"},{"name":"m","type":"media_reference"},
	{"name":"v","type":"vector"}]}`

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

// diffValue is a random value of property p as JSON text.
func diffValue(r *rand.Rand, p string) string {
	q := strconv.Quote
	switch p {
	case "s", "s2":
		b, _ := json.Marshal(pick(r, diffStrings))
		return string(b)
	case "i":
		return pick(r, diffInts)
	case "d":
		return pick(r, diffDoubles)
	case "b":
		return pick(r, []string{"true", "false"})
	case "dt":
		return q(pick(r, diffDates))
	case "ts":
		return q(pick(r, diffTimes))
	case "k":
		return q(pick(r, []string{"public", "confidential", "pii"}))
	case "j":
		return pick(r, diffJSON)
	case "r":
		return q(pick(r, diffRefs))
	case "g":
		return pick(r, diffGeo)
	case "m":
		return q(pick(r, diffMedia))
	case "v":
		return pick(r, diffVec)
	}
	n := r.Intn(4)
	items := make([]string, n)
	for i := range items {
		switch p {
		case "as":
			b, _ := json.Marshal(pick(r, diffStrings[:12]))
			items[i] = string(b)
		case "ai":
			items[i] = pick(r, diffInts)
		case "at":
			items[i] = q(pick(r, diffTimes))
		case "aa":
			items[i] = "[" + pick(r, []string{"", "1", "1.0", "1,2", "0.5"}) + "]"
		}
	}
	return "[" + strings.Join(items, ",") + "]"
}

var diffProps = []string{"s", "s2", "i", "d", "b", "dt", "ts", "k", "j", "as", "ai", "at", "aa", "r", "g", "m", "v"}

// diffFilter is a random filter of property p, as a query string carries
// it (some of them invalid: the 400 is compared too).
func diffFilter(r *rand.Rand, p string) ontology.RawFilter {
	ops := []string{"exists", "not_exists", "is", "is_not"}
	switch p {
	case "s", "s2", "i", "d", "dt", "ts", "k":
		ops = append(ops, "greater_than", "greater_than_or_equals", "less_than", "less_than_or_equals")
	}
	switch p {
	case "s", "s2", "as", "ai", "at", "aa":
		ops = append(ops, "includes", "includes")
	}
	op := pick(r, ops)
	key := p + "." + op
	if op == "is" && r.Intn(2) == 0 {
		key = p
	}
	if op == "exists" || op == "not_exists" {
		return ontology.RawFilter{Key: key, Value: pick(r, []string{"", "true"})}
	}
	var v string
	switch p {
	case "s", "s2":
		if op == "includes" {
			v = pick(r, diffSubstrings)
		} else {
			v = pick(r, diffStrings)
		}
	case "i":
		v = pick(r, diffIntFilters)
	case "d":
		v = pick(r, diffDoubles)
	case "dt":
		v = pick(r, diffDates)
	case "ts":
		v = pick(r, diffTimes)
	case "k":
		v = pick(r, []string{"public", "confidential", "pii"})
	case "as":
		v = pick(r, diffStrings[:12])
	case "ai":
		v = pick(r, diffIntFilters)
	case "at":
		v = pick(r, diffTimes)
	case "aa":
		v = "[" + pick(r, []string{"", "1", "1.0", "1,2", "0.5"}) + "]"
	case "r":
		v = pick(r, diffRefs)
	case "m":
		v = pick(r, diffMedia)
	default:
		v = diffValue(r, p)
		if s, err := strconv.Unquote(v); err == nil && p != "j" {
			v = s
		}
	}
	return ontology.RawFilter{Key: key, Value: v}
}

// randomObject is a random property set (each property absent one time
// in five).
func randomObject(t *testing.T, r *rand.Rand) map[string]any {
	var parts []string
	for _, p := range diffProps {
		if r.Intn(5) > 0 {
			parts = append(parts, strconv.Quote(p)+":"+diffValue(r, p))
		}
	}
	return jsMap(t, "{"+strings.Join(parts, ",")+"}")
}

func diffCount(def int) int {
	if n, err := strconv.Atoi(os.Getenv("ONTOFLOW_DIFF_SCALE")); err == nil && n > 0 {
		return def * n
	}
	return def
}

// TestQueryMatchesGoEvaluator is the differential test of the query path:
// thousands of objects with random values of every property type, and
// thousands of random filter combinations, each listed in pages by the
// database and by the Go evaluator over the readable objects in creation
// order, for an admin and for a user whose read rule hides objects; then
// again after updates, deletes, restores and property changes.
func TestQueryMatchesGoEvaluator(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, diffType, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		r := rand.New(rand.NewSource(27))
		reader := &models.User{ID: "00000000-0000-4000-8000-0000000000bb", Username: "reader",
			Roles: models.NewJSON([]string{"viewer"}), Clearance: "confidential", Organization: "o1"}
		var ids []string
		err := db.Transaction(func(tx *gorm.DB) error {
			for i := 0; i < diffCount(2000); i++ {
				o, err := s.CreateObject(ctx, tx, "Diff", randomObject(t, r), pick(r, []string{"public", "confidential", "pii"}), admin.ID, pick(r, diffOrgs))
				if err != nil {
					return err
				}
				ids = append(ids, o.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Statistics, as autovacuum would gather them on a live database.
		if err := db.Exec("ANALYZE").Error; err != nil {
			t.Fatal(err)
		}
		rounds := diffCount(1500)
		compareQueries(t, s, r, []*models.User{admin, reader}, rounds)

		// Every write path keeps the index in step.
		var deleted []domain.Object
		err = db.Transaction(func(tx *gorm.DB) error {
			for i := 0; i < 300; i++ {
				id := pick(r, ids)
				patch := map[string]any{}
				for _, p := range []string{pick(r, diffProps), pick(r, diffProps)} {
					patch[p] = nil
					if r.Intn(3) > 0 {
						patch[p] = js(t, diffValue(r, p))
					}
				}
				if _, err := s.UpdateObject(ctx, tx, id, patch); err != nil && !apperr.Is(err, apperr.ObjectNotFound) {
					return err
				}
			}
			for i := 0; i < 150; i++ {
				o, _, err := s.DeleteObject(ctx, tx, pick(r, ids))
				if apperr.Is(err, apperr.ObjectNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				deleted = append(deleted, *o)
			}
			for _, o := range deleted[:len(deleted)/2] {
				if err := s.RestoreObject(ctx, tx, o); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Property migrations: a new property with a default, a changed
		// type (string to json), a dropped property.
		ok(s.CreateProperty(ctx, "Diff", ontology.PropertySpec{Name: "n", Type: domain.T(domain.TypeInteger), Required: true, DefaultValue: json.Number("7")}))(t)
		ok(s.UpdateProperty(ctx, "Diff", "s2", ontology.PropertySpec{Name: "s2", Type: domain.T(domain.TypeJSON)}))(t)
		if err := s.DeleteProperty(ctx, "Diff", "g"); err != nil {
			t.Fatal(err)
		}
		ok(s.CreateProperty(ctx, "Diff", ontology.PropertySpec{Name: "g", Type: domain.T(domain.TypeString)}))(t)
		diffProps = append(diffProps, "n")
		defer func() { diffProps = diffProps[:len(diffProps)-1] }()
		compareQueries(t, s, r, []*models.User{admin, reader}, rounds/3)
		loadReadable(t, s, []*models.User{admin})
		for _, f := range []ontology.RawFilter{{Key: "n", Value: "7"}, {Key: "s2.is", Value: `"alpha"`}, {Key: "g.exists"}} {
			compareOne(t, s, admin, []ontology.RawFilter{f}, 10)
		}
	})
}

// compareQueries lists random filter combinations both ways.
func compareQueries(t *testing.T, s *ontology.Store, r *rand.Rand, users []*models.User, rounds int) {
	t.Helper()
	loadReadable(t, s, users)
	checked := 0
	for i := 0; i < rounds; i++ {
		var fs []ontology.RawFilter
		for n := 1 + r.Intn(3); n > 0; n-- {
			fs = append(fs, diffFilter(r, pick(r, diffProps)))
		}
		u := pick(r, users)
		if compareOne(t, s, u, fs, 1+r.Intn(40)) {
			checked++
			if r.Intn(2) == 0 {
				compareOrdered(t, s, r, u, fs)
			}
		}
		if t.Failed() {
			return
		}
	}
	if checked < rounds/2 {
		t.Fatalf("only %d of %d filter combinations were valid", checked, rounds)
	}
	t.Logf("%d filter combinations compared (%d refused both ways)", rounds, rounds-checked)
}

// compareOne compares the listing of fs for u, page by page (pageSize),
// with the Go evaluator over all objects u may read; false when fs is
// refused (both ways alike).
func compareOne(t *testing.T, s *ontology.Store, u *models.User, fs []ontology.RawFilter, pageSize int) bool {
	t.Helper()
	ctx := context.Background()
	conds, perr := s.OracleConditions(ctx, "Diff", fs)
	_, lerr := s.ListObjects(ctx, u, "Diff", ontology.ObjectQuery{Filters: fs, Limit: 1})
	if perr != nil || lerr != nil {
		if perr == nil || lerr == nil || apperr.MessageOf(perr) != apperr.MessageOf(lerr) || !apperr.Is(lerr, apperr.InvalidArgument) {
			t.Fatalf("filters %v: oracle error %v, listing error %v", fs, perr, lerr)
		}
		return false
	}
	all := readable[u.ID]
	var want []string
	for i := range all {
		if s.OracleMatch(conds, &all[i]) {
			want = append(want, all[i].ID)
		}
	}
	// The whole list at once, then its first pages and one further on.
	var got []string
	for _, o := range ok(s.ListObjects(ctx, u, "Diff", ontology.ObjectQuery{Filters: fs, Limit: 1 << 20}))(t) {
		got = append(got, o.ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("filters %v as %s: database path %d objects, Go evaluator %d; first difference at %s",
			fs, u.Username, len(got), len(want), firstDiff(got, want))
	}
	for _, off := range []int{0, pageSize, 2 * pageSize, len(want) / 2, len(want) - 1} {
		if off < 0 {
			continue
		}
		page := ok(s.ListObjects(ctx, u, "Diff", ontology.ObjectQuery{Filters: fs, Offset: off, Limit: pageSize}))(t)
		wantPage := want[min(off, len(want)):min(off+pageSize, len(want))]
		var gotPage []string
		for _, o := range page {
			gotPage = append(gotPage, o.ID)
		}
		if strings.Join(gotPage, ",") != strings.Join(wantPage, ",") {
			t.Fatalf("filters %v as %s: page at %d of %d differs", fs, u.Username, off, pageSize)
		}
	}
	// Any-of (the console's search): each filter alone, merged.
	if len(fs) > 1 {
		found := ok(s.SearchObjects(ctx, u, "Diff", fs, 20))(t)
		var wantAny []string
		for i := range all {
			for _, c := range conds {
				if s.OracleMatch([]domain.Condition{c}, &all[i]) {
					wantAny = append(wantAny, all[i].ID)
					break
				}
			}
			if len(wantAny) == 20 {
				break
			}
		}
		var gotAny []string
		for _, o := range found {
			gotAny = append(gotAny, o.ID)
		}
		if strings.Join(gotAny, ",") != strings.Join(wantAny, ",") {
			t.Fatalf("search any of %v as %s: database path %v, Go evaluator %v", fs, u.Username, len(gotAny), len(wantAny))
		}
	}
	return true
}

// readable are the objects each user may read in creation order (the
// unfiltered listing), loaded once per round of comparisons.
var readable = map[string][]models.Object{}

func loadReadable(t *testing.T, s *ontology.Store, users []*models.User) {
	for _, u := range users {
		readable[u.ID] = ok(s.ListObjects(context.Background(), u, "Diff", ontology.ObjectQuery{Limit: 1 << 20}))(t)
	}
}

func firstDiff(a, b []string) string {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return fmt.Sprint(i)
		}
	}
	return fmt.Sprint(len(a))
}

// diffOrders are the orderings compared: the object fields and every
// orderable property, both ways.
func diffOrders() []string {
	out := []string{"", "created_at", "-created_at", "updated_at", "-updated_at"}
	for _, p := range []string{"s", "s2", "i", "d", "b", "dt", "ts", "k", "r", "m", "n"} {
		out = append(out, p, "-"+p)
	}
	return out
}

// compareOrdered lists fs for u in a random order both ways: the whole
// list, and a walk of its pages by page token, each page exactly the
// Go oracle's (the readable objects that match, sorted by the sort key,
// then creation, then id).
func compareOrdered(t *testing.T, s *ontology.Store, r *rand.Rand, u *models.User, fs []ontology.RawFilter) {
	t.Helper()
	ctx := context.Background()
	ob := pick(r, diffOrders())
	q := ontology.ObjectQuery{Filters: fs, OrderBy: ob, Limit: 1 << 20}
	got, err := s.ListObjects(ctx, u, "Diff", q)
	if err != nil {
		// A property the type no longer has, or of a type without an
		// order (s2 after its change to json): refused, naming order_by.
		if ae, ok := apperr.As(err); ok && ae.Code == apperr.InvalidArgument && len(ae.Details) > 0 && ae.Details[0].Field == "order_by" {
			return
		}
		t.Fatalf("filters %v order_by %q: %v", fs, ob, err)
	}
	conds := ok(s.OracleConditions(ctx, "Diff", fs))(t)
	var want []models.Object
	for _, o := range readable[u.ID] {
		if s.OracleMatch(conds, &o) {
			want = append(want, o)
		}
	}
	sortOracle(want, ob)
	wantIDs := objIDs(want)
	if g := objIDs(got); strings.Join(g, ",") != strings.Join(wantIDs, ",") {
		t.Fatalf("filters %v order_by %q as %s: database path %d objects, oracle %d; first difference at %s",
			fs, ob, u.Username, len(g), len(wantIDs), firstDiff(g, wantIDs))
	}
	size := 1 + r.Intn(60)
	q.Limit = size
	var walked []string
	for page := 0; page < 25; page++ {
		p := ok(s.ListObjectsPage(ctx, u, "Diff", q))(t)
		ids := objIDs(p.Items)
		from := min(len(walked), len(wantIDs))
		wantPage := wantIDs[from:min(from+size, len(wantIDs))]
		if strings.Join(ids, ",") != strings.Join(wantPage, ",") {
			t.Fatalf("filters %v order_by %q as %s: page %d of %d differs (%d objects, oracle %d)", fs, ob, u.Username, page, size, len(ids), len(wantPage))
		}
		walked = append(walked, ids...)
		if (p.NextPageToken == "") != (len(walked) == len(wantIDs)) {
			t.Fatalf("filters %v order_by %q: next page token %q after %d of %d objects", fs, ob, p.NextPageToken, len(walked), len(wantIDs))
		}
		if p.NextPageToken == "" {
			break
		}
		q.PageToken = p.NextPageToken
	}
}

// sortOracle sorts objs (in creation order) as order_by ob orders them.
func sortOracle(objs []models.Object, ob string) {
	field, desc := strings.CutPrefix(ob, "-")
	key := func(o *models.Object) ([]byte, int64) {
		switch field {
		case "", "created_at":
			return nil, o.CreatedAt.UnixMicro()
		case "updated_at":
			return nil, o.UpdatedAt.UnixMicro()
		}
		return ontology.OracleSortKey(o.Properties.V[field]), o.CreatedAt.UnixMicro()
	}
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := &objs[i], &objs[j]
		if desc {
			a, b = b, a
		}
		ka, ta := key(a)
		kb, tb := key(b)
		if c := bytes.Compare(ka, kb); c != 0 {
			return c < 0
		}
		if ta != tb {
			return ta < tb
		}
		return a.ID < b.ID
	})
}

func objIDs(objs []models.Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.ID)
	}
	return out
}
