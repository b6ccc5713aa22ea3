package ontology_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// aggShapes are issue 48's benchmark shapes.
var aggShapes = []struct {
	name   string
	req    string
	metric string // the property of the metric pass ("" : the counts)
}{
	{"count of a type", `{}`, ""},
	{"count by a property of few values", `{"group_by":[{"property":"tag"}]}`, ""},
	{"sum over a filter", `{"filters":[{"key":"tag","value":"t3"}],"metrics":[{"type":"sum","property":"n"}]}`, "n"},
	{"daily date histogram", `{"group_by":[{"property":"at","type":"date","interval":"day"}]}`, ""},
	{"distinct values", `{"metrics":[{"type":"exact_distinct","property":"key"}]}`, "key"},
	{"count by array element, filtered by a range", `{"filters":[{"key":"n.greater_than","value":"100"}],"group_by":[{"property":"tags"}]}`, ""},
}

// Plans that read a table whole: SQLite's SCAN of an index-table alias
// without an index, Postgres' sequential scans (disabled for the
// EXPLAIN, so one appears only where no index can serve).
var (
	sqliteBareScan = regexp.MustCompile(`SCAN (g\d|m|e|o)( |$)(?:[^U]|$)`)
	sqliteScanUses = regexp.MustCompile(`SCAN (g\d|m|e|o) USING`)
)

// TestAggregatePlansUseIndexes asserts that every aggregation shape
// reads the objects by idx_object_type and each property's index rows by
// the object (SQLite's primary key of object_values, Postgres'
// idx_object_values_object or idx_object_value), for an admin and for a
// reader whose read rule is in the statement.
func TestAggregatePlansUseIndexes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, `{"name":"Plan","properties":[{"name":"key","type":"string"},{"name":"n","type":"integer"},
			{"name":"tag","type":"string"},{"name":"at","type":"timestamp"},{"name":"tags","type":{"type":"array","element_type":"string"}}]}`, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		loadAnalyzed(t, db, func(tx *gorm.DB) error {
			for i := 0; i < 300; i++ {
				props := jsMap(t, fmt.Sprintf(`{"key":"k%d","n":%d,"tag":"t%d","at":"2024-01-%02dT00:%02d:00Z","tags":["red","c%d"]}`, i, i, i%10, 1+i%28, i%60, i%7))
				if _, err := s.CreateObject(ctx, tx, "Plan", props, "", admin.ID, "o1"); err != nil {
					return err
				}
			}
			return nil
		})
		reader := &models.User{ID: "00000000-0000-4000-8000-0000000000bb", Username: "reader",
			Roles: models.NewJSON([]string{"viewer"}), Clearance: "confidential", Organization: "o1"}
		for _, sh := range aggShapes {
			var req ontology.AggregateRequest
			if err := json.Unmarshal([]byte(sh.req), &req); err != nil {
				t.Fatal(err)
			}
			for _, u := range []*models.User{admin, reader} {
				q, args, err := s.AggregateSQL(ctx, u, "Plan", req, sh.metric)
				if err != nil {
					t.Fatal(err)
				}
				plan := explain(t, db, q, args)
				// An admin's aggregation without filters reads the index
				// rows alone (a property's rows are its type's objects).
				if u == admin && req.Filters == nil && (req.GroupBy != nil || sh.metric != "") && regexp.MustCompile(`\bobjects o\b`).MatchString(q) {
					t.Errorf("%s as admin: reads the objects, not the index alone\n%s", sh.name, q)
				}
				bad := false
				if models.IsPostgres(db) {
					bad = regexp.MustCompile(`Seq Scan`).MatchString(plan)
				} else {
					for _, line := range regexp.MustCompile(`\n`).Split(plan, -1) {
						if sqliteBareScan.MatchString(line) && !sqliteScanUses.MatchString(line) {
							bad = true
						}
					}
				}
				if bad {
					t.Errorf("%s as %s: a table is read whole\n%s\nplan:\n%s", sh.name, u.Username, q, plan)
				}
				// And the answer is what the shape asks (not empty).
				res := ok(s.Aggregate(ctx, u, "Plan", req))(t)
				if len(res.Groups) == 0 {
					t.Errorf("%s as %s: no groups", sh.name, u.Username)
				}
			}
		}
	})
}

// approximate_distinct through Aggregate: with approximation allowed and
// more distinct values than the exact limit (lowered here), the answer is
// an estimate and says so; asked for accuracy, the same request counts
// exactly.
func TestAggregateApproximateDistinct(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, `{"name":"Visit","properties":[{"name":"key","type":"string"},{"name":"tag","type":"string"}]}`, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		loadAnalyzed(t, db, func(tx *gorm.DB) error {
			for i := 0; i < 400; i++ {
				props := jsMap(t, fmt.Sprintf(`{"key":"k%d","tag":"t%d"}`, i, i%2))
				if _, err := s.CreateObject(ctx, tx, "Visit", props, "", admin.ID, "o1"); err != nil {
					return err
				}
			}
			return nil
		})
		defer ontology.SetExactDistinctUpTo(50)()
		ask := func(accuracy string) *ontology.AggregateResult {
			var req ontology.AggregateRequest
			decodeInto(t, `{"accuracy":"`+accuracy+`","group_by":[{"property":"tag"}],"metrics":[{"type":"approximate_distinct","property":"key"}]}`, &req)
			return ok(s.Aggregate(ctx, admin, "Visit", req))(t)
		}
		res := ask("allow_approximate")
		if res.Accuracy != ontology.AccuracyApproximate || len(res.Groups) != 2 {
			t.Fatalf("allowed: %+v", res)
		}
		for _, g := range res.Groups {
			if n := g.Metrics["approximate_distinct_key"].(int64); n < 190 || n > 210 {
				t.Errorf("estimate %d of 200 distinct keys in %v", n, g.Key)
			}
		}
		res = ask("accurate")
		if res.Accuracy != ontology.AccuracyAccurate || res.Groups[0].Metrics["approximate_distinct_key"] != int64(200) {
			t.Errorf("accurate: %+v", res)
		}
	})
}

// A date histogram groups instants in SQL by 256-second slots; a slot
// holding instants of two buckets (here local midnight in Kolkata,
// 18:30 UTC, inside one slot, on either side of it, for an admin's
// index-only plan and a reader's) is read again key by key, so each
// instant is in its own bucket. Two objects in the same slot of one
// bucket stay one count of 2.
func TestAggregateDateSlotAcrossBuckets(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, `{"name":"Tick","properties":[{"name":"at","type":"timestamp"},{"name":"tag","type":"string"}]}`, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		loadAnalyzed(t, db, func(tx *gorm.DB) error {
			for _, at := range []string{"2024-01-01T18:29:30Z", "2024-01-01T18:30:10Z", "2024-01-01T18:31:00Z", "2024-01-03T10:00:00Z", "2024-01-03T10:00:01Z"} {
				if _, err := s.CreateObject(ctx, tx, "Tick", jsMap(t, `{"at":"`+at+`","tag":"x"}`), "", admin.ID, "o1"); err != nil {
					return err
				}
			}
			return nil
		})
		reader := &models.User{ID: "00000000-0000-4000-8000-0000000000bb", Username: "reader",
			Roles: models.NewJSON([]string{"viewer"}), Clearance: "confidential", Organization: "o1"}
		var req ontology.AggregateRequest
		decodeInto(t, `{"group_by":[{"property":"tag"},{"property":"at","type":"date","interval":"day","time_zone":"Asia/Kolkata"}]}`, &req)
		for _, u := range []*models.User{admin, reader} {
			res := ok(s.Aggregate(ctx, u, "Tick", req))(t)
			var got []string
			for _, g := range res.Groups {
				got = append(got, fmt.Sprintf("%v=%v", g.Key[1].Value, g.Metrics["count"]))
			}
			want := "[2024-01-01T00:00:00+05:30=1 2024-01-02T00:00:00+05:30=2 2024-01-03T00:00:00+05:30=2]"
			if fmt.Sprint(got) != want {
				t.Errorf("as %s: %v, want %s", u.Username, got, want)
			}
		}
	})
}

// q is the explorer's search inside an aggregation: a substring of a
// text property, an equality of a number, or the object's id, with the
// filters and the read rule still applied.
func TestAggregateSearch(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, `{"name":"Doc","properties":[{"name":"title","type":"string"},{"name":"n","type":"integer"},{"name":"tag","type":"string"}]}`, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		var ids []string
		loadAnalyzed(t, db, func(tx *gorm.DB) error {
			for i, o := range []struct{ props, marking string }{
				{`{"title":"alpha report","n":1,"tag":"a"}`, ""},
				{`{"title":"beta","n":42,"tag":"a"}`, ""},
				{`{"title":"gamma alpha","n":3,"tag":"b"}`, ""},
				{`{"title":"secret alpha","n":4,"tag":"b"}`, "pii"},
				{`{"title":"delta","n":5,"tag":"b"}`, ""},
			} {
				obj, err := s.CreateObject(ctx, tx, "Doc", jsMap(t, o.props), o.marking, admin.ID, "o1")
				if err != nil {
					return fmt.Errorf("object %d: %w", i, err)
				}
				ids = append(ids, obj.ID)
			}
			return nil
		})
		reader := &models.User{ID: "00000000-0000-4000-8000-0000000000bb", Username: "reader",
			Roles: models.NewJSON([]string{"viewer"}), Clearance: "confidential", Organization: "o1"}
		counts := func(u *models.User, body string) string {
			var req ontology.AggregateRequest
			decodeInto(t, body, &req)
			res := ok(s.Aggregate(ctx, u, "Doc", req))(t)
			var out []string
			for _, g := range res.Groups {
				out = append(out, fmt.Sprintf("%v=%v", g.Key[0].Value, g.Metrics["count"]))
			}
			return fmt.Sprint(out)
		}
		for _, c := range []struct {
			u          *models.User
			body, want string
		}{
			{admin, `{"q":"alpha","group_by":[{"property":"tag"}]}`, "[a=1 b=2]"},
			{reader, `{"q":"alpha","group_by":[{"property":"tag"}]}`, "[a=1 b=1]"},
			{admin, `{"q":"42","group_by":[{"property":"tag"}]}`, "[a=1]"},
			{admin, `{"q":"alpha","filters":[{"key":"tag","value":"b"}],"group_by":[{"property":"tag"}]}`, "[b=2]"},
			{admin, `{"q":"` + ids[4] + `","group_by":[{"property":"tag"}]}`, "[b=1]"},
			{admin, `{"q":"nothing like it","group_by":[{"property":"tag"}]}`, "[]"},
		} {
			if got := counts(c.u, c.body); got != c.want {
				t.Errorf("%s as %s: %s, want %s", c.body, c.u.Username, got, c.want)
			}
		}
	})
}

// An admin's group-by of one property reads the index entries alone
// (key, not full); strings longer than an index key share a cut key and
// are told apart by their full text, read again for those keys.
func TestAggregateLongStringsApart(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, `{"name":"Long","properties":[{"name":"s","type":"string"}]}`, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		long := strings.Repeat("x", 200)
		loadAnalyzed(t, db, func(tx *gorm.DB) error {
			for _, v := range []string{long + "a", long + "b", long + "b", "short"} {
				if _, err := s.CreateObject(ctx, tx, "Long", map[string]any{"s": v}, "", admin.ID, "o1"); err != nil {
					return err
				}
			}
			return nil
		})
		for _, body := range []string{`{"group_by":[{"property":"s"}]}`, `{"metrics":[{"type":"exact_distinct","property":"s"}]}`} {
			var req ontology.AggregateRequest
			decodeInto(t, body, &req)
			res := ok(s.Aggregate(ctx, admin, "Long", req))(t)
			var got []string
			for _, g := range res.Groups {
				k := ""
				if len(g.Key) > 0 {
					k = strings.TrimPrefix(fmt.Sprint(g.Key[0].Value), long) + "="
				}
				got = append(got, fmt.Sprint(k, g.Metrics))
			}
			want := "[short=map[count:1] a=map[count:1] b=map[count:2]]"
			if req.Metrics != nil {
				want = "[map[exact_distinct_s:3]]"
			}
			if fmt.Sprint(got) != want {
				t.Errorf("%s: %v, want %s", body, got, want)
			}
		}
	})
}
