package models

import "time"

// automationModels are the automation definitions (issue 44).
var automationModels = []any{&Automation{}}

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
