package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// SchemaVersion is the version of the database schema (app records and
// the WebDAV metadata, which live in the same database) this binary
// migrates to and runs on. Raise it with any change an older binary must
// not run against. Version 1 is every schema from before versions were
// recorded; 2 is the first recorded one; 3 adds the execution rollup,
// which an older binary would leave behind its writes; 4 adds the
// actor-free totals and the duration histograms, likewise; 5 keeps the
// totals per day only (no hourly rows), which a version-4 binary would
// read as missing; 6 names properties in the property-value index by
// their allocated key (Property.IndexKey), where a version-5 binary would
// write rows under a hash its version-6 readers never look for; 7 records
// a generation with every WebDAV file version (DavChecksum.Gen, part of
// the ETag), which a version-6 binary would leave stale on overwrite; 8
// keeps object and value counters in the write's transaction
// (ObjectCount, ValueCount), which a version-7 binary would not update.
const SchemaVersion = 8

// legacySchemaVersion is what an existing database without a recorded
// version is taken for: the version before versions were recorded.
const legacySchemaVersion = 1

// SchemaState is the single row (ID 1) recording the schema version the
// database was last migrated to.
type SchemaState struct {
	ID         int `gorm:"primaryKey;autoIncrement:false"`
	Version    int `gorm:"not null"`
	MigratedAt time.Time
	// Fingerprint is the models' schema the database was last migrated
	// to (schemaFingerprint): "" before it was recorded.
	Fingerprint string
}

// TableName implements gorm's tabler.
func (SchemaState) TableName() string { return "schema_version" }

// SchemaTooNewError refuses a database migrated by a newer binary: this
// one could not tell what its migrations would break.
type SchemaTooNewError struct {
	// Found is the database's schema version, Known this binary's.
	Found, Known int
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("the database's schema is version %d, newer than version %d, the newest this binary knows: "+
		"it was migrated by a newer Ontoflow; run that version or a later one (or restore a backup taken before the upgrade)", e.Found, e.Known)
}

// StoredSchemaVersion is the schema version db records: 0 for an empty
// database, legacySchemaVersion for one made before versions were
// recorded.
func StoredSchemaVersion(ctx context.Context, db *gorm.DB) (int, error) {
	st, err := storedSchema(ctx, db)
	return st.Version, err
}

// storedSchema is the schema_version row (Version as StoredSchemaVersion
// says).
func storedSchema(ctx context.Context, db *gorm.DB) (SchemaState, error) {
	db = db.WithContext(ctx)
	m := db.Migrator()
	var st SchemaState
	if m.HasTable(&SchemaState{}) {
		// SELECT *: a row written before the fingerprint column existed
		// reads with Fingerprint "".
		err := db.Take(&st, "id = ?", 1).Error
		if err == nil {
			return st, nil
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return st, fmt.Errorf("read the schema version: %w", err)
		}
	}
	// Users exist in every schema there has been.
	if m.HasTable(&User{}) {
		st.Version = legacySchemaVersion
	}
	return st, nil
}

// migrateVersioned runs migrate on conn unless the database is newer than
// this binary, then records SchemaVersion and the models' fingerprint.
// migrate is told whether the tables need migrating: the fingerprint
// differs from the recorded one, or none was recorded (see
// schemaFingerprint for why an unchanged schema is not auto-migrated). A
// new version over the same tables (5: a change of what the rows hold)
// is recorded without migrating them, which on SQLite would copy the
// largest tables. The caller holds the migration lock.
func migrateVersioned(ctx context.Context, conn *gorm.DB, migrate func(tables bool) error) (from int, err error) {
	stored, err := storedSchema(ctx, conn)
	if err != nil {
		return 0, err
	}
	from = stored.Version
	if from > SchemaVersion {
		return from, &SchemaTooNewError{Found: from, Known: SchemaVersion}
	}
	fp, err := schemaFingerprint(conn)
	if err != nil {
		return from, err
	}
	tables := stored.Fingerprint != fp
	if err := migrate(tables); err != nil {
		return from, err
	}
	if from == SchemaVersion && !tables {
		return from, nil
	}
	if err := conn.AutoMigrate(&SchemaState{}); err != nil {
		return from, fmt.Errorf("create the schema version table: %w", err)
	}
	st := SchemaState{ID: 1, Version: SchemaVersion, MigratedAt: time.Now().UTC(), Fingerprint: fp}
	err = conn.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"version", "migrated_at", "fingerprint"})}).Create(&st).Error
	if err != nil {
		return from, fmt.Errorf("record schema version %d: %w", SchemaVersion, err)
	}
	return from, nil
}
