package models

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ontoflow/ontoflow/domain"
)

// ontologyModels are the ontology records: object types and their
// properties, objects, link types and links, action types, and the index
// that enforces unique property values.
var ontologyModels = []any{&ObjectType{}, &Property{}, &Object{}, &UniqueValue{},
	&LinkType{}, &Link{}, &ActionType{}}

// ObjectType is a kind of object of the ontology.
type ObjectType struct {
	ID          string `gorm:"primaryKey;size:36" json:"id"`
	Name        string `gorm:"uniqueIndex;size:128;not null" json:"name"`
	DisplayName string `gorm:"size:256" json:"display_name"`
	Description string `gorm:"type:text" json:"description"`
	// PrimaryKey names the property that identifies objects to people
	// ("" = none); that property is required and unique.
	PrimaryKey string    `gorm:"size:64" json:"primary_key,omitempty"`
	Icon       string    `gorm:"size:128" json:"icon,omitempty"`
	Color      string    `gorm:"size:32" json:"color,omitempty"`
	Owner      string    `gorm:"size:36" json:"owner"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Property is one property of an object type.
type Property struct {
	ID           string                    `gorm:"primaryKey;size:36" json:"-"`
	ObjectTypeID string                    `gorm:"size:36;not null;uniqueIndex:idx_property_name,priority:1" json:"object_type_id"`
	Name         string                    `gorm:"size:64;not null;uniqueIndex:idx_property_name,priority:2" json:"name"`
	DisplayName  string                    `gorm:"size:256" json:"display_name"`
	Description  string                    `gorm:"type:text" json:"description"`
	Type         JSON[domain.PropertyType] `json:"type"`
	Required     bool                      `gorm:"not null;default:false" json:"required"`
	Unique       bool                      `gorm:"not null;default:false" json:"unique"`
	// DefaultValue is used when an object is created without the property
	// (null = no default).
	DefaultValue NumJSON[any]                   `json:"default_value"`
	InlineEdit   JSON[*domain.InlineEditConfig] `json:"inline_edit_config"`
	Position     int                            `gorm:"not null;default:0" json:"-"`
	// IndexKey names the property in the property-value index (PropKey):
	// an even number allocated from property_keys when the property is
	// created (never reused, kept for its life), 4 bytes in every index
	// row instead of a hash of 8. 0 until allocated (AssignIndexKey; an
	// upgrade assigns the properties of older versions).
	IndexKey  int32     `gorm:"not null;default:0" json:"-"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Object is an instance of an object type.
type Object struct {
	ID           string                  `gorm:"primaryKey;size:36;index:idx_object_updated,priority:3" json:"id"`
	ObjectTypeID string                  `gorm:"size:36;not null;index:idx_object_type,priority:1;index:idx_object_updated,priority:1" json:"object_type_id"`
	Properties   NumJSON[map[string]any] `json:"properties"`
	Marking      string                  `gorm:"size:64;not null" json:"marking"`
	CreatedBy    string                  `gorm:"size:36" json:"created_by"`
	Organization string                  `gorm:"size:128;index" json:"organization"` // at most MaxOrganizationLen
	CreatedAt    time.Time               `gorm:"index:idx_object_type,priority:2" json:"created_at"`
	// idx_object_updated serves the listing's order_by=updated_at.
	UpdatedAt time.Time `gorm:"index:idx_object_updated,priority:2" json:"updated_at"`
}

// UniqueValue is one value of a unique property. Its primary key makes the
// database refuse a second object with the same value, on every dialect
// and under concurrent writers, without indexing inside JSON columns.
type UniqueValue struct {
	ObjectTypeID string `gorm:"primaryKey;size:36"`
	Property     string `gorm:"primaryKey;size:64"`
	// ValueKey is the canonical JSON of the value (a SHA-256 when long).
	ValueKey string `gorm:"primaryKey;size:128"`
	ObjectID string `gorm:"size:36;not null;index"`
}

// LinkType relates objects of a source type to objects of a target type.
type LinkType struct {
	ID                 string    `gorm:"primaryKey;size:36" json:"id"`
	Name               string    `gorm:"uniqueIndex;size:128;not null" json:"name"`
	DisplayName        string    `gorm:"size:256" json:"display_name"`
	Description        string    `gorm:"type:text" json:"description"`
	SourceObjectTypeID string    `gorm:"size:36;not null;index" json:"source_object_type_id"`
	TargetObjectTypeID string    `gorm:"size:36;not null;index" json:"target_object_type_id"`
	Cardinality        string    `gorm:"size:16;not null" json:"cardinality"`
	Owner              string    `gorm:"size:36" json:"owner"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

// Link is one link between two objects. SourceSlot and TargetSlot enforce
// cardinality in the database: on a side that may hold only one link of
// the type the slot is the object id, otherwise the link id, and each slot
// is unique per link type.
type Link struct {
	// idx_link_source and idx_link_target serve an object's links in
	// creation order, a keyset page each one range of an index (and every
	// lookup by one end: the object's links on delete and restore).
	ID         string                  `gorm:"primaryKey;size:36;index:idx_link_source,priority:3;index:idx_link_target,priority:3" json:"id"`
	LinkTypeID string                  `gorm:"size:36;not null;uniqueIndex:idx_link_pair,priority:1;uniqueIndex:idx_link_source_slot,priority:1;uniqueIndex:idx_link_target_slot,priority:1" json:"link_type_id"`
	SourceID   string                  `gorm:"size:36;not null;uniqueIndex:idx_link_pair,priority:2;index:idx_link_source,priority:1" json:"source_object_id"`
	TargetID   string                  `gorm:"size:36;not null;uniqueIndex:idx_link_pair,priority:3;index:idx_link_target,priority:1" json:"target_object_id"`
	SourceSlot string                  `gorm:"size:36;not null;uniqueIndex:idx_link_source_slot,priority:2" json:"-"`
	TargetSlot string                  `gorm:"size:36;not null;uniqueIndex:idx_link_target_slot,priority:2" json:"-"`
	Properties NumJSON[map[string]any] `json:"properties"`
	CreatedBy  string                  `gorm:"size:36" json:"created_by"`
	CreatedAt  time.Time               `gorm:"index:idx_link_source,priority:2;index:idx_link_target,priority:2" json:"created_at"`
}

// ActionType is a stored action type definition. Version starts at 1 and
// grows by one with every update; executions record it.
type ActionType struct {
	ID            string                       `gorm:"primaryKey;size:36"`
	Name          string                       `gorm:"uniqueIndex;size:128;not null"`
	DisplayName   string                       `gorm:"size:256"`
	Description   string                       `gorm:"type:text"`
	ObjectTypeID  string                       `gorm:"size:36;index"`
	OperationKind string                       `gorm:"size:32;not null"`
	Inputs        NumJSON[[]domain.InputField] `gorm:"column:inputs"`
	FormSchema    NumJSON[domain.FormSchema]
	Config        NumJSON[domain.ActionConfig]
	Policy        NumJSON[domain.Policy]
	Version       int    `gorm:"not null;default:1"`
	Owner         string `gorm:"size:36"`
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// NumJSON is JSON that decodes numbers as json.Number, so integers beyond
// 2^53 and exact decimals survive a round trip through the database (the
// property type system checks json.Number exactly).
type NumJSON[T any] struct{ V T }

// NewNumJSON wraps v.
func NewNumJSON[T any](v T) NumJSON[T] { return NumJSON[T]{V: v} }

// Value implements driver.Valuer.
func (j NumJSON[T]) Value() (driver.Value, error) { return columnValue(j.V) }

// Scan implements sql.Scanner.
func (j *NumJSON[T]) Scan(src any) error {
	b, err := columnText(src)
	if err != nil {
		return err
	}
	var zero T
	j.V = zero
	if len(b) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&j.V); err != nil {
		return fmt.Errorf("scan json column: %w", err)
	}
	return nil
}

// MarshalJSON makes the wrapper transparent in API bodies.
func (j NumJSON[T]) MarshalJSON() ([]byte, error) { return json.Marshal(j.V) }

// UnmarshalJSON makes the wrapper transparent in API bodies.
func (j *NumJSON[T]) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(&j.V)
}

// GormDataType keeps the column a plain text column on every dialect.
func (NumJSON[T]) GormDataType() string { return "text" }
