package notifications

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications/delivery"
)

// InApp is the in-app channel (engine.TxChannel): a notification row per
// recipient, written in the delivery step's transaction and read through
// the Inbox. It lives with the inbox because the two own the same rows.
type InApp struct{}

// Name implements engine.Channel.
func (InApp) Name() string { return "in_app" }

// DeliverTx implements engine.TxChannel.
func (InApp) DeliverTx(ctx context.Context, unit models.Tx, msgs []delivery.Message) error {
	tx := unit.Gorm()
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
