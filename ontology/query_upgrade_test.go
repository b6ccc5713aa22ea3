package ontology_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

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

// TestUpgradeLabelsTexts: from index version 4 an upgrade rebuilds only
// what changed: SQLite's object texts get creation labels (ids of
// version 4 were a sequence), object_values stays as it is (a row no
// object has survives), and Postgres, which has no object_texts, only
// records the new version. A search then pages in creation order.
func TestUpgradeLabelsTexts(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := everything(t, db)
		for i := 0; i < 300; i++ {
			ok(s.CreateObject(ctx, nil, "Everything", jsMap(t, fmt.Sprintf(`{"s":"nn%d","i":%d}`, i%10, i)), "", admin.ID, ""))(t)
		}
		pg := models.IsPostgres(db)
		v4 := []string{"DELETE FROM object_value_builds", "INSERT INTO object_value_builds (version) VALUES (4)",
			"INSERT INTO object_values (prop, created, object_id, key) VALUES (1, 1, " + map[bool]string{false: "x'00000000000040008000000000000009'", true: `'\x00000000000040008000000000000009'`}[pg] + ", 'marker')"}
		if !pg {
			v4 = append(v4, "CREATE TEMP TABLE texts4 AS SELECT object_id, prop, created, txt FROM object_texts ORDER BY random()",
				"DELETE FROM object_texts",
				"INSERT INTO object_texts (id, object_id, prop, created, txt) SELECT row_number() OVER (), object_id, prop, created, txt FROM texts4")
		}
		for _, q := range v4 {
			if err := db.Exec(q).Error; err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		var marker, unlabelled int64
		db.Raw("SELECT COUNT(*) FROM object_values WHERE prop = 1 AND created = 1").Scan(&marker)
		if marker != 1 {
			t.Fatal("the upgrade from version 4 rebuilt object_values")
		}
		var built []int
		db.Model(&models.ObjectValueBuild{}).Pluck("version", &built)
		if fmt.Sprint(built) != fmt.Sprint([]int{models.ObjectValueVersion}) {
			t.Fatalf("index builds recorded: %v", built)
		}
		if !pg {
			var texts []models.ObjectText
			db.Find(&texts)
			for _, x := range texts {
				if lo, hi := models.TextBlock(x.Created); x.ID < lo || x.ID >= hi {
					unlabelled++
				}
			}
			if len(texts) < 300 || unlabelled != 0 {
				t.Fatalf("after the upgrade %d texts, %d not labelled by creation", len(texts), unlabelled)
			}
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
