package models

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// JSON stores any JSON-encodable value in a text column, so the same schema
// works on SQLite and Postgres without a dialect-specific json type.
type JSON[T any] struct{ V T }

// NewJSON wraps v.
func NewJSON[T any](v T) JSON[T] { return JSON[T]{V: v} }

// Value implements driver.Valuer.
func (j JSON[T]) Value() (driver.Value, error) { return columnValue(j.V) }

// Scan implements sql.Scanner.
func (j *JSON[T]) Scan(src any) error {
	b, err := columnText(src)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		var zero T
		j.V = zero
		return nil
	}
	return json.Unmarshal(b, &j.V)
}

// columnValue is v encoded for a JSON text column (JSON's and NumJSON's
// Value).
func columnValue(v any) (driver.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode json column: %w", err)
	}
	return string(b), nil
}

// columnText is the text a JSON column's Scan receives (nil for NULL).
func columnText(src any) ([]byte, error) {
	switch v := src.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case []byte:
		return v, nil
	}
	return nil, fmt.Errorf("scan json column: unsupported type %T", src)
}

// MarshalJSON makes the wrapper transparent in API bodies.
func (j JSON[T]) MarshalJSON() ([]byte, error) { return json.Marshal(j.V) }

// UnmarshalJSON makes the wrapper transparent in API bodies.
func (j *JSON[T]) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &j.V) }

// GormDataType keeps the column a plain text column on every dialect.
func (JSON[T]) GormDataType() string { return "text" }
