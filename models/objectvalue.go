package models

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
)

// ObjectValue is one row of the property-value index that object filters
// are answered from (docs/ontology.md, "The query path"): one row for a
// property's value (Prop PropKey), one per distinct element of an array
// value (Prop ElementKey of it), and, for a string or marking property
// whose value is a date or timestamp, a second value row with its text
// (class domain.KeyInstantText); a property without a value has one
// value row of key KeyNull. Key is a domain value key cut to MaxIndexedKey bytes;
// Full is the string when the key was cut. ObjectID is the object's id
// as its 16 bytes (IDKey), not 36 characters of text: a row is mostly
// its object's id, and the id is in every index of the table.
//
// idx_object_value serves filters: it finds a property's objects by
// value in creation order. An object's rows (writes, probes: does object
// X have a value of property P matching ...) are found by the primary key
// on SQLite (object_id, prop, key; the table WITHOUT ROWID is that
// key's B-tree) and by idx_object_values_object (object_id) on Postgres,
// whose B-tree stores an object's ~10 rows as one deduplicated entry.
// Fixed-width columns first: Postgres aligns each 8-byte column. An
// element row is told by its Prop (ElementKey), not by a column of its
// own: a column of 2 bytes costs 8 in most rows of Postgres' heap and
// index, which align rows and the column after the key to 8 bytes.
//
// On Postgres idx_object_value ends at created: the object id (17 of an
// entry's ~50 bytes) is read from the heap row, which every plan of it
// reads anyway (for full, object_id or the join), and ties of one
// creation time are put in id order by an incremental sort of the few
// rows sharing it. On SQLite an index of a WITHOUT ROWID table holds the
// primary key's columns whatever it declares.
type ObjectValue struct {
	// Prop is PropKey of the property (ElementKey of it for element
	// rows): 4 bytes, where Postgres' alignment makes 8 cost 8 more in
	// the rows and entries of short keys.
	Prop     int32  `gorm:"primaryKey;autoIncrement:false;index:idx_object_value,priority:1"`
	Created  int64  `gorm:"not null;index:idx_object_value,priority:3"` // the object's created_at, Unix µs
	ObjectID []byte `gorm:"primaryKey;index:idx_object_value,priority:4"`
	Key      []byte `gorm:"primaryKey;index:idx_object_value,priority:2"`
	Full     []byte
	// Counted marks the row a value count is kept by (a counted
	// property's value row, counts.go): not a column.
	Counted bool `gorm:"-"`
}

// objectValuesDDL is object_values as gorm would create it, but WITHOUT
// ROWID on SQLite (the table is its primary key's B-tree, instead of a
// rowid table plus an index holding every column again) and on Postgres
// without a primary key (idx_object_values_object instead: an object's
// rows are one deduplicated B-tree entry there, not one entry each), with
// idx_object_value without the object id (see ObjectValue), and with the
// 8-byte created before the 4-byte prop (no padding between them); gorm
// creates the other indexes, and skips idx_object_value as existing.
var objectValuesDDL = map[bool][]string{
	false: {"CREATE TABLE `object_values` (`prop` integer,`created` integer NOT NULL,`object_id` blob,`key` blob,`full` blob,PRIMARY KEY (`object_id`,`prop`,`key`)) WITHOUT ROWID"},
	true: {`CREATE TABLE "object_values" ("created" bigint NOT NULL,"prop" integer NOT NULL,"object_id" bytea NOT NULL,"key" bytea NOT NULL,"full" bytea)`,
		`CREATE INDEX "idx_object_values_object" ON "object_values" ("object_id")`,
		`CREATE INDEX "idx_object_value" ON "object_values" ("prop","key","created")`},
}

// IDKey is an object id as the index stores it: the 16 bytes of the
// UUID. The index orders ties by these bytes, which order as the id's
// text does (lowercase hexadecimal), so ids must be lowercase UUIDs, as
// the store makes them.
func IDKey(id string) ([]byte, error) {
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return nil, fmt.Errorf("index object %q: its id is not a lowercase UUID", id)
	}
	return u[:], nil
}

// prepareObjectValues recreates object_values and object_texts (empty,
// for buildObjectValues to fill) unless the index of this version was
// built, and reports whether it did. Every older version is rebuilt:
// its rows name properties by a hash (version 5), its SQLite text ids
// are not creation labels (4), or its ids are text (2) or object_values
// a rowid table (1).
func prepareObjectValues(db *gorm.DB) (bool, error) {
	db = db.Session(&gorm.Session{NewDB: true})
	pg := IsPostgres(db)
	m := db.Migrator()
	if m.HasTable(&ObjectValueBuild{}) {
		var built []int
		if err := db.Model(&ObjectValueBuild{}).Pluck("version", &built).Error; err != nil {
			return false, fmt.Errorf("read index build: %w", err)
		}
		if slices.Contains(built, ObjectValueVersion) && m.HasTable(&ObjectValue{}) {
			return false, nil
		}
		if err := db.Session(&gorm.Session{AllowGlobalUpdate: true}).Delete(&ObjectValueBuild{}).Error; err != nil {
			return false, fmt.Errorf("forget the index build: %w", err)
		}
	}
	drops := []string{"DROP TABLE IF EXISTS object_values", "DROP TABLE IF EXISTS object_texts"}
	if !pg {
		drops = append(drops, "DROP TABLE IF EXISTS object_texts_fts")
	}
	for _, q := range append(drops, objectValuesDDL[pg]...) {
		if err := db.Exec(q).Error; err != nil {
			return false, fmt.Errorf("recreate the property-value index: %w", err)
		}
	}
	return true, nil
}

// recordIndexBuild records the index of this version as built (and
// forgets older versions' builds).
func recordIndexBuild(db *gorm.DB) error {
	return db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("version <> ?", ObjectValueVersion).Delete(&ObjectValueBuild{}).Error; err != nil {
			return fmt.Errorf("forget older index builds: %w", err)
		}
		if err := tx.Create(&ObjectValueBuild{Version: ObjectValueVersion, BuiltAt: time.Now().UTC()}).Error; err != nil {
			return fmt.Errorf("record index build: %w", err)
		}
		return nil
	})
}

// ObjectValueBuild records that the index was built for existing objects
// with encoding Version (ObjectValueVersion); a new version rebuilds it.
type ObjectValueBuild struct {
	Version int `gorm:"primaryKey;autoIncrement:false"`
	BuiltAt time.Time
}

// ObjectValueVersion is the index's encoding version (2: rows of
// KeyNull for properties without a value; 3: object ids as 16 bytes,
// no primary key on Postgres; 4: no column part (ElementKey), and on
// Postgres no object_texts (the trigram index is on object_values) and
// idx_object_value without the object id; 5: SQLite's object_texts ids
// are creation labels, TextBlock; 6: properties named by their
// IndexKey, 4 bytes, not a hash of 8, and arrays' and objects' keys
// 16 bytes of hash, IndexedKey).
const ObjectValueVersion = 6

var objectValueModels = []any{&ObjectValue{}, &ObjectValueBuild{}, &PropertyKey{}}

// PropertyKey allocates properties' index keys (Property.IndexKey is
// twice an ID): a row per property ever created, never deleted, so that
// no key is given twice (Postgres takes IDs from a sequence, which a
// rolled-back transaction does not return; on SQLite a rolled-back
// property's ID may be given again, which nothing holds).
type PropertyKey struct {
	ID         int32  `gorm:"primaryKey;autoIncrement"`
	PropertyID string `gorm:"size:36"`
}

// AssignIndexKey allocates p's IndexKey inside tx (before p is written,
// so that its values can be indexed in the same transaction).
func AssignIndexKey(ctx context.Context, tx *gorm.DB, p *Property) error {
	k := PropertyKey{PropertyID: p.ID}
	if err := tx.WithContext(ctx).Create(&k).Error; err != nil {
		return fmt.Errorf("allocate the index key of property %s: %w", p.Name, err)
	}
	if k.ID <= 0 || k.ID >= 1<<30 {
		return fmt.Errorf("allocate the index key of property %s: key %d out of range", p.Name, k.ID)
	}
	p.IndexKey = 2 * k.ID
	return nil
}

// assignPropertyKeys gives every property without an index key (made
// by a version before 6) one.
func assignPropertyKeys(ctx context.Context, db *gorm.DB) error {
	var ps []Property
	if err := db.WithContext(ctx).Where("index_key = 0").Order("object_type_id, position, name").Find(&ps).Error; err != nil {
		return fmt.Errorf("find properties without an index key: %w", err)
	}
	return db.Transaction(func(tx *gorm.DB) error {
		for i := range ps {
			if err := AssignIndexKey(ctx, tx, &ps[i]); err != nil {
				return err
			}
			if err := tx.Model(&ps[i]).UpdateColumn("index_key", ps[i].IndexKey).Error; err != nil {
				return fmt.Errorf("record the index key of property %s: %w", ps[i].Name, err)
			}
		}
		return nil
	})
}

// textModels are the text index's tables in db's dialect: ObjectText on
// SQLite; none on Postgres, whose trigram index is on object_values.
func textModels(db *gorm.DB) []any {
	if IsPostgres(db) {
		return nil
	}
	return []any{&ObjectText{}}
}

// indexModels are the index's tables in db's dialect.
func indexModels(db *gorm.DB) []any { return append([]any{&ObjectValue{}}, textModels(db)...) }

// ObjectText is the text of a string property's value, searched by
// substring (the operator includes) through SQLite's FTS5 table
// object_texts_fts (tokenizer trigram, case-sensitive) over it. Strings
// holding U+0000 are left out (as on Postgres, which text cannot store
// them in). Postgres has no such table: its pg_trgm GIN index
// idx_object_values_trgm is on object_values' rows of strings
// (valueTextFunc), whose text they hold already.
type ObjectText struct {
	ID       int64  `gorm:"primaryKey"`
	ObjectID []byte `gorm:"not null;index"` // IDKey
	Prop     int64  `gorm:"not null"`
	Created  int64  `gorm:"not null"`
	Txt      string `gorm:"type:text;not null"`
}

// sqliteTextSearch keeps object_texts_fts in step with object_texts.
var sqliteTextSearch = []string{
	`CREATE VIRTUAL TABLE IF NOT EXISTS object_texts_fts USING fts5(txt, content='object_texts', content_rowid='id', tokenize='trigram case_sensitive 1')`,
	`CREATE TRIGGER IF NOT EXISTS object_texts_ai AFTER INSERT ON object_texts BEGIN INSERT INTO object_texts_fts(rowid, txt) VALUES (new.id, new.txt); END`,
	`CREATE TRIGGER IF NOT EXISTS object_texts_ad AFTER DELETE ON object_texts BEGIN INSERT INTO object_texts_fts(object_texts_fts, rowid, txt) VALUES ('delete', old.id, old.txt); END`,
}

// TrigramSearch reports whether db has a trigram index of strings:
// always on SQLite; on Postgres when the pg_trgm extension could be
// created (Debian's postgresql-contrib).
func TrigramSearch(db *gorm.DB) bool {
	if !IsPostgres(db) {
		return true
	}
	var n int64
	db.Raw("SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'idx_object_values_trgm' AND schemaname = current_schema()").Scan(&n)
	return n > 0
}

// ValueText is the SQL function (Postgres) giving the text of an
// object_values row of a string's value (not an element row, key class KeyString or
// KeyInstantText; the full string when the key was cut), NULL for every
// other row and for strings holding U+0000. idx_object_values_trgm is a
// pg_trgm index of it, partial on its not being NULL: a search names
// ValueText(alias) LIKE ..., which implies that.
const ValueText = "ontoflow_value_text"

// valueTextFunc creates ValueText. Immutable: its answer depends on
// the row only (convert_from is stable in general, for the encoding
// conversion; from UTF8 to the UTF8 database it is not one).
const valueTextFunc = `CREATE FUNCTION ` + ValueText + `(p bigint, k bytea, f bytea) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
SELECT CASE WHEN p & 1 = 0 AND get_byte(k, 0) IN (83, 85) AND position('\x00'::bytea IN COALESCE(f, k)) = 0
THEN convert_from(COALESCE(f, substring(k FROM 2)), 'UTF8') END
$fn$`

// ValueTextOf is ValueText of the object_values row aliased a.
func ValueTextOf(a string) string {
	return ValueText + "(" + a + ".prop, " + a + ".key, " + a + `."full")`
}

// ensureTextSearch creates the trigram index of strings.
func ensureTextSearch(db *gorm.DB) error {
	if !IsPostgres(db) {
		for _, q := range sqliteTextSearch {
			if err := db.Exec(q).Error; err != nil {
				return fmt.Errorf("create text search: %w", err)
			}
		}
		return nil
	}
	if err := db.Exec("CREATE EXTENSION IF NOT EXISTS pg_trgm").Error; err != nil {
		slog.Warn("substring search without an index: the pg_trgm extension is missing (install postgresql-contrib)", "err", err)
		return nil
	}
	// The extension lives in one schema of the database (often public),
	// which need not be on this connection's search path.
	var schema string
	if err := db.Raw("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'").Scan(&schema).Error; err != nil {
		return fmt.Errorf("find pg_trgm: %w", err)
	}
	opclass := `"` + strings.ReplaceAll(schema, `"`, `""`) + `".gin_trgm_ops`
	var fns int64
	if err := db.Raw("SELECT COUNT(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.proname = ? AND n.nspname = current_schema()", ValueText).Scan(&fns).Error; err != nil {
		return fmt.Errorf("find %s: %w", ValueText, err)
	}
	if fns == 0 {
		if err := db.Exec(valueTextFunc).Error; err != nil {
			return fmt.Errorf("create %s: %w", ValueText, err)
		}
	}
	// A pending list of 256 kB, not 4 MB: GIN's pending list holds new
	// entries unmerged until it is full, and each search reads all of
	// it; 4 MB was 4 of the index's 5.5 MiB at 10,000 objects (and
	// 14,000 rows read per search). Without one (fastupdate off) every
	// string's trigrams are merged as it is written: the load took 2.2x
	// as long, for 0.25 MB less.
	text := ValueTextOf("object_values")
	if err := db.Exec("CREATE INDEX IF NOT EXISTS idx_object_values_trgm ON object_values USING gin ((" + text + ") " + opclass + ") WITH (gin_pending_list_limit = 256) WHERE " + text + " IS NOT NULL").Error; err != nil {
		return fmt.Errorf("create trigram index: %w", err)
	}
	return nil
}

// KeyUnequal is the key class of a value equal to nothing, so that it
// still exists for exists and not_exists.
const KeyUnequal byte = 'X'

// KeyNull is the key of a property without a value (absent or null): a
// value row of its own, so that not_exists is an equality on the index
// and an ordering by the property reads every object from one index
// range, objects without a value after (ascending) or before
// (descending) all others, as Postgres orders NULL.
const KeyNull byte = 'Z'

// SortKey is the key of v's first value row, the one an ordering by its
// property reads: its equality key cut to MaxIndexedKey bytes, KeyUnequal
// with a hash for a value equal to nothing, KeyNull for no value.
func SortKey(v any) []byte {
	if v == nil {
		return []byte{KeyNull}
	}
	k, ok := domain.EqualityKey(v)
	if !ok {
		b, _ := json.Marshal(v)
		sum := sha256.Sum256(b)
		k = append([]byte{KeyUnequal}, sum[:]...)
	}
	key, _ := CutKey(k)
	return key
}

// MaxIndexedKey bounds a key in the index (Postgres refuses B-tree
// entries of more than ~2.7 kB); longer strings keep their text in Full.
const MaxIndexedKey = 129

// PropKey is the index's name for property p: its IndexKey, even
// (ElementKey's is odd), unique across object types.
func PropKey(p Property) int64 { return int64(p.IndexKey) }

// ElementKey is the Prop of the element rows of property prop
// (PropKey).
func ElementKey(prop int64) int64 { return prop | 1 }

// hashKeyLen is the length of an array's or object's key in the index:
// its class and 16 of the 32 bytes of SHA-256 that domain.EqualityKey
// gives. Two values are then equal to a filter only on a 128-bit
// collision, and the row is 16 bytes smaller in the table and in
// idx_object_value (a fifth of a row with one array property).
const hashKeyLen = 17

// IndexedKey is an equality key as the index stores and filters compare
// it: an array's or object's hash shortened to hashKeyLen, any other key
// unchanged.
func IndexedKey(k []byte) []byte {
	if len(k) > hashKeyLen && (k[0] == domain.KeyArray || k[0] == domain.KeyObject) {
		return k[:hashKeyLen]
	}
	return k
}

// CutKey splits a value key into what the index stores: the key (at most
// MaxIndexedKey bytes, IndexedKey) and, when cut, the string it was cut
// from.
func CutKey(k []byte) (key, full []byte) {
	k = IndexedKey(k)
	if len(k) <= MaxIndexedKey {
		return k, nil
	}
	return k[:MaxIndexedKey], k[1:]
}

// CreatedKey is an object's created_at as the index orders it.
func CreatedKey(t time.Time) int64 { return t.UnixMicro() }

// ObjectValues are the index rows of an object holding values under its
// type's property definitions defs (each with its IndexKey). Values are read as the
// database returns them (through JSON), so keys match what filters
// compare.
func ObjectValues(objectID string, created time.Time, defs []Property, values map[string]any) ([]ObjectValue, error) {
	id, err := IDKey(objectID)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("index object %s: %w", objectID, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var vals map[string]any
	if err := dec.Decode(&vals); err != nil {
		return nil, fmt.Errorf("index object %s: %w", objectID, err)
	}
	var out []ObjectValue
	for i := range defs {
		if defs[i].IndexKey == 0 {
			return nil, fmt.Errorf("index object %s: property %s has no index key", objectID, defs[i].Name)
		}
		first := len(out)
		out = appendPropertyValues(out, PropKey(defs[i]), id, created, defs[i].Type.V, vals[defs[i].Name])
		out[first].Counted = Counted(defs[i]) // the value row comes first
	}
	return out, nil
}

// appendPropertyValues appends the index rows of one property's value v
// (as read from the database) of the object of IDKey id.
func appendPropertyValues(out []ObjectValue, prop int64, id []byte, created time.Time, t domain.PropertyType, v any) []ObjectValue {
	at := CreatedKey(created)
	row := func(prop int64, k []byte) { // PropKey: allocated keys fit 4 bytes (AssignIndexKey)
		key, full := CutKey(k)
		out = append(out, ObjectValue{ObjectID: id, Prop: int32(prop), Key: key, Full: full, Created: at})
	}
	k, ok := domain.EqualityKey(v)
	if !ok {
		// No value (KeyNull), or a value equal to nothing (a number
		// conditions cannot read exactly), which is still present: a key
		// no filter value has.
		row(prop, SortKey(v))
		return out
	}
	row(prop, k)
	if s, isStr := v.(string); isStr && k[0] == domain.KeyInstant && (t.Base == domain.TypeString || t.Base == domain.TypeMarking) {
		row(prop, append([]byte{domain.KeyInstantText}, s...))
	}
	if items, isArr := v.([]any); isArr && t.Base == domain.TypeArray {
		seen := map[string]bool{}
		for _, it := range items {
			ek, ok := domain.EqualityKey(it)
			if !ok || seen[string(ek)] {
				continue
			}
			seen[string(ek)] = true
			row(ElementKey(prop), ek)
		}
	}
	return out
}

// ObjectTexts are the ObjectText rows of an object's string properties.
func ObjectTexts(objectID string, created time.Time, defs []Property, values map[string]any) ([]ObjectText, error) {
	id, err := IDKey(objectID)
	if err != nil {
		return nil, err
	}
	var out []ObjectText
	for i := range defs {
		if defs[i].Type.V.Base != domain.TypeString {
			continue
		}
		s, ok := values[defs[i].Name].(string)
		if !ok || strings.ContainsRune(s, 0) {
			continue
		}
		out = append(out, ObjectText{ObjectID: id, Prop: PropKey(defs[i]), Created: CreatedKey(created), Txt: s})
	}
	return out, nil
}

// IndexObject writes the index rows (values and texts) of an object
// holding values, first removing its old ones unless fresh.
func IndexObject(ctx context.Context, tx *gorm.DB, objectID string, created time.Time, defs []Property, values map[string]any, fresh bool) error {
	if !fresh {
		if err := UnindexObject(ctx, tx, objectID); err != nil {
			return err
		}
	}
	rows, err := ObjectValues(objectID, created, defs, values)
	if err != nil {
		return err
	}
	if err := InsertObjectValues(ctx, tx, rows); err != nil {
		return err
	}
	texts, err := ObjectTexts(objectID, created, defs, values)
	if err != nil {
		return err
	}
	return InsertObjectTexts(ctx, tx, texts)
}

// UnindexObject removes an object's index rows.
func UnindexObject(ctx context.Context, tx *gorm.DB, objectID string) error {
	id, err := IDKey(objectID)
	if err != nil {
		return err
	}
	if err := deleteValues(ctx, tx, "object_id = ?", id); err != nil {
		return fmt.Errorf("object %s: %w", objectID, err)
	}
	for _, m := range textModels(tx) {
		if err := tx.WithContext(ctx).Where("object_id = ?", id).Delete(m).Error; err != nil {
			return fmt.Errorf("unindex object %s: %w", objectID, err)
		}
	}
	return nil
}

// DropPropertyIndex removes every index row of property prop (PropKey).
func DropPropertyIndex(ctx context.Context, tx *gorm.DB, prop int64) error {
	for _, m := range indexModels(tx) {
		if err := tx.WithContext(ctx).Where("prop IN ?", []int64{prop, ElementKey(prop)}).Delete(m).Error; err != nil {
			return fmt.Errorf("drop the index of a property: %w", err)
		}
	}
	if err := tx.WithContext(ctx).Where("prop = ?", prop).Delete(&ValueCount{}).Error; err != nil {
		return fmt.Errorf("drop the value counts of a property: %w", err)
	}
	return nil
}

// IndexProperty writes the index rows of property p of one object,
// first removing its old ones when stale.
func IndexProperty(ctx context.Context, tx *gorm.DB, objectID string, created time.Time, p Property, values map[string]any, stale bool) error {
	prop := PropKey(p)
	if stale {
		id, err := IDKey(objectID)
		if err != nil {
			return err
		}
		props := []int64{prop, ElementKey(prop)}
		if err := deleteValues(ctx, tx, "object_id = ? AND prop IN ?", id, props); err != nil {
			return fmt.Errorf("%s of %s: %w", p.Name, objectID, err)
		}
		for _, m := range textModels(tx) {
			if err := tx.WithContext(ctx).Where("object_id = ? AND prop IN ?", id, props).Delete(m).Error; err != nil {
				return fmt.Errorf("unindex %s of %s: %w", p.Name, objectID, err)
			}
		}
	}
	defs := []Property{p}
	rows, err := ObjectValues(objectID, created, defs, values)
	if err != nil {
		return err
	}
	if err := InsertObjectValues(ctx, tx, rows); err != nil {
		return err
	}
	texts, err := ObjectTexts(objectID, created, defs, values)
	if err != nil {
		return err
	}
	return InsertObjectTexts(ctx, tx, texts)
}

// InsertObjectTexts writes rows (SQLite; Postgres searches the strings
// in object_values) in statements of a few hundred.
func InsertObjectTexts(ctx context.Context, tx *gorm.DB, rows []ObjectText) error {
	if len(rows) == 0 || IsPostgres(tx) {
		return nil
	}
	if err := labelTexts(ctx, tx, rows); err != nil {
		return err
	}
	if err := tx.WithContext(ctx).CreateInBatches(rows, 500).Error; err != nil {
		return fmt.Errorf("write text index: %w", err)
	}
	return nil
}

// InsertObjectValues writes rows in statements of a few hundred.
func InsertObjectValues(ctx context.Context, tx *gorm.DB, rows []ObjectValue) error {
	if len(rows) == 0 {
		return nil
	}
	if err := tx.WithContext(ctx).CreateInBatches(rows, 500).Error; err != nil {
		return fmt.Errorf("write property-value index: %w", err)
	}
	return countValues(ctx, tx, deltasOf(rows, 1, func(r ObjectValue) bool { return r.Counted }))
}

// buildObjectValues indexes every existing object unless the index of
// this version was built: in batches of 1,000 objects, each its own
// transaction (no long lock on Postgres), logging progress. Properties
// without an index key (made by an older version) are given one first.
func buildObjectValues(ctx context.Context, db *gorm.DB) error {
	db = db.Session(&gorm.Session{NewDB: true, Context: ctx})
	if err := ensureTextSearch(db); err != nil {
		return err
	}
	var n int64
	if err := db.Model(&ObjectValueBuild{}).Where("version = ?", ObjectValueVersion).Count(&n).Error; err != nil {
		return fmt.Errorf("read index build: %w", err)
	}
	if n > 0 {
		return nil
	}
	var total int64
	if err := db.Model(&Object{}).Count(&total).Error; err != nil {
		return fmt.Errorf("count objects: %w", err)
	}
	start := time.Now()
	if err := assignPropertyKeys(ctx, db); err != nil {
		return err
	}
	for _, m := range indexModels(db) {
		if err := db.Session(&gorm.Session{AllowGlobalUpdate: true}).Delete(m).Error; err != nil {
			return fmt.Errorf("clear property-value index: %w", err)
		}
	}
	if total > 0 {
		slog.Info("building the property-value index", "objects", total)
	}
	defs := map[string][]Property{}
	last, done := "", 0
	for {
		var objs []Object
		if err := db.Where("id > ?", last).Order("id").Limit(1000).Find(&objs).Error; err != nil {
			return fmt.Errorf("read objects to index: %w", err)
		}
		if len(objs) == 0 {
			break
		}
		var rows []ObjectValue
		var texts []ObjectText
		for i := range objs {
			o := &objs[i]
			ps, ok := defs[o.ObjectTypeID]
			if !ok {
				if err := db.Where("object_type_id = ?", o.ObjectTypeID).Find(&ps).Error; err != nil {
					return fmt.Errorf("read properties of %s: %w", o.ObjectTypeID, err)
				}
				defs[o.ObjectTypeID] = ps
			}
			r, err := ObjectValues(o.ID, o.CreatedAt, ps, o.Properties.V)
			if err != nil {
				return err
			}
			rows = append(rows, r...)
			t, err := ObjectTexts(o.ID, o.CreatedAt, ps, o.Properties.V)
			if err != nil {
				return err
			}
			texts = append(texts, t...)
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := InsertObjectValues(ctx, tx, rows); err != nil {
				return err
			}
			return InsertObjectTexts(ctx, tx, texts)
		})
		if err != nil {
			return err
		}
		done += len(objs)
		last = objs[len(objs)-1].ID
		if done%50000 < len(objs) || done == int(total) {
			slog.Info("property-value index", "indexed", done, "of", total, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	return recordIndexBuild(db)
}
