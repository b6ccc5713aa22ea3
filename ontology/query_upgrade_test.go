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

// TestUpgradeBuildsIndex: objects written before the property-value
// index existed (its rows and build record gone) are indexed by the next
// migration, and found by filters again.
func TestUpgradeBuildsIndex(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, _ := everything(t, db)
		for i := 0; i < 2500; i++ {
			ok(s.CreateObject(ctx, nil, "Everything", jsMap(t, fmt.Sprintf(`{"s":"n%d","i":%d,"a":[%d,7]}`, i%10, i, i)), "", admin.ID, ""))(t)
		}
		count := func(fs ...ontology.RawFilter) int {
			return len(ok(s.ListObjects(ctx, admin, "Everything", ontology.ObjectQuery{Filters: fs, Limit: 10000}))(t))
		}
		before := []int{count(ontology.RawFilter{Key: "s", Value: "n3"}), count(ontology.RawFilter{Key: "i.greater_than", Value: "2400"}),
			count(ontology.RawFilter{Key: "a.includes", Value: "7"})}
		if before[0] != 250 || before[1] != 99 || before[2] != 2500 {
			t.Fatalf("before: %v", before)
		}
		if !models.IsPostgres(db) {
			// An index of version 1 on SQLite: a rowid table.
			for _, q := range []string{"DROP TABLE object_values", "CREATE TABLE `object_values` (`object_id` text,`prop` integer,`part` integer,`key` blob,`created` integer NOT NULL,`full` blob,PRIMARY KEY (`object_id`,`prop`,`part`,`key`))",
				"CREATE INDEX `idx_object_value` ON `object_values`(`prop`,`part`,`key`,`created`,`object_id`)"} {
				if err := db.Exec(q).Error; err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, m := range []any{&models.ObjectValue{}, &models.ObjectValueBuild{}} {
			if err := db.Session(&gorm.Session{AllowGlobalUpdate: true}).Delete(m).Error; err != nil {
				t.Fatal(err)
			}
		}
		if n := count(ontology.RawFilter{Key: "s", Value: "n3"}); n != 0 {
			t.Fatalf("without the index %d objects found", n)
		}
		if err := models.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		after := []int{count(ontology.RawFilter{Key: "s", Value: "n3"}), count(ontology.RawFilter{Key: "i.greater_than", Value: "2400"}),
			count(ontology.RawFilter{Key: "a.includes", Value: "7"})}
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("after the upgrade %v, before %v", after, before)
		}
		if !models.IsPostgres(db) {
			// Recreated WITHOUT ROWID, and kept so by the next migration.
			if err := models.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			var ddl string
			db.Raw("SELECT sql FROM sqlite_master WHERE name = 'object_values'").Scan(&ddl)
			if !strings.Contains(ddl, "WITHOUT ROWID") {
				t.Fatalf("object_values: %s", ddl)
			}
			if n := count(ontology.RawFilter{Key: "s", Value: "n3"}); n != 250 {
				t.Fatalf("after a second migration %d objects found", n)
			}
		}
	})
}
