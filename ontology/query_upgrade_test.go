package ontology_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// oldIndex recreates object_values and object_texts as version 3 of the
// index made them (a column part; on Postgres object_texts with its
// trigram index, idx_object_value ending in the object id), with a row
// each.
var oldIndex = map[bool][]string{
	false: {"DROP TABLE object_values", "DROP TABLE object_texts", "DROP TABLE object_texts_fts",
		"CREATE TABLE `object_values` (`prop` integer,`created` integer NOT NULL,`part` integer,`object_id` blob,`key` blob,`full` blob,PRIMARY KEY (`object_id`,`prop`,`part`,`key`)) WITHOUT ROWID",
		"CREATE INDEX `idx_object_value` ON `object_values`(`prop`,`part`,`key`,`created`,`object_id`)",
		"CREATE TABLE `object_texts` (`id` integer PRIMARY KEY AUTOINCREMENT,`object_id` blob NOT NULL,`prop` integer NOT NULL,`created` integer NOT NULL,`txt` text NOT NULL)",
		"INSERT INTO object_values VALUES (1, 1, 0, x'00000000000040008000000000000001', x'73', NULL)",
		"INSERT INTO object_texts (object_id, prop, created, txt) VALUES (x'00000000000040008000000000000001', 1, 1, 'old')"},
	true: {"DROP TABLE object_values", "DROP TABLE IF EXISTS object_texts",
		`CREATE TABLE "object_values" ("prop" bigint NOT NULL,"created" bigint NOT NULL,"part" smallint NOT NULL,"object_id" bytea NOT NULL,"key" bytea NOT NULL,"full" bytea)`,
		`CREATE INDEX "idx_object_values_object" ON "object_values" ("object_id")`,
		`CREATE INDEX "idx_object_value" ON "object_values" ("prop","part","key","created","object_id")`,
		`CREATE TABLE "object_texts" ("id" bigserial PRIMARY KEY,"object_id" bytea NOT NULL,"prop" bigint NOT NULL,"created" bigint NOT NULL,"txt" text NOT NULL)`,
		"INSERT INTO object_values VALUES (1, 1, 0, '\\x00000000000040008000000000000001', '\\x73', NULL)",
		"INSERT INTO object_texts (object_id, prop, created, txt) VALUES ('\\x00000000000040008000000000000001', 1, 1, 'old')"},
}

// TestUpgradeBuildsIndex: objects whose index was built by an older
// version (3: a column part, object_texts on Postgres) are indexed by the
// next migration, and found by filters and substring search again.
func TestUpgradeBuildsIndex(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := everything(t, db)
		for i := 0; i < 2500; i++ {
			ok(s.CreateObject(ctx, nil, "Everything", jsMap(t, fmt.Sprintf(`{"s":"nn%d","i":%d,"a":[%d,7]}`, i%10, i, i)), "", admin.ID, ""))(t)
		}
		count := func(fs ...ontology.RawFilter) int {
			return len(ok(s.ListObjects(ctx, admin, "Everything", ontology.ObjectQuery{Filters: fs, Limit: 10000}))(t))
		}
		before := []int{count(ontology.RawFilter{Key: "s", Value: "nn3"}), count(ontology.RawFilter{Key: "i.greater_than", Value: "2400"}),
			count(ontology.RawFilter{Key: "a.includes", Value: "7"})}
		if before[0] != 250 || before[1] != 99 || before[2] != 2500 {
			t.Fatalf("before: %v", before)
		}
		for _, m := range []any{&models.ObjectValue{}, &models.ObjectValueBuild{}} {
			if err := db.Session(&gorm.Session{AllowGlobalUpdate: true}).Delete(m).Error; err != nil {
				t.Fatal(err)
			}
		}
		if n := count(ontology.RawFilter{Key: "s", Value: "nn3"}); n != 0 {
			t.Fatalf("without the index %d objects found", n)
		}
		// The index of version 3 (versions 1 and 2, a rowid table on
		// SQLite and ids as text, are recreated the same way).
		for _, q := range oldIndex[models.IsPostgres(db)] {
			if err := db.Exec(q).Error; err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := db.Create(&models.ObjectValueBuild{Version: 3}).Error; err != nil {
			t.Fatal(err)
		}
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		after := []int{count(ontology.RawFilter{Key: "s", Value: "nn3"}), count(ontology.RawFilter{Key: "i.greater_than", Value: "2400"}),
			count(ontology.RawFilter{Key: "a.includes", Value: "7"})}
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("after the upgrade %v, before %v", after, before)
		}
		// Recreated (WITHOUT ROWID on SQLite), and kept by the next
		// migration.
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if !models.IsPostgres(db) {
			var ddl string
			db.Raw("SELECT sql FROM sqlite_master WHERE name = 'object_values'").Scan(&ddl)
			if !strings.Contains(ddl, "WITHOUT ROWID") || strings.Contains(ddl, "`part`") {
				t.Fatalf("object_values: %s", ddl)
			}
		} else {
			var texts, trgm int64
			db.Raw("SELECT COUNT(*) FROM pg_tables WHERE tablename = 'object_texts' AND schemaname = current_schema()").Scan(&texts)
			db.Raw("SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'idx_object_values_trgm' AND schemaname = current_schema()").Scan(&trgm)
			if texts != 0 || trgm != 1 {
				t.Fatalf("after the upgrade: object_texts %d, idx_object_values_trgm %d", texts, trgm)
			}
		}
		if n := count(ontology.RawFilter{Key: "s", Value: "nn3"}); n != 250 {
			t.Fatalf("after a second migration %d objects found", n)
		}
		if n := count(ontology.RawFilter{Key: "s.includes", Value: "nn3"}); n != 250 {
			t.Fatalf("substring after the upgrade: %d objects found", n)
		}
	})
}

// v5Index turns the index into version 5's: properties without an
// index key, rows naming them by a 64-bit hash (here their key times a
// large odd number, which no key of version 6 is), and on Postgres
// object_values with a bigint prop and an index of object ids; a row of
// no object marks the old table.
var v5Index = map[bool][]string{
	false: {"UPDATE object_values SET prop = prop * 1000000007",
		"INSERT INTO object_values (prop, created, object_id, key) VALUES (1, 1, x'00000000000040008000000000000009', 'marker')"},
	true: {"CREATE TABLE v5 AS SELECT prop::bigint * 1000000007 AS prop, created, object_id, key, \"full\" FROM object_values",
		"DROP TABLE object_values",
		`CREATE TABLE "object_values" ("prop" bigint NOT NULL,"created" bigint NOT NULL,"object_id" bytea NOT NULL,"key" bytea NOT NULL,"full" bytea)`,
		`CREATE INDEX "idx_object_values_object" ON "object_values" ("object_id")`,
		`CREATE INDEX "idx_object_value" ON "object_values" ("prop","key","created")`,
		"INSERT INTO object_values SELECT * FROM v5", "DROP TABLE v5",
		"INSERT INTO object_values (prop, created, object_id, key) VALUES (1, 1, '\\x00000000000040008000000000000009', 'marker')"},
}

// TestUpgradeAssignsPropertyKeys: from index version 5 (properties named
// by a hash) an upgrade gives every property its own key, rebuilds the
// index under those keys (on Postgres with a 4-byte prop), and a
// property added afterwards gets a key
// no other has. Filters and a search answer as before, in creation
// order.
func TestUpgradeAssignsPropertyKeys(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := everything(t, db)
		for i := 0; i < 300; i++ {
			ok(s.CreateObject(ctx, nil, "Everything", jsMap(t, fmt.Sprintf(`{"s":"nn%d","i":%d,"a":[%d,7]}`, i%10, i, i%4)), "", admin.ID, ""))(t)
		}
		count := func(fs ...ontology.RawFilter) int {
			return len(ok(s.ListObjects(ctx, admin, "Everything", ontology.ObjectQuery{Filters: fs, Limit: 1000}))(t))
		}
		before := []int{count(ontology.RawFilter{Key: "s", Value: "nn3"}), count(ontology.RawFilter{Key: "i.greater_than", Value: "250"}),
			count(ontology.RawFilter{Key: "a.includes", Value: "2"})}
		if before[0] != 30 || before[1] != 49 || before[2] != 75 {
			t.Fatalf("before: %v", before)
		}
		pg := models.IsPostgres(db)
		v5 := append([]string{"DELETE FROM object_value_builds", "INSERT INTO object_value_builds (version) VALUES (5)",
			"UPDATE properties SET index_key = 0"}, v5Index[pg]...)
		for _, q := range v5 {
			if err := db.Exec(q).Error; err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		var marker int64
		db.Raw("SELECT COUNT(*) FROM object_values WHERE prop = 1 AND created = 1").Scan(&marker)
		if marker != 0 {
			t.Fatal("the upgrade from version 5 kept its object_values")
		}
		var built []int
		db.Model(&models.ObjectValueBuild{}).Pluck("version", &built)
		if fmt.Sprint(built) != fmt.Sprint([]int{models.ObjectValueVersion}) {
			t.Fatalf("index builds recorded: %v", built)
		}
		keys := map[int64]bool{}
		var props []models.Property
		db.Find(&props)
		for _, p := range props {
			if p.IndexKey <= 0 || p.IndexKey%2 != 0 || keys[models.PropKey(p)] {
				t.Fatalf("property %s has index key %d (keys so far %v)", p.Name, p.IndexKey, keys)
			}
			keys[models.PropKey(p)] = true
		}
		var stray int64
		db.Raw("SELECT COUNT(*) FROM object_values WHERE prop & ~1 NOT IN (SELECT index_key FROM properties)").Scan(&stray)
		if stray != 0 {
			t.Fatalf("%d index rows name no property", stray)
		}
		if pg {
			var typ string
			var idx []string
			db.Raw("SELECT data_type FROM information_schema.columns WHERE table_name = 'object_values' AND column_name = 'prop' AND table_schema = current_schema()").Scan(&typ)
			db.Raw("SELECT indexname FROM pg_indexes WHERE tablename = 'object_values' AND schemaname = current_schema() ORDER BY 1").Scan(&idx)
			if typ != "integer" || fmt.Sprint(idx) != "[idx_object_value idx_object_values_object idx_object_values_trgm]" {
				t.Fatalf("object_values after the upgrade: prop %s, indexes %v", typ, idx)
			}
		}
		after := []int{count(ontology.RawFilter{Key: "s", Value: "nn3"}), count(ontology.RawFilter{Key: "i.greater_than", Value: "250"}),
			count(ontology.RawFilter{Key: "a.includes", Value: "2"})}
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("after the upgrade %v, before %v", after, before)
		}
		// A property added now: a key of its own, its values found.
		p := ok(s.CreateProperty(ctx, "Everything", ontology.PropertySpec{Name: "added", Type: domain.PropertyType{Base: domain.TypeString}, Required: true,
			DefaultValue: "filled"}))(t)
		if p.IndexKey == 0 || keys[models.PropKey(*p)] {
			t.Fatalf("the property added after the upgrade has key %d (others %v)", p.IndexKey, keys)
		}
		if n := count(ontology.RawFilter{Key: "added", Value: "filled"}); n != 300 {
			t.Fatalf("the added property's value found on %d objects", n)
		}
		var want, got []string
		for _, o := range ok(s.ListObjects(ctx, admin, "Everything", ontology.ObjectQuery{Filters: []ontology.RawFilter{{Key: "s", Value: "nn3"}}, Limit: 100}))(t) {
			want = append(want, o.ID)
		}
		q := ontology.ObjectQuery{Filters: []ontology.RawFilter{{Key: "s.includes", Value: "nn3"}}, Limit: 7}
		for {
			page := ok(s.ListObjectsPage(ctx, admin, "Everything", q))(t)
			got = append(got, objIDs(page.Items)...)
			if page.NextPageToken == "" || len(got) > 30 {
				break
			}
			q.PageToken = page.NextPageToken
		}
		if len(want) != 30 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("search after the upgrade: %d objects, in creation order: %v (%d wanted)", len(got), fmt.Sprint(got) == fmt.Sprint(want), len(want))
		}
	})
}
