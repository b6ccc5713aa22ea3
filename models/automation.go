package models

import "time"

// automationModels are the automation definitions (issue 44).
var automationModels = []any{&Automation{}, &AutomationEvent{}, &AutomationFiring{}}

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

// Sources of automation events.
const (
	EventSourceObject = "object"
	EventSourceFile   = "file"
)

// AutomationEvent is one change waiting for the automations' dispatcher:
// the transactional outbox. It is written in the transaction that commits
// the change (so a crash loses or invents none), and Seq orders the
// events of one Subject.
type AutomationEvent struct {
	Seq uint64 `gorm:"primaryKey;autoIncrement"`
	// Source is what changed: an object (EventSourceObject) or a WebDAV
	// file (EventSourceFile).
	Source string `gorm:"size:16;not null;default:'object'"`
	// Subject is what the ordering is per: the object's id, or
	// "<user id>:<path>" for a file. The dispatcher starts the events of
	// one subject in Seq order.
	Subject     string `gorm:"size:400;not null;default:'';index:idx_automation_event_subject,priority:1"`
	ExecutionID string `gorm:"size:36;not null;index"`
	// ObjectTypeID and ObjectID name the object of an object event.
	ObjectTypeID string `gorm:"size:36;not null"`
	ObjectID     string `gorm:"size:36;not null;index"`
	// Change is created, updated or deleted (objects); files add their
	// own (overwritten, moved...).
	Change string `gorm:"size:16;not null"`
	Before NumJSON[map[string]any]
	After  NumJSON[map[string]any]
	// UserID, Path, Size, SHA256 and ETag are a file event's tree owner
	// and the version that fired it (empty for objects).
	UserID string `gorm:"size:36;not null;default:''"`
	Path   string `gorm:"type:text;not null;default:''"`
	Size   int64  `gorm:"not null;default:0"`
	SHA256 string `gorm:"column:sha256;size:64;not null;default:''"`
	ETag   string `gorm:"column:etag;size:128;not null;default:''"`
	// Depth is how many automation firings led to the execution (0: a
	// person ran it); the dispatcher refuses chains past the limit.
	Depth     int `gorm:"not null;default:0"`
	CreatedAt time.Time
	// DispatchedAt is set once every matching automation's firing is
	// recorded; the dispatcher reads the events where it is null.
	DispatchedAt *time.Time `gorm:"index;index:idx_automation_event_subject,priority:2"`
}

// Firing statuses.
const (
	FiringStarted = "started"
	FiringSkipped = "skipped"
	FiringFailed  = "failed"
)

// AutomationFiring is what one event (or one scheduled time) did for one
// automation: the execution it started, or why it started none. Key is
// unique per automation ("event:<seq>", "schedule:<workflow id>"), so a
// dispatcher that runs twice over the same event records it once.
type AutomationFiring struct {
	ID           uint64 `gorm:"primaryKey;autoIncrement"`
	AutomationID string `gorm:"size:36;not null;uniqueIndex:idx_automation_firing_key,priority:1;index:idx_automation_firing_time,priority:1"`
	Key          string `gorm:"column:firing_key;size:300;not null;uniqueIndex:idx_automation_firing_key,priority:2"`
	// EventSeq is the event's seq (0 for a schedule's firing).
	EventSeq uint64 `gorm:"not null;default:0"`
	// Status is started, skipped or failed; Reason says why for the last
	// two.
	Status      string  `gorm:"size:16;not null"`
	Reason      string  `gorm:"type:text;not null;default:''"`
	ExecutionID *string `gorm:"size:36;index"`
	// Depth is the started execution's lineage depth.
	Depth     int       `gorm:"not null;default:0"`
	CreatedAt time.Time `gorm:"index:idx_automation_firing_time,priority:2"`
}
