package models

import (
	"time"

	"github.com/ontoflow/ontoflow/domain"
)

// actionModels are the action engine's records.
var actionModels = []any{&Execution{}, &Notification{}}

// Execution statuses.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	// StatusPartial closes a batch in which some items failed.
	StatusPartial = "partially_succeeded"
)

// Execution kinds (also the OntoflowKind search attribute).
const (
	KindExecute    = "execute"
	KindBatch      = "batch"
	KindBatchItem  = "batch-item"
	KindInlineEdit = "inline-edit"
	KindWhatIf     = "what-if"
	KindRevert     = "revert"
)

// Execution is one row of the action log: the request (written by the API
// before the workflow starts, so the workflow input is only its id), and
// the outcome (written by the engine). The operation's edits and the
// status change to succeeded commit in one transaction, guarded by the
// status, so a retried activity never applies edits twice.
//
// The console's Insights page (package insights) reads the rollups
// (ExecutionRollup, ExecutionTotal) and two indexes: idx_exec_window
// (created_at, action_type_id, status, error_code, actor_id, id) finds
// the executions of the part of an hour a window starts in, and the
// partial idx_exec_notified (notified_at, actor_id) the latest
// deliveries. actor_id sits in each so that the read rule (one's own
// executions without the audit permission) filters in the index.
// idx_exec_action_time (action_type_id, created_at, actor_id,
// finished_at) sampled an action's latest durations before the rollups
// held histograms; Insights no longer reads it.
type Execution struct {
	ID             string                      `gorm:"primaryKey;size:36;index:idx_exec_window,priority:6" json:"id"`
	Kind           string                      `gorm:"size:16;index;not null" json:"kind"`
	WorkflowID     string                      `gorm:"size:300" json:"workflow_id"`
	RunID          string                      `gorm:"size:64" json:"run_id,omitempty"`
	ActionTypeID   string                      `gorm:"size:36;index;not null;index:idx_exec_action_time,priority:1;index:idx_exec_window,priority:2" json:"action_type_id"`
	ActionTypeName string                      `gorm:"size:128;not null" json:"action_type_name"`
	ActionVersion  int                         `gorm:"not null;default:0" json:"action_type_version"`
	BatchID        *string                     `gorm:"size:36;index:idx_exec_batch,priority:1;index:idx_exec_batch_status,priority:1" json:"batch_id,omitempty"`
	BatchIndex     int                         `gorm:"index:idx_exec_batch,priority:2;not null;default:0" json:"batch_index,omitempty"`
	ActorID        string                      `gorm:"size:36;index;not null;uniqueIndex:idx_exec_idem,priority:1;index:idx_exec_window,priority:5;index:idx_exec_action_time,priority:3;index:idx_exec_notified,priority:2" json:"actor_id"`
	ActorName      string                      `gorm:"size:128" json:"actor"`
	ActorGuest     bool                        `gorm:"not null;default:false" json:"actor_guest,omitempty"`
	TargetObjectID string                      `gorm:"size:36;index" json:"target_object_id,omitempty"`
	Parameters     NumJSON[map[string]any]     `json:"parameters"`
	Justification  string                      `gorm:"type:text" json:"justification,omitempty"`
	Status         string                      `gorm:"size:32;index;index:idx_exec_batch_status,priority:2;index:idx_exec_window,priority:3;not null" json:"status"`
	ErrorCode      string                      `gorm:"size:64;index:idx_exec_window,priority:4" json:"error_code,omitempty"`
	ErrorMessage   string                      `gorm:"type:text" json:"error_message,omitempty"`
	ErrorDetails   JSON[any]                   `json:"error_details,omitempty"`
	Edits          NumJSON[[]Edit]             `json:"edits"`
	Result         JSON[map[string]any]        `json:"operation_result,omitempty"`
	Notifications  JSON[[]NotificationOutcome] `json:"notifications"`
	NotifiedAt     *time.Time                  `gorm:"index:idx_exec_notified,priority:1,where:notified_at IS NOT NULL" json:"notified_at,omitempty"`
	// IdempotencyKey is unique per actor; RequestHash detects a reused key
	// with a different body.
	// The partial index finds a what-if step's real execution by its key
	// whoever ran it (see BranchApplyKeyPrefix).
	IdempotencyKey *string `gorm:"size:255;uniqueIndex:idx_exec_idem,priority:2;index:idx_exec_step_key,where:idempotency_key LIKE 'branch-apply:%'" json:"idempotency_key,omitempty"`
	RequestHash    string  `gorm:"size:64" json:"-"`
	TotalItems     int     `gorm:"not null;default:0" json:"total_items,omitempty"`
	// RevertOf (on a revert) and RevertedBy (on the execution it undid)
	// link the two both ways.
	RevertOf   *string `gorm:"size:36;index" json:"revert_of,omitempty"`
	RevertedBy *string `gorm:"size:36" json:"reverted_by,omitempty"`
	// BranchID is the what-if branch a what-if execution ran on.
	BranchID   *string    `gorm:"size:36;index" json:"branch_id,omitempty"`
	CreatedAt  time.Time  `gorm:"index;index:idx_exec_window,priority:1;index:idx_exec_action_time,priority:2" json:"created_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `gorm:"index:idx_exec_action_time,priority:4" json:"finished_at,omitempty"`
	// TraceID is the OpenTelemetry trace of the request that created the
	// execution (empty with tracing off, and on rows written before it
	// was kept): it leads from the record to the trace, as the workflow
	// id leads to the Temporal history.
	TraceID string `gorm:"size:32;not null;default:''" json:"trace_id,omitempty"`
	// AutomationID is the automation that started the execution (nil: a
	// person did); AutomationDepth is how many firings led to it (its
	// lineage), which the events it causes carry on, so a chain of
	// automations stops at --automation-max-depth.
	AutomationID    *string `gorm:"size:36" json:"automation_id,omitempty"`
	AutomationDepth int     `gorm:"not null;default:0" json:"automation_depth,omitempty"`
	// Redacted is set (never stored) when the reader may not read the
	// execution's objects and its object data were blanked
	// (ontology.RedactExecutions).
	Redacted bool `gorm:"-" json:"redacted,omitempty"`
}

// Ops of an edit: the built-in operation kinds name their edits after
// themselves; delete_link appears only as the inverse of create_link.
const (
	EditUpdateObject = "update_object"
	EditCreateObject = "create_object"
	EditDeleteObject = "delete_object"
	EditCreateLink   = "create_link"
	EditDeleteLink   = "delete_link"
)

// Edit is one change an operation made (or, in a preview, would make). It
// holds what undoing it needs (an operation kind's Invert turns it into
// the inverse edits):
//
//   - update_object: Before and After of each touched property (a nil
//     Before: the property was absent), and the object's updated_at the
//     edit saw (UpdatedAtBefore) and left (UpdatedAtAfter);
//   - create_object: ObjectID, After, Marking, Organization, CreatedBy and
//     UpdatedAtAfter;
//   - delete_object: Before (every property), Marking, Organization,
//     CreatedBy, CreatedAt, UpdatedAtBefore and every link removed with it
//     (Links);
//   - create_link / delete_link: LinkID, LinkTypeID and the ends (and, for
//     a link recreated by an inverse, After as its properties and
//     CreatedBy/CreatedAt).
type Edit struct {
	Op           string         `json:"op"`
	ObjectTypeID string         `json:"object_type_id,omitempty"`
	ObjectID     string         `json:"object_id,omitempty"`
	LinkTypeID   string         `json:"link_type_id,omitempty"`
	LinkID       string         `json:"link_id,omitempty"`
	SourceID     string         `json:"source_object_id,omitempty"`
	TargetID     string         `json:"target_object_id,omitempty"`
	Before       map[string]any `json:"before,omitempty"`
	After        map[string]any `json:"after,omitempty"`

	Marking         string     `json:"marking,omitempty"`
	Organization    string     `json:"organization,omitempty"`
	CreatedBy       string     `json:"created_by,omitempty"`
	CreatedAt       *time.Time `json:"created_at,omitempty"`
	UpdatedAtBefore *time.Time `json:"updated_at_before,omitempty"`
	UpdatedAtAfter  *time.Time `json:"updated_at_after,omitempty"`
	Links           []EditLink `json:"links,omitempty"`
}

// EditLink is a link removed with a deleted object, as recreating it
// needs it.
type EditLink struct {
	ID         string         `json:"id"`
	LinkTypeID string         `json:"link_type_id"`
	SourceID   string         `json:"source_object_id"`
	TargetID   string         `json:"target_object_id"`
	Properties map[string]any `json:"properties,omitempty"`
	CreatedBy  string         `json:"created_by,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
}

// NotificationOutcome records the delivery of a side effect on one
// channel. Channels that leave the process (e-mail, Slack, Teams) also
// record each recipient's outcome: one address may bounce while the
// others are delivered.
type NotificationOutcome struct {
	Index      int                `json:"index"`
	Channel    string             `json:"channel"`
	Recipients int                `json:"recipients"`
	Status     string             `json:"status"` // delivered, failed, skipped
	Error      string             `json:"error,omitempty"`
	Deliveries []RecipientOutcome `json:"deliveries,omitempty"`
}

// RecipientOutcome is the delivery of one side effect to one recipient.
// It names the recipient by id only: the execution's reader need not
// learn who a broadcast reached by name.
type RecipientOutcome struct {
	RecipientID string `json:"recipient_id"`
	Status      string `json:"status"` // delivered, failed, skipped
	Error       string `json:"error,omitempty"`
}

// Notification is an in-app notification for one recipient.
type Notification struct {
	ID           string               `gorm:"primaryKey;size:36" json:"id"`
	UserID       string               `gorm:"size:36;index:idx_notif_user,priority:1;not null" json:"user_id"`
	ExecutionID  string               `gorm:"size:36;index" json:"execution_id"`
	ActionTypeID string               `gorm:"size:36" json:"action_type_id"`
	Title        string               `gorm:"type:text" json:"title"`
	Body         string               `gorm:"type:text" json:"body"`
	Severity     string               `gorm:"size:32" json:"severity,omitempty"`
	Category     string               `gorm:"size:64" json:"category,omitempty"`
	Metadata     JSON[map[string]any] `json:"metadata,omitempty"`
	ReadAt       *time.Time           `json:"read_at,omitempty"`
	CreatedAt    time.Time            `gorm:"index:idx_notif_user,priority:2" json:"created_at"`
}

// CreatedObject is the object a create_object edit describes (as the
// inverse of a deletion records it): the same id, properties, marking,
// organization, creator and times. Revert and branch replay recreate it.
func (ed Edit) CreatedObject() domain.Object {
	o := domain.Object{ID: ed.ObjectID, ObjectTypeID: ed.ObjectTypeID, Properties: ed.After, Marking: ed.Marking,
		Organization: ed.Organization, CreatedBy: ed.CreatedBy}
	if ed.CreatedAt != nil {
		o.CreatedAt = *ed.CreatedAt
	}
	if ed.UpdatedAtAfter != nil {
		o.UpdatedAt = *ed.UpdatedAtAfter
	}
	return o
}

// CreatedLink is the link a create_link edit describes, same id.
func (ed Edit) CreatedLink() domain.Link {
	l := domain.Link{ID: ed.LinkID, LinkTypeID: ed.LinkTypeID, SourceID: ed.SourceID, TargetID: ed.TargetID,
		Properties: ed.After, CreatedBy: ed.CreatedBy}
	if ed.CreatedAt != nil {
		l.CreatedAt = *ed.CreatedAt
	}
	return l
}
