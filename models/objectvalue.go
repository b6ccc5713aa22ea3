package models

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
)

// ObjectValue is one row of the property-value index that object filters
// are answered from (docs/ontology.md, "The query path"): one row for a
// property's value (Part 0), one per distinct element of an array value
// (Part 1), and, for a string or marking property whose value is a date
// or timestamp, a second Part 0 row with its text (class
// domain.KeyInstantText). Key is a domain value key cut to
// MaxIndexedKey bytes; Full is the string when the key was cut.
//
// The primary key serves writes (an object's rows) and probes (does
// object X have a value of property P matching ...); idx_object_value
// serves filters: it finds a property's objects by value in creation
// order.
type ObjectValue struct {
	ObjectID string `gorm:"primaryKey;size:36;index:idx_object_value,priority:5"`
	// Prop is PropKey(object type id, property name).
	Prop    int64  `gorm:"primaryKey;autoIncrement:false;index:idx_object_value,priority:1"`
	Part    int16  `gorm:"primaryKey;autoIncrement:false;index:idx_object_value,priority:2"`
	Key     []byte `gorm:"primaryKey;index:idx_object_value,priority:3"`
	Created int64  `gorm:"not null;index:idx_object_value,priority:4"` // the object's created_at, Unix µs
	Full    []byte
}

// ObjectValueBuild records that the index was built for existing objects
// with encoding Version (ObjectValueVersion); a new version rebuilds it.
type ObjectValueBuild struct {
	Version int `gorm:"primaryKey;autoIncrement:false"`
	BuiltAt time.Time
}

// ObjectValueVersion is the index's encoding version.
const ObjectValueVersion = 1

var objectValueModels = []any{&ObjectValue{}, &ObjectValueBuild{}}

// Index row parts.
const (
	PartValue   int16 = 0
	PartElement int16 = 1
)

// MaxIndexedKey bounds a key in the index (Postgres refuses B-tree
// entries of more than ~2.7 kB); longer strings keep their text in Full.
const MaxIndexedKey = 129

// PropKey is the index's name for property name of object type typeID:
// the first 8 bytes of SHA-256 of both, 8 bytes instead of ~45 in every
// row and index entry.
func PropKey(typeID, name string) int64 {
	sum := sha256.Sum256([]byte(typeID + "\x00" + name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// CutKey splits a value key into what the index stores: the key (at most
// MaxIndexedKey bytes) and, when cut, the string it was cut from.
func CutKey(k []byte) (key, full []byte) {
	if len(k) <= MaxIndexedKey {
		return k, nil
	}
	return k[:MaxIndexedKey], k[1:]
}

// CreatedKey is an object's created_at as the index orders it.
func CreatedKey(t time.Time) int64 { return t.UnixMicro() }

// ObjectValues are the index rows of an object of type typeID holding
// props under the property definitions props. Values are read as the
// database returns them (through JSON), so keys match what filters
// compare.
func ObjectValues(typeID, objectID string, created time.Time, defs []Property, values map[string]any) ([]ObjectValue, error) {
	if len(values) == 0 {
		return nil, nil
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
		out = appendPropertyValues(out, typeID, objectID, created, defs[i].Name, defs[i].Type.V, vals[defs[i].Name])
	}
	return out, nil
}

// PropertyValues are the index rows of one property's value v (as read
// from the database) of one object.
func PropertyValues(typeID, objectID string, created time.Time, name string, t domain.PropertyType, v any) []ObjectValue {
	return appendPropertyValues(nil, typeID, objectID, created, name, t, v)
}

func appendPropertyValues(out []ObjectValue, typeID, objectID string, created time.Time, name string, t domain.PropertyType, v any) []ObjectValue {
	if v == nil {
		return out
	}
	prop, at := PropKey(typeID, name), CreatedKey(created)
	row := func(part int16, k []byte) {
		key, full := CutKey(k)
		out = append(out, ObjectValue{ObjectID: objectID, Prop: prop, Part: part, Key: key, Full: full, Created: at})
	}
	k, ok := domain.EqualityKey(v)
	if !ok {
		return out
	}
	row(PartValue, k)
	if s, isStr := v.(string); isStr && k[0] == domain.KeyInstant && (t.Base == domain.TypeString || t.Base == domain.TypeMarking) {
		row(PartValue, append([]byte{domain.KeyInstantText}, s...))
	}
	if items, isArr := v.([]any); isArr && t.Base == domain.TypeArray {
		seen := map[string]bool{}
		for _, it := range items {
			ek, ok := domain.EqualityKey(it)
			if !ok || seen[string(ek)] {
				continue
			}
			seen[string(ek)] = true
			row(PartElement, ek)
		}
	}
	return out
}

// InsertObjectValues writes rows in statements of a few hundred.
func InsertObjectValues(ctx context.Context, tx *gorm.DB, rows []ObjectValue) error {
	if len(rows) == 0 {
		return nil
	}
	if err := tx.WithContext(ctx).CreateInBatches(rows, 500).Error; err != nil {
		return fmt.Errorf("write property-value index: %w", err)
	}
	return nil
}

// buildObjectValues indexes every existing object unless the index of
// this version was built: in batches of 1,000 objects, each its own
// transaction (no long lock on Postgres), logging progress.
func buildObjectValues(ctx context.Context, db *gorm.DB) error {
	db = db.Session(&gorm.Session{NewDB: true, Context: ctx})
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
	if err := db.Session(&gorm.Session{AllowGlobalUpdate: true}).Delete(&ObjectValue{}).Error; err != nil {
		return fmt.Errorf("clear property-value index: %w", err)
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
		for i := range objs {
			o := &objs[i]
			ps, ok := defs[o.ObjectTypeID]
			if !ok {
				if err := db.Where("object_type_id = ?", o.ObjectTypeID).Find(&ps).Error; err != nil {
					return fmt.Errorf("read properties of %s: %w", o.ObjectTypeID, err)
				}
				defs[o.ObjectTypeID] = ps
			}
			r, err := ObjectValues(o.ObjectTypeID, o.ID, o.CreatedAt, ps, o.Properties.V)
			if err != nil {
				return err
			}
			rows = append(rows, r...)
		}
		if err := db.Transaction(func(tx *gorm.DB) error { return InsertObjectValues(ctx, tx, rows) }); err != nil {
			return err
		}
		done += len(objs)
		last = objs[len(objs)-1].ID
		if done%50000 < len(objs) || done == int(total) {
			slog.Info("property-value index", "indexed", done, "of", total, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	if err := db.Create(&ObjectValueBuild{Version: ObjectValueVersion, BuiltAt: time.Now().UTC()}).Error; err != nil {
		return fmt.Errorf("record index build: %w", err)
	}
	return nil
}
