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
func (j JSON[T]) Value() (driver.Value, error) {
	b, err := json.Marshal(j.V)
	if err != nil {
		return nil, fmt.Errorf("encode json column: %w", err)
	}
	return string(b), nil
}

// Scan implements sql.Scanner.
func (j *JSON[T]) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		var zero T
		j.V = zero
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("scan json column: unsupported type %T", src)
	}
	if len(b) == 0 {
		var zero T
		j.V = zero
		return nil
	}
	return json.Unmarshal(b, &j.V)
}

// MarshalJSON makes the wrapper transparent in API bodies.
func (j JSON[T]) MarshalJSON() ([]byte, error) { return json.Marshal(j.V) }

// UnmarshalJSON makes the wrapper transparent in API bodies.
func (j *JSON[T]) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &j.V) }

// GormDataType keeps the column a plain text column on every dialect.
func (JSON[T]) GormDataType() string { return "text" }
