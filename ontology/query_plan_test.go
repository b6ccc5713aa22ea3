package ontology_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// planShapes are the query shapes of issue 27's benchmark, each with
// the index its plan must search first ("" = a scan of the type's
// objects in creation order by idx_object_type, probing the index per
// object).
var planShapes = []struct {
	name    string
	filters []ontology.RawFilter
	drive   string
	ordered bool // no sort: rows come from the index in creation order
	orderBy string
	deep    bool // a page after 200 objects (by keyset token)
}{
	{"primary key", []ontology.RawFilter{{Key: "key", Value: "k42"}}, "idx_object_value", true, "", false},
	{"non-unique equality", []ontology.RawFilter{{Key: "tag", Value: "t3"}}, "idx_object_value", true, "", false},
	{"numeric range", []ontology.RawFilter{{Key: "n.greater_than", Value: "295"}}, "idx_object_value", false, "", false},
	{"timestamp range", []ontology.RawFilter{{Key: "at.less_than", Value: "2024-01-01T00:05:00Z"}}, "idx_object_value", false, "", false},
	{"string range", []ontology.RawFilter{{Key: "tag.greater_than", Value: "t8"}}, "idx_object_value", false, "", false},
	{"array includes", []ontology.RawFilter{{Key: "tags.includes", Value: "red"}}, "idx_object_value", true, "", false},
	{"two filters", []ontology.RawFilter{{Key: "tag", Value: "t3"}, {Key: "n.less_than", Value: "50"}}, "idx_object_value", true, "", false},
	{"marking range", []ontology.RawFilter{{Key: "level.greater_than", Value: "public"}}, "idx_object_value", false, "", false},
	{"not exists", []ontology.RawFilter{{Key: "n.not_exists"}}, "idx_object_value", true, "", false},
	{"exists", []ontology.RawFilter{{Key: "n.exists"}}, "", true, "", false},
	{"equality, a deep page", []ontology.RawFilter{{Key: "level", Value: "public"}}, "idx_object_value", true, "", true},
	{"no filter, a deep page", nil, "", true, "", true},
	{"ordered by a number", nil, "idx_object_value", true, "n", false},
	{"ordered by a number, descending, a deep page", nil, "idx_object_value", true, "-n", true},
	{"ordered by a string, filtered", []ontology.RawFilter{{Key: "tag", Value: "t3"}}, "idx_object_value", true, "key", false},
	{"ordered by a string, a deep page", nil, "idx_object_value", true, "key", true},
	{"ordered by a timestamp, descending, filtered, a deep page", []ontology.RawFilter{{Key: "n.greater_than", Value: "10"}}, "idx_object_value", true, "-at", true},
	{"ordered by creation, descending, a deep page", nil, "", true, "-created_at", true},
	{"ordered by update, a deep page", nil, "objects:idx_object_updated", true, "updated_at", true},
	{"ordered by update, descending, filtered", []ontology.RawFilter{{Key: "level", Value: "public"}}, "objects:idx_object_updated", true, "-updated_at", false},
	{"is not", []ontology.RawFilter{{Key: "tag.is_not", Value: "t3"}}, "", true, "", false},
	{"substring of one character", []ontology.RawFilter{{Key: "tag.includes", Value: "3"}}, "", true, "", false},
	{"substring", []ontology.RawFilter{{Key: "key.includes", Value: "k42"}}, "text", false, "", false},
	{"substring, descending, a deep page", []ontology.RawFilter{{Key: "note.includes", Value: "ote"}}, "text", false, "-created_at", true},
	{"substring at an old offset token", []ontology.RawFilter{{Key: "note.includes", Value: "ote"}}, "text-sorted", false, "", false},
	{"substring and equality", []ontology.RawFilter{{Key: "key.includes", Value: "k42"}, {Key: "tag", Value: "t2"}}, "idx_object_value", true, "", false},
}

// TestQueryPlansUseIndexes asserts that every query shape of the
// listing is answered through indexes (SQLite's EXPLAIN QUERY PLAN,
// Postgres' EXPLAIN), so a later change cannot quietly fall back to
// scanning a table. On Postgres sequential scans are disabled for the
// EXPLAIN: a few hundred rows would make a scan the cheaper plan, and
// the question is whether an index plan exists at all.
func TestQueryPlansUseIndexes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := ontology.NewStore(db, nil, builtinKinds)
		var sp ontology.ObjectTypeSpec
		decodeInto(t, `{"name":"Plan","primary_key":"key","properties":[
			{"name":"key","type":"string","required":true,"unique":true},{"name":"n","type":"integer"},
			{"name":"tag","type":"string"},{"name":"at","type":"timestamp"},{"name":"level","type":"marking"},
			{"name":"tags","type":{"type":"array","element_type":"string"}},{"name":"note","type":"string"}]}`, &sp)
		ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
		loadAnalyzed(t, db, func(tx *gorm.DB) error {
			for i := 0; i < 300; i++ {
				props := jsMap(t, fmt.Sprintf(`{"key":"k%d","n":%d,"tag":"t%d","at":"2024-01-01T00:%02d:00Z","level":"public","tags":["red","c%d"],"note":"note"}`, i, i, i%10, i%60, i%7))
				if _, err := s.CreateObject(ctx, tx, "Plan", props, "", admin.ID, "o1"); err != nil {
					return err
				}
			}
			return nil
		})
		reader := &models.User{ID: "00000000-0000-4000-8000-0000000000bb", Username: "reader",
			Roles: models.NewJSON([]string{"viewer"}), Clearance: "confidential", Organization: "o1"}
		for _, sh := range planShapes {
			for _, u := range []*models.User{admin, reader} {
				tok := ""
				if sh.drive == "text-sorted" {
					tok = base64.RawURLEncoding.EncodeToString([]byte("20")) // a page token before keyset tokens
				}
				if sh.deep {
					tok = ok(s.ListObjectsPage(ctx, u, "Plan", ontology.ObjectQuery{Filters: sh.filters, OrderBy: sh.orderBy, Limit: 20}))(t).NextPageToken
					if tok == "" {
						t.Fatalf("%s: no second page", sh.name)
					}
				}
				q, args, err := s.ObjectsSQL(ctx, u, "Plan", sh.filters, sh.orderBy, tok, 100)
				if err != nil {
					t.Fatal(err)
				}
				plan := explain(t, db, q, args)
				if msg := checkPlan(models.IsPostgres(db), plan, sh.drive, sh.ordered); msg != "" {
					t.Errorf("%s as %s: %s\n%s\nplan:\n%s", sh.name, u.Username, msg, q, plan)
				}
				if sh.drive != "text" || !models.IsPostgres(db) || sh.deep {
					continue
				}
				// A window of a Postgres search reads the type's objects in
				// creation order and probes each (no sort of them but the
				// incremental one of ties, no join of the property's
				// strings).
				q, args, err = s.WindowSQL(ctx, u, "Plan", sh.filters)
				if err != nil || q == "" {
					t.Fatalf("%s: no window statement (%v)", sh.name, err)
				}
				plan = explain(t, db, q, args)
				if !strings.Contains(plan, "Index Scan using idx_object_type on objects") || !strings.Contains(plan, "SubPlan") ||
					strings.Contains(plan, "Join") || strings.Count(plan, "Sort Key") != strings.Count(plan, "Presorted Key") {
					t.Errorf("%s as %s, a window: does not read objects in creation order probing each\n%s\nplan:\n%s", sh.name, u.Username, q, plan)
				}
			}
		}
	})
}

func explain(t *testing.T, db *gorm.DB, q string, args []any) string {
	t.Helper()
	var lines []string
	err := db.Transaction(func(tx *gorm.DB) error {
		if models.IsPostgres(tx) {
			if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
				return err
			}
			return tx.Raw("EXPLAIN "+q, args...).Scan(&lines).Error
		}
		var rows []struct{ Detail string }
		if err := tx.Raw("EXPLAIN QUERY PLAN "+q, args...).Scan(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			lines = append(lines, r.Detail)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	return strings.Join(lines, "\n")
}

var sqliteFullScan = regexp.MustCompile(`(?m)^SCAN \w+$`)

// checkPlan says what is wrong with plan ("" = nothing): a table read
// without an index, the wrong first index, or a sort where the index
// gives the order.
func checkPlan(postgres bool, plan, drive string, ordered bool) string {
	first := ""
	for _, l := range strings.Split(plan, "\n") {
		if strings.HasPrefix(l, "SEARCH") || strings.HasPrefix(l, "SCAN") {
			first = l // the first table read (after MULTI-INDEX OR)
			break
		}
	}
	if postgres {
		if strings.Contains(plan, "Seq Scan") {
			return "a sequential scan"
		}
		if drive == "text" || drive == "text-sorted" {
			// The matches are sorted (in the subquery d) before the
			// join reads objects from them.
			loop, sorted, scan := strings.Index(plan, "Nested Loop"), strings.Index(plan, "Sort Key: d"), strings.Index(plan, "Bitmap Heap Scan on object_values d")
			if loop < 0 || sorted < loop || scan < sorted {
				return "does not sort the matches alone before reading objects"
			}
			drive = "idx_object_values_trgm"
		}
		if strings.HasPrefix(drive, "objects:") {
			// With a filter Postgres weighs the order's index against
			// the filter's and a sort of its few hundred rows here: either
			// is an index plan.
			return ""
		}
		if drive != "" && !strings.Contains(plan, drive) {
			return "does not use " + drive
		}
		return ""
	}
	if drive == "text" || drive == "text-sorted" {
		if !strings.HasPrefix(first, "SCAN t VIRTUAL TABLE INDEX") || !strings.Contains(plan, "SEARCH d USING INTEGER PRIMARY KEY") {
			return "does not search the trigram index object_texts_fts first"
		}
	}
	if drive == "text" {
		// FTS5 returns the matches in label (creation) order and the
		// objects are read as they come, until the page is full.
		if strings.Contains(plan, "TEMP B-TREE") || !strings.HasPrefix(plan, "SCAN t VIRTUAL TABLE INDEX") ||
			!strings.Contains(plan, "SEARCH d USING INTEGER PRIMARY KEY (rowid=?)\nSEARCH o USING INDEX sqlite_autoindex_objects_1") {
			return "does not read the matches in the labels' order"
		}
	}
	if drive == "text-sorted" {
		// The matches are sorted once, in the materialized hits (SCAN d),
		// and objects read from them in that order, not sorted again.
		if !strings.HasPrefix(plan, "MATERIALIZE hits\n") || strings.Count(plan, "TEMP B-TREE FOR ORDER BY") != 1 ||
			!strings.Contains(plan, "SCAN d\nSEARCH o USING INDEX sqlite_autoindex_objects_1") {
			return "does not sort the matches alone before reading objects"
		}
		plan = strings.Replace(plan, "SCAN d\n", "", 1)
	}
	if sqliteFullScan.MatchString(plan) {
		return "a table scan"
	}
	if drive == "text" || drive == "text-sorted" {
		return ""
	}
	if drive != "" && !strings.HasPrefix(drive, "objects:") && !(strings.HasPrefix(first, "SEARCH d USING") && strings.Contains(first, drive)) {
		return "does not search " + drive + " first"
	}
	if scan, ok := strings.CutPrefix(drive, "objects:"); ok {
		if !strings.HasPrefix(first, "SCAN o USING INDEX "+scan) && !strings.HasPrefix(first, "SEARCH o USING INDEX "+scan) {
			return "does not read objects by " + scan + " first"
		}
	} else if drive == "" && !strings.Contains(first, "idx_object_type") {
		return "does not scan the type by idx_object_type"
	}
	if !strings.Contains(plan, "SEARCH o USING INDEX sqlite_autoindex_objects_1") && drive != "" && !strings.HasPrefix(drive, "objects:") {
		return "does not find objects by primary key"
	}
	probe := strings.Index(plan, "SEARCH e USING PRIMARY KEY")
	if strings.Contains(plan, "CORRELATED SCALAR SUBQUERY") && probe < 0 {
		return "does not probe an object's values by primary key"
	}
	// Driven by an index row, the probes come before the object's read
	// (they name the row's object id), so a rejected object is not read.
	if read := strings.Index(plan, "SEARCH o USING INDEX sqlite_autoindex_objects_1"); probe >= 0 && read >= 0 && drive == "idx_object_value" && probe > read {
		return "reads the object before probing its values"
	}
	if ordered && strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") {
		return "sorts rows the index gives in order"
	}
	return ""
}

// TestLinkPlansUseIndexes asserts that an object's links are read from
// idx_link_source and idx_link_target, in their order (no sort of the
// object's links), for admins and for readers (whose read rule probes
// the far end by primary key), on the first page and after a token.
func TestLinkPlansUseIndexes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newLinkFixture(t, db, rand.New(rand.NewSource(3)), 300, 900)
		// One object with many links both ways, as the benchmark's.
		hub := f.ids[0]
		loadAnalyzed(t, db, func(tx *gorm.DB) error {
			for _, o := range f.ids[1:200] {
				for _, pair := range [][2]string{{hub, o}, {o, hub}} {
					if _, err := f.s.CreateLink(ctx, tx, "rel2", pair[0], pair[1]); err != nil && !apperr.Is(err, apperr.Conflict) {
						return err
					}
				}
			}
			return nil
		})
		reader := &models.User{ID: "00000000-0000-4000-8000-0000000000bb", Username: "reader",
			Roles: models.NewJSON([]string{"viewer"}), Clearance: "pii", Organization: "o1"}
		var ho models.Object
		if err := db.Take(&ho, "id = ?", hub).Error; err != nil {
			t.Fatal(err)
		}
		db.Model(&ho).Updates(map[string]any{"marking": "public", "organization": "o1"})
		for _, dir := range []string{"", "outgoing", "incoming"} {
			for _, u := range []*models.User{admin, reader} {
				for _, deep := range []bool{false, true} {
					q := ontology.LinkQuery{Direction: dir, Limit: 20}
					if deep {
						q.PageToken = ok(f.s.ObjectLinksPage(ctx, u, "Node", hub, q))(t).NextPageToken
						if q.PageToken == "" {
							t.Fatalf("%q as %s: no second page", dir, u.Username)
						}
					}
					sql, args := ok2(f.s.ObjectLinksSQL(ctx, u, "Node", hub, q))(t)
					plan := explain(t, db, sql, args)
					if msg := checkLinkPlan(models.IsPostgres(db), plan, dir); msg != "" {
						t.Errorf("direction %q as %s, deep %v: %s\n%s\nplan:\n%s", dir, u.Username, deep, msg, sql, plan)
					}
				}
			}
		}
	})
}

func ok2(q string, args []any, err error) func(testing.TB) (string, []any) {
	return func(t testing.TB) (string, []any) {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return q, args
	}
}

// checkLinkPlan says what is wrong with a links listing's plan ("" =
// nothing). On Postgres, which sorts or hashes what is small here, the
// indexes must be used and no table scanned; SQLite's plan is the one it
// takes at any size, so it is checked whole.
func checkLinkPlan(postgres bool, plan, dir string) string {
	want := map[string][]string{"": {"idx_link_source", "idx_link_target"}, "outgoing": {"idx_link_source"}, "incoming": {"idx_link_target"}}[dir]
	for _, idx := range want {
		if !strings.Contains(plan, idx) {
			return "does not use " + idx
		}
	}
	if postgres {
		if strings.Contains(plan, "Seq Scan") {
			return "a sequential scan"
		}
		return ""
	}
	if sqliteFullScan.MatchString(plan) {
		return "a table scan"
	}
	if strings.Contains(plan, "TEMP B-TREE") {
		return "sorts links the index gives in order"
	}
	if strings.Contains(plan, "SEARCH e") && !strings.Contains(plan, "USING INDEX sqlite_autoindex_objects_1 (id=?)") {
		return "does not find the far end by primary key"
	}
	return ""
}

// loadAnalyzed runs load in one transaction, then ANALYZE, so plans are
// chosen over the rows a test planted.
func loadAnalyzed(t *testing.T, db *gorm.DB, load func(tx *gorm.DB) error) {
	t.Helper()
	if err := db.Transaction(load); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("ANALYZE").Error; err != nil {
		t.Fatal(err)
	}
}
