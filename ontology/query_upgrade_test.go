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

// oldIndex recreates object_values and object_texts as version 2 of the
// index made them (ids as text), with a row each.
var oldIndex = map[bool][]string{
	false: {"DROP TABLE object_values", "DROP TABLE object_texts", "DROP TABLE object_texts_fts",
		"CREATE TABLE `object_values` (`object_id` text,`prop` integer,`part` integer,`key` blob,`created` integer NOT NULL,`full` blob,PRIMARY KEY (`object_id`,`prop`,`part`,`key`)) WITHOUT ROWID",
		"CREATE INDEX `idx_object_value` ON `object_values`(`prop`,`part`,`key`,`created`,`object_id`)",
		"CREATE TABLE `object_texts` (`id` integer PRIMARY KEY AUTOINCREMENT,`object_id` text NOT NULL,`prop` integer NOT NULL,`created` integer NOT NULL,`txt` text NOT NULL)",
		"INSERT INTO object_values VALUES ('00000000-0000-4000-8000-000000000001', 1, 0, x'73', 1, NULL)",
		"INSERT INTO object_texts (object_id, prop, created, txt) VALUES ('00000000-0000-4000-8000-000000000001', 1, 1, 'old')"},
	true: {"DROP TABLE object_values", "DROP TABLE object_texts",
		`CREATE TABLE "object_values" ("object_id" varchar(36),"prop" bigint,"part" smallint,"key" bytea,"created" bigint NOT NULL,"full" bytea,PRIMARY KEY ("object_id","prop","part","key"))`,
		`CREATE INDEX "idx_object_value" ON "object_values" ("prop","part","key","created","object_id")`,
		`CREATE TABLE "object_texts" ("id" bigserial PRIMARY KEY,"object_id" varchar(36) NOT NULL,"prop" bigint NOT NULL,"created" bigint NOT NULL,"txt" text NOT NULL)`,
		"INSERT INTO object_values VALUES ('00000000-0000-4000-8000-000000000001', 1, 0, '\\x73', 1, NULL)",
		"INSERT INTO object_texts (object_id, prop, created, txt) VALUES ('00000000-0000-4000-8000-000000000001', 1, 1, 'old')"},
}

// TestUpgradeBuildsIndex: objects whose index was built by an older
// version (ids as text) are indexed by the next migration, and found by
// filters and substring search again.
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
		// The index of version 2: object ids as text (version 1 on
		// SQLite, a rowid table, is recreated the same way).
		for _, q := range oldIndex[models.IsPostgres(db)] {
			if err := db.Exec(q).Error; err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := db.Create(&models.ObjectValueBuild{Version: 2}).Error; err != nil {
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
			if !strings.Contains(ddl, "WITHOUT ROWID") || !strings.Contains(ddl, "`object_id` blob") {
				t.Fatalf("object_values: %s", ddl)
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
