package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// A Channel delivers the notification side effects of successful
// executions on one medium (in-app, e-mail, Slack, Teams). Channels are
// chosen at assembly (Deps.Channels); a side effect naming a channel this
// process has none for is recorded skipped. The workflow runs one delivery
// step per channel an action uses, each recording its own outcomes on the
// execution; a delivery never fails the action, which has committed.
//
// A channel implements exactly one of TxChannel (its delivery is a write
// to the database, committed with the record of its outcome: exactly
// once) and RemoteChannel (its delivery leaves the process: it runs as a
// regular Temporal activity with bounded retries, outside any
// transaction, and is recorded after; at least once).
type Channel interface {
	Name() string
}

// TxChannel delivers inside the transaction that records the outcome:
// an error rolls both back and the step tries again.
type TxChannel interface {
	Channel
	DeliverTx(ctx context.Context, tx *gorm.DB, msgs []Message) error
}

// RemoteChannel delivers outside any transaction.
type RemoteChannel interface {
	Channel
	// Deliver sends msgs and calls report once per message (by its index
	// in msgs) as soon as its result is known, so the step keeps its
	// progress even when its time runs out midway. A Result's Retryable
	// asks the step to try that delivery again (up to the step's
	// attempts) before recording it failed. Deliver stops when ctx ends;
	// a message it did not report is tried again. report is called from
	// Deliver's own goroutine, before Deliver returns.
	Deliver(ctx context.Context, msgs []Message, report func(i int, r Result))
}

// Message is one rendered notification for one recipient: title, body and
// metadata rendered with what that recipient may read.
type Message struct {
	SideEffect   int // index in the action's notification_side_effects
	Effect       *domain.NotificationSideEffect
	Recipient    *models.User
	ExecutionID  string
	ActionTypeID string
	// ActionVersion is the version of the action type rendered: with
	// SideEffect and Recipient it names the message across attempts.
	ActionVersion int
	Title, Body   string
	Metadata      map[string]any
	// Settings are the recipient's notification settings (nil: none
	// stored), e.g. their own chat destinations.
	Settings *models.NotificationSettings
}

// Result is the outcome of delivering one message.
type Result struct {
	Err       error
	Retryable bool
	// Skipped says the message was not sent for a reason that is not a
	// failure (Err holds it): a recipient without an address.
	Skipped bool
	// RetryAfter is the wait the server asked for before another try
	// (Retry-After), 0 when none.
	RetryAfter time.Duration
}

// inApp is the in-app channel: a notification row per recipient, read
// through /api/v1/notifications.
type inApp struct{}

// InApp returns the in-app channel.
func InApp() Channel { return inApp{} }

func (inApp) Name() string { return "in_app" }

func (inApp) DeliverTx(ctx context.Context, tx *gorm.DB, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	notes := make([]models.Notification, len(msgs))
	for i, m := range msgs {
		notes[i] = models.Notification{ID: uuid.NewString(), UserID: m.Recipient.ID, ExecutionID: m.ExecutionID,
			ActionTypeID: m.ActionTypeID, Title: m.Title, Body: m.Body, Severity: m.Effect.EffectiveSeverity(),
			Category: m.Effect.Category, Metadata: models.NewJSON(m.Metadata)}
	}
	if err := tx.CreateInBatches(notes, 200).Error; err != nil {
		return fmt.Errorf("store in-app notifications: %w", err)
	}
	return nil
}
