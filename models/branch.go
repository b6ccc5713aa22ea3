package models

import "time"

// branchModels are the what-if branches: a branch stores only what was
// stacked on it — each what-if execution and the edits it recorded — never
// a copy of the ontology (Foundry's scenarios are forks holding only
// edits). Reading a branch replays its edits over the ontology as it is
// now, inside a transaction that is rolled back.
var branchModels = []any{&Branch{}, &BranchStep{}}

// Branch statuses.
const (
	BranchOpen     = "open"
	BranchApplying = "applying"
	BranchApplied  = "applied"
)

// BranchApplyKeyPrefix starts the Idempotency-Key of the real execution
// that applying a branch runs for a step (indexed: idx_exec_step_key).
const BranchApplyKeyPrefix = "branch-apply:"

// Branch is a what-if branch, private to its owner.
type Branch struct {
	ID        string `gorm:"primaryKey;size:36" json:"id"`
	OwnerID   string `gorm:"size:36;index;not null" json:"owner_id"`
	OwnerName string `gorm:"size:128" json:"owner"`
	Status    string `gorm:"size:16;not null" json:"status"`
	// Steps counts the stacked executions; a what-if records its step at
	// position Steps+1 only if no other step was stacked while it ran.
	Steps int `gorm:"not null;default:0" json:"steps"`
	// Applied counts the steps apply has run for real, in order; IDMap maps
	// the ids of objects created in the branch to the ids their real
	// creation got, for the later steps that name them.
	Applied   int                     `gorm:"not null;default:0" json:"applied"`
	IDMap     JSON[map[string]string] `json:"-"`
	CreatedAt time.Time               `gorm:"index" json:"created_at"`
	UpdatedAt time.Time               `json:"updated_at"`
	ExpiresAt time.Time               `gorm:"index" json:"expires_at"`
}

// BranchStep is one execution stacked on a branch: the request (to run it
// for real on apply), the edits it recorded in the branch (replayed by
// every later read), the objects it read from the main ontology with the
// update time it saw (apply refuses when one changed since), and the
// preview shown to the user (before/after, notifications, effect).
type BranchStep struct {
	ID             string                  `gorm:"primaryKey;size:36" json:"id"`
	BranchID       string                  `gorm:"size:36;not null;uniqueIndex:idx_branch_step,priority:1" json:"branch_id"`
	Position       int                     `gorm:"not null;uniqueIndex:idx_branch_step,priority:2" json:"position"`
	ExecutionID    string                  `gorm:"size:36;not null;index" json:"execution_id"`
	ActionTypeID   string                  `gorm:"size:36;not null;index" json:"action_type_id"`
	ActionTypeName string                  `gorm:"size:128" json:"action_type_name"`
	TargetObjectID string                  `gorm:"size:36;index" json:"target_object_id,omitempty"`
	Parameters     NumJSON[map[string]any] `json:"parameters"`
	Justification  string                  `gorm:"type:text" json:"justification,omitempty"`
	Edits          NumJSON[[]Edit]         `json:"edits"`
	Reads          JSON[[]BranchRead]      `json:"reads"`
	Preview        NumJSON[map[string]any] `json:"preview"`
	// AppliedExecutionID is the real execution apply ran for this step.
	AppliedExecutionID string    `gorm:"size:36" json:"applied_execution_id,omitempty"`
	CreatedAt          time.Time `json:"created_at"`
	// Redacted is set (never stored) when the reader may not read an
	// object the step names and its data were blanked.
	Redacted bool `gorm:"-" json:"redacted,omitempty"`
}

// BranchRead is an object a step read from the main ontology and the
// update time it had then (nil: it did not exist there).
type BranchRead struct {
	ObjectID  string     `json:"object_id"`
	UpdatedAt *time.Time `json:"updated_at"`
}
