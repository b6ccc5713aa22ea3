package domain

import "time"

// Object is an object as the action engine and the form conditions see it:
// the stored record without its bookkeeping.
type Object struct {
	ID           string         `json:"id"`
	ObjectTypeID string         `json:"object_type_id"`
	Properties   map[string]any `json:"properties"`
	Marking      string         `json:"marking"`
	CreatedBy    string         `json:"created_by"`
	Organization string         `json:"organization"`
	// CreatedAt and UpdatedAt are the store's timestamps; an edit records
	// UpdatedAt so that undoing it can tell whether the object changed
	// since.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ActionType is a stored action type: its definition plus the identity and
// version an execution records.
type ActionType struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	ActionDefinition
}

// Link is a link as the action engine sees it: what recreating it needs.
type Link struct {
	ID         string         `json:"id"`
	LinkTypeID string         `json:"link_type_id"`
	SourceID   string         `json:"source_object_id"`
	TargetID   string         `json:"target_object_id"`
	Properties map[string]any `json:"properties,omitempty"`
	CreatedBy  string         `json:"created_by,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
}
