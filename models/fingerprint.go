package models

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"gorm.io/gorm"
)

// Why a fingerprint: gorm's AutoMigrate is not a no-op on SQLite. Its
// size check reads a column's length from the first row's value, so every
// NOT NULL string column with a size tag (kind, status, actor_id...) looks
// changed as soon as its table holds a row, and each such column makes
// the SQLite migrator copy the whole table: executions six times,
// objects, action types and others on every start, minutes at a million
// rows, and a kill in between leaves a table without its indexes until
// the next migration. So AutoMigrate runs only when the models' schema
// differs from the one the database was last migrated to, which the
// schema_version row records as this fingerprint.

// schemaFingerprint hashes the schema the models declare, as db's dialect
// would create it: each table's columns with their full SQL types
// (size, NOT NULL, defaults) and its indexes. Any change to a model's
// columns or indexes changes it, whether or not SchemaVersion is raised.
func schemaFingerprint(db *gorm.DB) (string, error) {
	h := sha256.New()
	m := db.Migrator()
	for _, model := range all(db) {
		stmt := &gorm.Statement{DB: db}
		if err := stmt.Parse(model); err != nil {
			return "", fmt.Errorf("parse model %T: %w", model, err)
		}
		fmt.Fprintf(h, "table %s\n", stmt.Schema.Table)
		for _, name := range stmt.Schema.DBNames {
			f := stmt.Schema.FieldsByDBName[name]
			fmt.Fprintf(h, "  %s %s pk=%v\n", name, m.FullDataTypeOf(f).SQL, f.PrimaryKey)
		}
		for _, idx := range sortedIndexes(stmt) {
			fmt.Fprintf(h, "  %s\n", idx)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sortedIndexes describes the model's indexes, ordered by name.
func sortedIndexes(stmt *gorm.Statement) []string {
	var out []string
	for _, idx := range stmt.Schema.ParseIndexes() {
		cols := make([]string, 0, len(idx.Fields))
		for _, f := range idx.Fields {
			cols = append(cols, fmt.Sprintf("%s %s %s", f.DBName, f.Sort, f.Expression))
		}
		out = append(out, fmt.Sprintf("index %s %s %s %s where=%s (%s)", idx.Name, idx.Class, idx.Type, idx.Option, idx.Where, strings.Join(cols, ", ")))
	}
	sort.Strings(out)
	return out
}
