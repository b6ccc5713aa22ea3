package models

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
)

// Counters kept in the write's transaction (issue 48; docs/ontology.md,
// "Counters"): how many objects each type has (ObjectCount) and, for
// properties of a bounded domain (Counted), how many objects hold each
// value (ValueCount). A count of a type, or of a type by such a
// property, is then a sum of a few rows instead of a read of every
// object or index entry.
//
// Each counter is split in shards: a write adds its delta to the row of
// its transaction's shard (an UPSERT, atomic on both dialects), and a
// count is the sum of the shards. On Postgres the shard is the
// transaction id modulo CountShards, so concurrent writers of one type
// update different rows (an UPSERT holds its row's lock to commit: with
// one row per type every writer of the type would wait for the one
// before), and all the counter rows of one transaction are in one shard
// per counter (a transaction touching two shards of one counter could
// deadlock with another touching them in the other order). SQLite has
// one writer at a time: one shard. Rejected: a delta row per
// transaction, compacted later (no lock at all, but reads sum an
// unbounded number of rows until a compaction, which needs a job of its
// own).

// CountShards is the number of shards of a counter on Postgres.
const CountShards = 16

// ObjectCount is one shard of the number of objects of a type.
type ObjectCount struct {
	ObjectTypeID string `gorm:"primaryKey;size:36"`
	Shard        int16  `gorm:"primaryKey;autoIncrement:false"`
	N            int64  `gorm:"not null"`
}

// ValueCount is one shard of the number of objects whose value row of
// property Prop (PropKey) has key Key (as object_values holds it; KeyNull
// counts the objects without a value).
type ValueCount struct {
	Prop  int32  `gorm:"primaryKey;autoIncrement:false"`
	Key   []byte `gorm:"primaryKey"`
	Shard int16  `gorm:"primaryKey;autoIncrement:false"`
	N     int64  `gorm:"not null"`
}

// CountBuild records that the counters were built from the objects and
// the index (buildCounts); a database without it is counted once.
type CountBuild struct {
	Version int `gorm:"primaryKey;autoIncrement:false"`
	BuiltAt time.Time
}

// countVersion is the counters' version: a new one recounts.
const countVersion = 1

var countModels = []any{&ObjectCount{}, &ValueCount{}, &CountBuild{}}

// Counted reports whether property p's values are counted (ValueCount):
// booleans and markings, whose values are few by definition (two; the
// configured levels). Other properties are not, whatever their values:
// a counter row per distinct value of a unique string would double the
// index and cost every write an UPSERT per property.
func Counted(p Property) bool {
	switch p.Type.V.Base {
	case domain.TypeBoolean, domain.TypeMarking:
		return true
	}
	return false
}

// counterKey reports whether an index row of a counted property is the
// one its count is kept by: the value row (not an element row, nor the
// second row of a date-like string, class KeyInstantText).
func counterKey(prop int64, key []byte) bool {
	return prop == prop&^1 && (len(key) == 0 || key[0] != domain.KeyInstantText)
}

// shardExpr is the SQL of the current transaction's shard.
func shardExpr(db *gorm.DB) string {
	if IsPostgres(db) {
		return fmt.Sprintf("CAST(txid_current() %% %d AS smallint)", CountShards)
	}
	return "0"
}

// CountObjects adds delta to the object count of type typeID, in tx
// (the transaction writing or deleting the objects).
func CountObjects(ctx context.Context, tx *gorm.DB, typeID string, delta int64) error {
	if delta == 0 {
		return nil
	}
	q := "INSERT INTO object_counts (object_type_id, shard, n) VALUES (?, " + shardExpr(tx) + ", ?) " +
		"ON CONFLICT (object_type_id, shard) DO UPDATE SET n = object_counts.n + excluded.n"
	if err := tx.WithContext(ctx).Exec(q, typeID, delta).Error; err != nil {
		return fmt.Errorf("count objects of %s: %w", typeID, err)
	}
	return nil
}

// valueDelta is a change of one value's count.
type valueDelta struct {
	prop int32
	key  []byte
	n    int64
}

// deltasOf sums the changes of rows (each counted row n times: +1 or -1).
func deltasOf(rows []ObjectValue, n int64, counted func(ObjectValue) bool) []valueDelta {
	sum := map[string]*valueDelta{}
	var out []valueDelta
	for _, r := range rows {
		if !counted(r) {
			continue
		}
		k := fmt.Sprintf("%d:%s", r.Prop, r.Key)
		if d := sum[k]; d != nil {
			d.n += n
			continue
		}
		sum[k] = &valueDelta{prop: r.Prop, key: r.Key, n: n}
	}
	for _, d := range sum {
		if d.n != 0 {
			out = append(out, *d)
		}
	}
	// One order for every writer: two transactions of one shard then
	// lock their common rows in the same order.
	sort.Slice(out, func(i, j int) bool {
		if out[i].prop != out[j].prop {
			return out[i].prop < out[j].prop
		}
		return bytes.Compare(out[i].key, out[j].key) < 0
	})
	return out
}

// countValues adds ds to the value counts in tx, one statement.
func countValues(ctx context.Context, tx *gorm.DB, ds []valueDelta) error {
	if len(ds) == 0 {
		return nil
	}
	vals := make([]string, len(ds))
	args := make([]any, 0, 3*len(ds))
	for i, d := range ds {
		vals[i] = "(?, ?, " + shardExpr(tx) + ", ?)"
		args = append(args, d.prop, d.key, d.n)
	}
	q := "INSERT INTO value_counts (prop, key, shard, n) VALUES " + strings.Join(vals, ", ") +
		" ON CONFLICT (prop, key, shard) DO UPDATE SET n = value_counts.n + excluded.n"
	if err := tx.WithContext(ctx).Exec(q, args...).Error; err != nil {
		return fmt.Errorf("count property values: %w", err)
	}
	return nil
}

// uncountDeleted subtracts the value rows an index DELETE returned
// (prop, key) from the counts of the counted properties among them: a
// property is counted when it has counter rows (every object of a
// counted property has a value row, counted when written), so no
// property definition is read here.
func uncountDeleted(ctx context.Context, tx *gorm.DB, rows []ObjectValue) error {
	var props []int32
	seen := map[int32]bool{}
	for _, r := range rows {
		if counterKey(int64(r.Prop), r.Key) && !seen[r.Prop] {
			seen[r.Prop] = true
			props = append(props, r.Prop)
		}
	}
	if len(props) == 0 {
		return nil
	}
	var counted []int32
	if err := tx.WithContext(ctx).Model(&ValueCount{}).Distinct("prop").Where("prop IN ?", props).Pluck("prop", &counted).Error; err != nil {
		return fmt.Errorf("find counted properties: %w", err)
	}
	is := map[int32]bool{}
	for _, p := range counted {
		is[p] = true
	}
	return countValues(ctx, tx, deltasOf(rows, -1, func(r ObjectValue) bool { return is[r.Prop] && counterKey(int64(r.Prop), r.Key) }))
}

// deleteValues deletes the object_values rows matching where, subtracting
// the counted ones from their counts.
func deleteValues(ctx context.Context, tx *gorm.DB, where string, args ...any) error {
	rows, err := tx.WithContext(ctx).Raw("DELETE FROM object_values WHERE "+where+" RETURNING prop, key", args...).Rows()
	if err != nil {
		return fmt.Errorf("unindex: %w", err)
	}
	var gone []ObjectValue
	for rows.Next() {
		var r ObjectValue
		if err := rows.Scan(&r.Prop, &r.Key); err != nil {
			rows.Close()
			return fmt.Errorf("unindex: %w", err)
		}
		gone = append(gone, r)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("unindex: %w", err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("unindex: %w", err)
	}
	return uncountDeleted(ctx, tx, gone)
}

// TypeCount is the number of objects of type typeID (every object,
// whoever may read it).
func TypeCount(ctx context.Context, db *gorm.DB, typeID string) (int64, error) {
	var n int64
	if err := db.WithContext(ctx).Raw("SELECT COALESCE(SUM(n), 0) FROM object_counts WHERE object_type_id = ?", typeID).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("read the object count of %s: %w", typeID, err)
	}
	return n, nil
}

// KeyCount is one value of a counted property and its objects.
type KeyCount struct {
	Key []byte
	N   int64
}

// ValueCounts are the values of counted property prop (PropKey) that
// objects hold, with how many hold each (KeyNull: no value).
func ValueCounts(ctx context.Context, db *gorm.DB, prop int64) ([]KeyCount, error) {
	var out []KeyCount
	q := "SELECT key, SUM(n) AS n FROM value_counts WHERE prop = ? GROUP BY key HAVING SUM(n) <> 0 ORDER BY key"
	if err := db.WithContext(ctx).Raw(q, prop).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("read the value counts of a property: %w", err)
	}
	return out, nil
}

// buildCounts counts every type's objects and every counted property's
// values once (a database from before the counters, or whose index was
// rebuilt), each counter a statement over the objects or the index; the
// caller holds the migration lock, and writers of an older binary must
// be stopped (SchemaVersion 8).
func buildCounts(ctx context.Context, db *gorm.DB, rebuilt bool) error {
	db = db.Session(&gorm.Session{NewDB: true, Context: ctx})
	var n int64
	if err := db.Model(&CountBuild{}).Where("version = ?", countVersion).Count(&n).Error; err != nil {
		return fmt.Errorf("read the counters' build: %w", err)
	}
	if n > 0 && !rebuilt {
		return nil
	}
	var props []Property
	if err := db.Find(&props).Error; err != nil {
		return fmt.Errorf("read properties to count: %w", err)
	}
	var keys []int64
	for _, p := range props {
		if Counted(p) && p.IndexKey != 0 {
			keys = append(keys, PropKey(p))
		}
	}
	start := time.Now()
	err := db.Transaction(func(tx *gorm.DB) error {
		all := tx.Session(&gorm.Session{AllowGlobalUpdate: true})
		for _, m := range []any{&ObjectCount{}, &ValueCount{}, &CountBuild{}} {
			if err := all.Delete(m).Error; err != nil {
				return fmt.Errorf("clear the counters: %w", err)
			}
		}
		if err := tx.Exec("INSERT INTO object_counts (object_type_id, shard, n) SELECT object_type_id, 0, COUNT(*) FROM objects GROUP BY object_type_id").Error; err != nil {
			return fmt.Errorf("count objects: %w", err)
		}
		if len(keys) > 0 {
			q := "INSERT INTO value_counts (prop, key, shard, n) SELECT prop, key, 0, COUNT(*) FROM object_values " +
				"WHERE prop IN ? AND (key < ? OR key >= ?) GROUP BY prop, key"
			if err := tx.Exec(q, keys, []byte{domain.KeyInstantText}, []byte{domain.KeyInstantText + 1}).Error; err != nil {
				return fmt.Errorf("count property values: %w", err)
			}
		}
		return tx.Create(&CountBuild{Version: countVersion, BuiltAt: time.Now().UTC()}).Error
	})
	if err != nil {
		return err
	}
	slog.Debug("counters built", "counted_properties", len(keys), "took", time.Since(start))
	return nil
}

// DropCounts removes the counters of type typeID and of its properties
// (its deletion: it has no objects, they sum to 0).
func DropCounts(ctx context.Context, tx *gorm.DB, typeID string) error {
	tx = tx.WithContext(ctx)
	if err := tx.Where("object_type_id = ?", typeID).Delete(&ObjectCount{}).Error; err != nil {
		return fmt.Errorf("drop the object count of %s: %w", typeID, err)
	}
	sub := tx.Session(&gorm.Session{NewDB: true}).Model(&Property{}).Select("index_key").Where("object_type_id = ?", typeID)
	if err := tx.Where("prop IN (?)", sub).Delete(&ValueCount{}).Error; err != nil {
		return fmt.Errorf("drop the value counts of %s: %w", typeID, err)
	}
	return nil
}
