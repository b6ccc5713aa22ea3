package models

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"gorm.io/gorm"
)

// Why the catalog, not only the fingerprint: the recorded fingerprint says
// what this binary's migration made, not what the database holds now. An
// older binary started on the database (a rollback; those before the
// schema version check do not refuse) rebuilds tables with gorm's
// AutoMigrate of its own models, dropping indexes this one declares and
// making obsolete ones again, and records nothing. Trusting the
// fingerprint, this binary then queried indexes that were gone ("no such
// index: idx_link_target", issue 45). One catalog query per start finds
// that.

// obsoleteIndexes are indexes earlier schemas created that a wider one
// replaced: each costs every write and serves nothing its replacement
// does not. AutoMigrate creates indexes but never drops them, so
// repairIndexes does.
var obsoleteIndexes = map[string]bool{
	// idx_link_source and idx_link_target, which start with these columns.
	"idx_links_source_id": true, "idx_links_target_id": true,
}

// rawIndexes are the indexes that statements of their own make instead
// of the models' tags, per dialect (true: Postgres) and table, with the
// statement that recreates each ("": its own code makes it on every
// migration).
var rawIndexes = map[bool]map[string]map[string]string{
	true: {"object_values": {
		"idx_object_values_object": objectValuesDDL[true][1],
		// Without the object id, unlike the model's tag (see ObjectValue).
		"idx_object_value": objectValuesDDL[true][2],
		// ensureTextSearch, when pg_trgm is installed.
		"idx_object_values_trgm": "",
	}},
}

// catalogEntry is a table or an index as the database's catalog lists it
// (Index "" for a table).
type catalogEntry struct {
	Tbl   string
	Index string
}

// catalogQueries list the tables of the current schema and their indexes,
// leaving out what backs a primary key or a constraint (SQLite's
// automatic indexes have no SQL; Postgres's are a constraint's).
var catalogQueries = map[bool]string{
	false: `SELECT tbl_name AS tbl, CASE type WHEN 'index' THEN name ELSE '' END AS "index" FROM sqlite_master
		WHERE type = 'table' OR (type = 'index' AND sql IS NOT NULL)`,
	true: `SELECT tablename AS tbl, '' AS "index" FROM pg_tables WHERE schemaname = current_schema()
		UNION ALL
		SELECT i.tablename, i.indexname FROM pg_indexes i WHERE i.schemaname = current_schema()
		AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)`,
}

// repairIndexes compares the indexes the models declare with the
// database's catalog, creates the declared ones that are missing (and a
// model's table that is missing altogether), drops the obsoleteIndexes
// found, and logs indexes of the models' tables that nothing declares,
// leaving them (an operator's own, perhaps). It logs what it did.
func repairIndexes(ctx context.Context, db *gorm.DB) error {
	db = db.Session(&gorm.Session{NewDB: true, Context: ctx})
	pg := IsPostgres(db)
	var entries []catalogEntry
	if err := db.Raw(catalogQueries[pg]).Scan(&entries).Error; err != nil {
		return fmt.Errorf("read the index catalog: %w", err)
	}
	tables := map[string]bool{}
	have := map[string]map[string]bool{} // table -> index names
	for _, e := range entries {
		if e.Index == "" {
			tables[e.Tbl] = true
			continue
		}
		if have[e.Tbl] == nil {
			have[e.Tbl] = map[string]bool{}
		}
		have[e.Tbl][e.Index] = true
	}

	var created, dropped, undeclared, createdTables []string
	start := time.Now()
	m := db.Migrator()
	for _, model := range all(db) {
		stmt := &gorm.Statement{DB: db}
		if err := stmt.Parse(model); err != nil {
			return fmt.Errorf("parse model %T: %w", model, err)
		}
		table := stmt.Schema.Table
		if !tables[table] {
			// Its indexes come with it.
			if err := m.CreateTable(model); err != nil {
				return fmt.Errorf("create missing table %s: %w", table, err)
			}
			createdTables = append(createdTables, table)
			continue
		}
		raw := rawIndexes[pg][table]
		declared := map[string]bool{}
		for _, idx := range stmt.Schema.ParseIndexes() {
			declared[idx.Name] = true
		}
		for name := range raw {
			declared[name] = true
		}
		for _, name := range sortedKeys(declared) {
			if have[table][name] {
				continue
			}
			ddl, isRaw := raw[name]
			var err error
			switch {
			case isRaw && ddl == "":
				continue
			case isRaw:
				err = db.Exec(ddl).Error
			default:
				err = m.CreateIndex(model, name)
			}
			if err != nil {
				return fmt.Errorf("recreate index %s on %s: %w", name, table, err)
			}
			created = append(created, table+"."+name)
		}
		for _, name := range sortedKeys(have[table]) {
			if declared[name] {
				continue
			}
			if !obsoleteIndexes[name] {
				undeclared = append(undeclared, table+"."+name)
				continue
			}
			if err := db.Exec(fmt.Sprintf("DROP INDEX IF EXISTS %q", name)).Error; err != nil {
				return fmt.Errorf("drop obsolete index %s: %w", name, err)
			}
			dropped = append(dropped, table+"."+name)
		}
	}
	took := time.Since(start)
	if len(createdTables) > 0 {
		slog.WarnContext(ctx, "schema repair: created tables the models declare that were missing", "tables", createdTables, "took", took)
	}
	if len(created) > 0 {
		slog.WarnContext(ctx, "schema repair: recreated indexes the models declare that were missing (an older binary may have run on this database)", "indexes", created, "took", took)
	}
	if len(dropped) > 0 {
		slog.InfoContext(ctx, "schema repair: dropped obsolete indexes", "indexes", dropped)
	}
	if len(undeclared) > 0 {
		slog.WarnContext(ctx, "schema check: indexes the models do not declare, left in place (drop them if nothing needs them)", "indexes", undeclared)
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
