// Command ontobench measures object queries (issue 27) at growing numbers
// of objects of one type: it loads objects of a type with nine properties
// of mixed types straight into the tables (objects, unique values, the
// property-value index: the rows the store writes, without its per-object
// validation), then times each query shape through the store and prints a
// Markdown table of p50/p95 per size, and the database's sizes.
//
//	go run ./cmd/ontobench [-db sqlite:/tmp/x.db | -db postgres://...] [-sizes 10000,100000] [-runs 50]
//	go run ./cmd/ontobench -app 10000 [-db ...] [-runs 30]   (app.go: execute-batch, links, executes)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

func main() {
	dsn := flag.String("db", "", "database (default: a new SQLite file in a temporary directory); a Postgres database is emptied first")
	sizes := flag.String("sizes", "10000,100000", "numbers of objects to measure at, ascending")
	runs := flag.Int("runs", 50, "timed runs of each shape")
	detail := flag.Bool("detail", false, "print each table's and index's size (stderr) after each size; -runs 0 skips the shapes")
	reuse := flag.Bool("reuse", false, "keep the objects an earlier run loaded into -db (not emptied; loads only up to each size): load 1M once, measure later")
	only := flag.String("only", "", "time only the shapes whose name matches this regular expression")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the timed shapes (not the load) to this file")
	appN := flag.Int("app", 0, "instead: start the dev process in-process, create this many objects by execute-batch of a create_object action (-db as its --database-url, kept: objects of an earlier run stay), then time links, update_object and function executes")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	var err error
	if *appN > 0 {
		err = runApp(context.Background(), *dsn, *appN, *runs)
	} else {
		var o runOpts
		if o.only, err = regexp.Compile(*only); err == nil {
			o.cpuProfile = *cpuProfile
			err = run(context.Background(), *dsn, *sizes, *runs, *detail, *reuse, o)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ontobench:", err)
		os.Exit(1)
	}
}

// bench is one database being loaded and measured.
type bench struct {
	db     *gorm.DB
	store  *ontology.Store
	typeID string
	defs   []models.Property
	n      int
	r      *rand.Rand
	start  time.Time
	admin  *models.User
	reader *models.User
	ids    []string
}

// runOpts narrow a run to some shapes and profile them.
type runOpts struct {
	only       *regexp.Regexp
	cpuProfile string
}

func run(ctx context.Context, dsn, sizeList string, runs int, detail, reuse bool, o runOpts) error {
	if dsn == "" {
		dir, err := os.MkdirTemp("", "ontobench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dsn = "sqlite:" + filepath.Join(dir, "bench.db")
	}
	db, err := models.Open(ctx, dsn)
	if err != nil {
		return err
	}
	if models.IsPostgres(db) && !reuse {
		for _, q := range []string{"DROP SCHEMA public CASCADE", "CREATE SCHEMA public"} {
			if err := db.Exec(q).Error; err != nil {
				return fmt.Errorf("empty the database: %w", err)
			}
		}
	}
	if err := models.Migrate(ctx, db); err != nil {
		return err
	}
	b := &bench{db: db, store: ontology.NewStore(db, nil, nil), r: rand.New(rand.NewSource(27)),
		start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		admin: &models.User{ID: uuid.NewString(), Roles: models.NewJSON([]string{"admin"}), Clearance: "pii"},
		reader: &models.User{ID: uuid.NewString(), Roles: models.NewJSON([]string{"viewer"}), Clearance: "confidential",
			Organization: "acme"}}
	if err := b.findOrCreateType(ctx, reuse); err != nil {
		return err
	}
	fmt.Printf("Dialect %s, %d runs per shape, GOMAXPROCS default. Times are p50 / p95 in ms.\n\n", models.Dialect(db), runs)
	var sizes []int
	for _, s := range strings.Split(sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-sizes: %w", err)
		}
		sizes = append(sizes, n)
	}
	results := map[string][]string{}
	var order []string
	for _, n := range sizes {
		t0 := time.Now()
		if err := b.load(ctx, n); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "loaded %d objects in %s\n", n, time.Since(t0).Round(time.Millisecond))
		if err := b.db.Exec("ANALYZE").Error; err != nil {
			return err
		}
		if detail {
			if err := b.sizeDetail(ctx); err != nil {
				return err
			}
		}
		var shapes []shape
		if runs > 0 {
			if shapes, err = b.shapes(ctx); err != nil {
				return err
			}
		}
		stop, err := startProfile(o.cpuProfile, n)
		if err != nil {
			return err
		}
		for _, sh := range shapes {
			if !o.only.MatchString(sh.name) {
				continue
			}
			p50, p95, err := b.measure(ctx, sh, runs)
			if err != nil {
				return fmt.Errorf("%s at %d: %w", sh.name, n, err)
			}
			if _, ok := results[sh.name]; !ok {
				order = append(order, sh.name)
			}
			results[sh.name] = append(results[sh.name], fmt.Sprintf("%.2f / %.2f", p50, p95))
		}
		stop()
		sz, err := b.sizes(ctx)
		if err != nil {
			return err
		}
		results["database size"] = append(results["database size"], sz)
	}
	order = append(order, "database size")
	head := "| shape |"
	sep := "|---|"
	for _, n := range sizes {
		head += fmt.Sprintf(" %d objects |", n)
		sep += "---|"
	}
	fmt.Println(head)
	fmt.Println(sep)
	for _, name := range order {
		fmt.Printf("| %s | %s |\n", name, strings.Join(results[name], " | "))
	}
	return nil
}

const benchType = `{"name":"Item","primary_key":"key","properties":[
	{"name":"key","type":"string","required":true,"unique":true},{"name":"n","type":"integer"},
	{"name":"tag","type":"string"},{"name":"at","type":"timestamp"},{"name":"score","type":"double"},
	{"name":"tags","type":{"type":"array","element_type":"string"}},{"name":"flag","type":"boolean"},
	{"name":"note","type":"string"},{"name":"level","type":"marking"}]}`

// findOrCreateType creates the bench's type, or with reuse takes the one an
// earlier run left and the objects in it: the shapes then draw from them
// as from objects this run loaded (they were loaded in the same order).
func (b *bench) findOrCreateType(ctx context.Context, reuse bool) error {
	if !reuse {
		return b.createType(ctx)
	}
	var n int64
	if err := b.db.WithContext(ctx).Model(&models.ObjectType{}).Where("name = ?", "Item").Count(&n).Error; err != nil {
		return fmt.Errorf("find the type an earlier run loaded: %w", err)
	}
	if n == 0 {
		return b.createType(ctx)
	}
	ot, err := b.store.ObjectType(ctx, "Item")
	if err != nil {
		return fmt.Errorf("read the type an earlier run loaded: %w", err)
	}
	b.typeID, b.defs = ot.ID, ot.Properties
	if err := b.db.WithContext(ctx).Model(&models.Object{}).Where("object_type_id = ?", ot.ID).
		Order("created_at").Pluck("id", &b.ids).Error; err != nil {
		return fmt.Errorf("read the objects an earlier run loaded: %w", err)
	}
	b.n = len(b.ids)
	fmt.Fprintf(os.Stderr, "reusing %d objects of Item\n", b.n)
	return nil
}

func (b *bench) createType(ctx context.Context) error {
	var sp ontology.ObjectTypeSpec
	if err := json.Unmarshal([]byte(benchType), &sp); err != nil {
		return err
	}
	ot, err := b.store.CreateObjectType(ctx, b.admin.ID, sp)
	if err != nil {
		return err
	}
	b.typeID, b.defs = ot.ID, ot.Properties
	return nil
}

// words make the notes searched by substring.
var words = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}

// props are object i's properties: key unique, tag 1 in 100, tags one
// of 1,000 and one of 100, n and at growing with i (ranges select the
// newest), notes of two words of ten each (a pair 1 in 100) and one of
// 997 numbers.
func (b *bench) props(i int) map[string]any {
	note := fmt.Sprintf("%s %s %s-%06d", words[i%10], words[(i/10)%10], words[(i/100)%10], i%997)
	return map[string]any{"key": fmt.Sprintf("k%07d", i), "n": int64(i), "tag": fmt.Sprintf("t%02d", i%100),
		"at": b.start.Add(time.Duration(i) * time.Second).Format(time.RFC3339), "score": float64(i%1000) / 7,
		"tags": []any{fmt.Sprintf("c%03d", i%1000), fmt.Sprintf("g%02d", (i/3)%100)}, "flag": i%2 == 0,
		"note": note, "level": []string{"public", "confidential", "pii"}[i%3]}
}

// load adds objects up to n, 2,000 per transaction.
func (b *bench) load(ctx context.Context, n int) error {
	for b.n < n {
		m := min(2000, n-b.n)
		var objs []models.Object
		var uniq []models.UniqueValue
		var rows []models.ObjectValue
		var texts []models.ObjectText
		now := time.Now().UTC().Truncate(time.Microsecond)
		for j := 0; j < m; j++ {
			i := b.n + j
			p := b.props(i)
			o := models.Object{ID: uuid.NewString(), ObjectTypeID: b.typeID, Properties: models.NewNumJSON(p),
				Marking: p["level"].(string), CreatedBy: b.admin.ID, Organization: []string{"acme", "other"}[i%2],
				CreatedAt: now.Add(time.Duration(i) * time.Microsecond), UpdatedAt: now}
			objs = append(objs, o)
			key, _ := json.Marshal(p["key"])
			uniq = append(uniq, models.UniqueValue{ObjectTypeID: b.typeID, Property: "key", ValueKey: string(key), ObjectID: o.ID})
			r, err := models.ObjectValues(o.ID, o.CreatedAt, b.defs, p)
			if err != nil {
				return err
			}
			rows = append(rows, r...)
			t, err := models.ObjectTexts(o.ID, o.CreatedAt, b.defs, p)
			if err != nil {
				return err
			}
			texts = append(texts, t...)
			b.ids = append(b.ids, o.ID)
		}
		err := b.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.CreateInBatches(objs, 200).Error; err != nil {
				return err
			}
			if err := tx.CreateInBatches(uniq, 500).Error; err != nil {
				return err
			}
			if err := models.InsertObjectValues(ctx, tx, rows); err != nil {
				return err
			}
			// As the store counts a create, in the same transaction.
			if err := models.CountObjects(ctx, tx, b.typeID, int64(m)); err != nil {
				return err
			}
			return models.InsertObjectTexts(ctx, tx, texts)
		})
		if err != nil {
			return fmt.Errorf("load objects: %w", err)
		}
		b.n += m
	}
	return nil
}

// aggregate runs an aggregation as the admin; its groups are the count.
func (b *bench) aggregate(ctx context.Context, req ontology.AggregateRequest) (int, error) {
	res, err := b.store.Aggregate(ctx, b.admin, "Item", req)
	if err != nil {
		return 0, err
	}
	return len(res.Groups), nil
}

type shape struct {
	name string
	fn   func(ctx context.Context) (int, error)
}

func (b *bench) list(ctx context.Context, u *models.User, offset, limit int, fs ...ontology.RawFilter) (int, error) {
	objs, err := b.store.ListObjects(ctx, u, "Item", ontology.ObjectQuery{Filters: fs, Offset: offset, Limit: limit})
	return len(objs), err
}

func f(key, value string) ontology.RawFilter { return ontology.RawFilter{Key: key, Value: value} }

// tokenAt is the keyset page token after the first skip objects in
// order_by ob (walked once, untimed).
func (b *bench) tokenAt(ctx context.Context, ob string, skip int) (string, error) {
	q := ontology.ObjectQuery{OrderBy: ob, Limit: 500}
	for done := 0; done < skip; done += q.Limit {
		q.Limit = min(500, skip-done)
		p, err := b.store.ListObjectsPage(ctx, b.admin, "Item", q)
		if err != nil {
			return "", err
		}
		q.PageToken = p.NextPageToken
	}
	return q.PageToken, nil
}

func (b *bench) page(ctx context.Context, ob, tok string, fs ...ontology.RawFilter) (int, error) {
	p, err := b.store.ListObjectsPage(ctx, b.admin, "Item", ontology.ObjectQuery{Filters: fs, OrderBy: ob, PageToken: tok, Limit: 100})
	return len(p.Items), err
}

func (b *bench) shapes(ctx context.Context) ([]shape, error) {
	r, n := b.r, b.n
	reads := functions.NewReads(b.store)
	toks := map[string]string{}
	for _, ob := range []string{"", "-score", "note", "-updated_at"} {
		tok, err := b.tokenAt(ctx, ob, 9900)
		if err != nil {
			return nil, err
		}
		toks[ob] = tok
	}
	return []shape{
		{"primary key equality", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("key", fmt.Sprintf("k%07d", r.Intn(n))))
		}},
		{"primary key equality, non-admin reader", func(ctx context.Context) (int, error) {
			// Every sixth object is in the reader's organization and clearance.
			return b.list(ctx, b.reader, 0, 100, f("key", fmt.Sprintf("k%07d", 6*r.Intn(n/6))))
		}},
		{"equality of 1% (first page of 100)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("tag", fmt.Sprintf("t%02d", r.Intn(100))))
		}},
		{"numeric range (newest 5)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("n.greater_than", strconv.Itoa(n-6)))
		}},
		{"timestamp range (newest 5)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("at.greater_than", b.start.Add(time.Duration(n-6)*time.Second).Format(time.RFC3339)))
		}},
		// The next three select a fixed share of the objects: 10 to 50 at
		// 10,000 objects, a full page from 100,000 on.
		{"array includes (0.1%, first page)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("tags.includes", fmt.Sprintf("c%03d", r.Intn(1000))))
		}},
		{"substring (note includes, ~0.1%)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("note.includes", fmt.Sprintf("-%06d", r.Intn(997))))
		}},
		{"two filters ANDed (1% and a range)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("tag", fmt.Sprintf("t%02d", r.Intn(100))), f("n.less_than", strconv.Itoa(n/2)))
		}},
		// The same kinds with a full first page at every size: what a
		// page costs as the type grows, the page's size kept.
		{"array includes (1%, first page)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("tags.includes", fmt.Sprintf("g%02d", r.Intn(100))))
		}},
		{"substring (two words, ~2%, first page)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("note.includes", words[r.Intn(10)]+" "+words[r.Intn(10)]))
		}},
		{"two filters ANDed (50% and a range of 50%)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("flag", strconv.FormatBool(r.Intn(2) == 0)), f("n.less_than", strconv.Itoa(n/2)))
		}},
		{"first page of 100, no filter", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100)
		}},
		{"100th page of 100, no filter (old offset token)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 9900, 100)
		}},
		{"100th page of 100, no filter (keyset token)", func(ctx context.Context) (int, error) {
			return b.page(ctx, "", toks[""])
		}},
		{"ordered by -score (double), first page", func(ctx context.Context) (int, error) {
			return b.page(ctx, "-score", "")
		}},
		{"ordered by -score, 100th page", func(ctx context.Context) (int, error) {
			return b.page(ctx, "-score", toks["-score"])
		}},
		{"ordered by note (string), first page", func(ctx context.Context) (int, error) {
			return b.page(ctx, "note", "")
		}},
		{"ordered by note, 100th page", func(ctx context.Context) (int, error) {
			return b.page(ctx, "note", toks["note"])
		}},
		{"ordered by -updated_at, 100th page", func(ctx context.Context) (int, error) {
			return b.page(ctx, "-updated_at", toks["-updated_at"])
		}},
		{"ordered by -score, filtered by flag (50%), first page", func(ctx context.Context) (int, error) {
			return b.page(ctx, "-score", "", f("flag", "true"))
		}},
		{"not_exists (no match)", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 0, 100, f("note.not_exists", ""))
		}},
		{"ctx.ontology.query ordered (-n, 100)", func(ctx context.Context) (int, error) {
			objs, err := reads.Query(ctx, models.Tx{}, b.admin, "Item", map[string]any{functions.OrderByKey: "-n"}, 100)
			return len(objs), err
		}},
		{"10th page of 100, equality of 1%", func(ctx context.Context) (int, error) {
			return b.list(ctx, b.admin, 900, 100, f("tag", fmt.Sprintf("t%02d", r.Intn(100))))
		}},
		{"functions' ctx.ontology.query host call (1%, 100)", func(ctx context.Context) (int, error) {
			objs, err := reads.Query(ctx, models.Tx{}, b.admin, "Item", map[string]any{"tag": fmt.Sprintf("t%02d", r.Intn(100))}, 100)
			return len(objs), err
		}},
		// Issue 48's aggregation shapes (ontology.Store.Aggregate).
		{"aggregate: count of a type", func(ctx context.Context) (int, error) {
			return b.aggregate(ctx, ontology.AggregateRequest{})
		}},
		{"aggregate: count by level (3 values)", func(ctx context.Context) (int, error) {
			return b.aggregate(ctx, ontology.AggregateRequest{GroupBy: []ontology.GroupBy{{Property: "level"}}})
		}},
		{"aggregate: count by flag (boolean, 2 values)", func(ctx context.Context) (int, error) {
			return b.aggregate(ctx, ontology.AggregateRequest{GroupBy: []ontology.GroupBy{{Property: "flag"}}})
		}},
		{"aggregate: count by tag (string, 100 values: not counted)", func(ctx context.Context) (int, error) {
			return b.aggregate(ctx, ontology.AggregateRequest{GroupBy: []ontology.GroupBy{{Property: "tag"}}})
		}},
		{"aggregate: count of a type, reader with a read rule", func(ctx context.Context) (int, error) {
			res, err := b.store.Aggregate(ctx, b.reader, "Item", ontology.AggregateRequest{})
			if err != nil {
				return 0, err
			}
			return len(res.Groups), nil
		}},
		{"aggregate: sum of n over a 1% filter", func(ctx context.Context) (int, error) {
			return b.aggregate(ctx, ontology.AggregateRequest{Filters: []ontology.AggFilter{{Key: "tag", Value: json.RawMessage(fmt.Sprintf(`"t%02d"`, r.Intn(100)))}},
				Metrics: []ontology.Metric{{Type: ontology.MetricSum, Property: "n"}}})
		}},
		{"aggregate: daily histogram of at (one object a second)", func(ctx context.Context) (int, error) {
			return b.aggregate(ctx, ontology.AggregateRequest{GroupBy: []ontology.GroupBy{{Property: "at", Type: ontology.GroupDate, Interval: "day"}}})
		}},
		{"aggregate: exact distinct of key (every object's own)", func(ctx context.Context) (int, error) {
			return b.aggregate(ctx, ontology.AggregateRequest{Metrics: []ontology.Metric{{Type: ontology.MetricExactDistinct, Property: "key"}}})
		}},
		{"aggregate: approximate distinct of key (allow_approximate)", func(ctx context.Context) (int, error) {
			return b.aggregate(ctx, ontology.AggregateRequest{Accuracy: ontology.AccuracyAllowApproximate,
				Metrics: []ontology.Metric{{Type: ontology.MetricApproximateDistinct, Property: "key"}}})
		}},
		{"update of a random object (store.UpdateObject)", func(ctx context.Context) (int, error) {
			_, err := b.store.UpdateObject(ctx, nil, b.ids[r.Intn(len(b.ids))], map[string]any{"n": json.Number(strconv.Itoa(r.Intn(n))), "tag": "t00"})
			return 1, err
		}},
	}, nil
}

func (b *bench) measure(ctx context.Context, sh shape, runs int) (float64, float64, error) {
	var ds []float64
	for i := 0; i < runs+3; i++ {
		t0 := time.Now()
		if _, err := sh.fn(ctx); err != nil {
			return 0, 0, err
		}
		if i >= 3 {
			ds = append(ds, float64(time.Since(t0).Microseconds())/1000)
		}
	}
	sort.Float64s(ds)
	return ds[len(ds)/2], ds[len(ds)*95/100], nil
}

// sizes reports the objects' own size and the index's.
func (b *bench) sizes(ctx context.Context) (string, error) {
	var objs, idx int64
	if models.IsPostgres(b.db) {
		if err := b.db.Raw("SELECT pg_total_relation_size('objects') + pg_total_relation_size('unique_values')").Scan(&objs).Error; err != nil {
			return "", err
		}
		// object_texts: before index version 4.
		if err := b.db.Raw("SELECT pg_total_relation_size('object_values') + COALESCE(pg_total_relation_size(to_regclass('object_texts')), 0)").Scan(&idx).Error; err != nil {
			return "", err
		}
	} else {
		q := "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN ?"
		if err := b.db.Raw(q, []string{"objects", "idx_object_type", "idx_object_updated", "idx_objects_organization", "sqlite_autoindex_objects_1",
			"unique_values", "sqlite_autoindex_unique_values_1", "idx_unique_values_object_id"}).Scan(&objs).Error; err != nil {
			return "", fmt.Errorf("dbstat: %w", err)
		}
		if err := b.db.Raw(q, []string{"object_values", "idx_object_value", "object_texts",
			"idx_object_texts_object_id", "object_texts_fts_data", "object_texts_fts_idx", "object_texts_fts_docsize",
			"object_texts_fts_config"}).Scan(&idx).Error; err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("objects %.0f MiB, index %.0f MiB (%.2fx)", float64(objs)/(1<<20), float64(idx)/(1<<20), float64(idx)/float64(objs)), nil
}

// sizeDetail prints the size of each table and index of the objects and
// the index, in KiB, to stderr.
func (b *bench) sizeDetail(ctx context.Context) error {
	type rel struct {
		Name string
		KiB  int64
	}
	var rels []rel
	q := "SELECT name, SUM(pgsize) / 1024 AS ki_b FROM dbstat GROUP BY name ORDER BY 2 DESC"
	if models.IsPostgres(b.db) {
		q = `SELECT c.relname AS name, pg_relation_size(c.oid) / 1024 AS ki_b FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i') ORDER BY 2 DESC`
	}
	if err := b.db.WithContext(ctx).Raw(q).Scan(&rels).Error; err != nil {
		return fmt.Errorf("size of each relation: %w", err)
	}
	fmt.Fprintf(os.Stderr, "sizes at %d objects (KiB):\n", b.n)
	for _, r := range rels {
		if r.KiB >= 64 {
			fmt.Fprintf(os.Stderr, "  %-40s %9d\n", r.Name, r.KiB)
		}
	}
	return nil
}

// startProfile starts a CPU profile into file (with the size appended
// when several are measured: file.10000); "" profiles nothing.
func startProfile(file string, n int) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", file, n))
	if err != nil {
		return nil, fmt.Errorf("create the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start the CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
