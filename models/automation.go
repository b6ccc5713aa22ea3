package models

import "time"

// automationModels are the automation definitions (issue 44).
var automationModels = []any{&Automation{}, &AutomationEvent{}}

// Automation is a stored automation definition: one trigger and one action
// type whose inputs are filled from the trigger's event. Its executions run
// as OwnerID, the user who created it.
type Automation struct {
	ID      string `gorm:"primaryKey;size:36"`
	Name    string `gorm:"size:200;not null;uniqueIndex:idx_automation_owner_name"`
	OwnerID string `gorm:"size:36;not null;uniqueIndex:idx_automation_owner_name"`
	// Paused automations fire nothing new.
	Paused bool `gorm:"not null;default:false"`
	// TriggerKind is "object" or "schedule"; Trigger holds its settings.
	TriggerKind string               `gorm:"size:16;not null"`
	Trigger     JSON[map[string]any] `gorm:"not null"`
	// ActionType is the action type's id.
	ActionType string `gorm:"size:36;not null;index"`
	// Parameters map each action input to a template over the event.
	Parameters JSON[map[string]string] `gorm:"not null"`
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// AutomationEvent is one object change waiting for the automations'
// dispatcher: the transactional outbox. It is written in the transaction
// that commits the change (so a crash loses or invents none), and Seq
// orders the events of one object.
type AutomationEvent struct {
	Seq          uint64 `gorm:"primaryKey;autoIncrement"`
	ExecutionID  string `gorm:"size:36;not null;index"`
	ObjectTypeID string `gorm:"size:36;not null"`
	ObjectID     string `gorm:"size:36;not null;index"`
	// Change is created, updated or deleted.
	Change string `gorm:"size:16;not null"`
	Before NumJSON[map[string]any]
	After  NumJSON[map[string]any]
	// Depth is how many automation firings led to the execution (0: a
	// person ran it); the dispatcher refuses chains past the limit.
	Depth     int `gorm:"not null;default:0"`
	CreatedAt time.Time
	// DispatchedAt is set once every matching automation's firing is
	// recorded; the dispatcher reads the events where it is null.
	DispatchedAt *time.Time `gorm:"index"`
}
