package domain

// Object is an object as the action engine and the form conditions see it:
// the stored record without its bookkeeping.
type Object struct {
	ID           string         `json:"id"`
	ObjectTypeID string         `json:"object_type_id"`
	Properties   map[string]any `json:"properties"`
	Marking      string         `json:"marking"`
	CreatedBy    string         `json:"created_by"`
	Organization string         `json:"organization"`
}

// ActionType is a stored action type: its definition plus the identity and
// version an execution records.
type ActionType struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	ActionDefinition
}
