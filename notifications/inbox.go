// Package notifications is the in-app inbox: the one reader and marker of
// models.Notification rows for the API (/notifications) and the console
// (/ui/notifications), so the two answer alike; the in-app channel, InApp,
// writes the rows. Below it are the rest of notifications: render (the
// templates), recipients (who gets one), delivery (the message, its
// outcome and a remote delivery's progress across attempts), channels
// (e-mail, Slack, Teams) and senders (the SMTP and webhook transports).
// The engine's notify step calls them through engine.Channel.
package notifications

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
)

// Inbox reads and marks users' in-app notifications.
type Inbox struct {
	db  *gorm.DB
	now func() time.Time
}

// NewInbox returns the inbox over db.
func NewInbox(db *gorm.DB) *Inbox {
	return &Inbox{db: db, now: func() time.Time { return time.Now().UTC() }}
}

// List returns userID's notifications, newest first (ties by id), only
// the unread ones when unreadOnly, skipping offset and at most limit.
func (b *Inbox) List(ctx context.Context, userID string, unreadOnly bool, offset, limit int) ([]models.Notification, error) {
	q := b.db.WithContext(ctx).Where("user_id = ?", userID)
	if unreadOnly {
		q = q.Where("read_at IS NULL")
	}
	var rows []models.Notification
	if err := q.Order("created_at DESC, id").Offset(offset).Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list the notifications of %s: %w", userID, err)
	}
	return rows, nil
}

// MarkRead marks userID's notification id read. Marking it again keeps the
// time it was first read; a notification that is not userID's, or does
// not exist, is NotificationNotFound.
func (b *Inbox) MarkRead(ctx context.Context, userID, id string) error {
	now := b.now()
	db := b.db.WithContext(ctx)
	res := db.Model(&models.Notification{}).Where("id = ? AND user_id = ? AND read_at IS NULL", id, userID).Update("read_at", &now)
	if res.Error != nil {
		return fmt.Errorf("mark notification %s read: %w", id, res.Error)
	}
	if res.RowsAffected > 0 {
		return nil
	}
	var n int64
	if err := db.Model(&models.Notification{}).Where("id = ? AND user_id = ?", id, userID).Count(&n).Error; err != nil {
		return fmt.Errorf("look up notification %s: %w", id, err)
	}
	if n == 0 {
		return apperr.New(apperr.NotificationNotFound, "notification %q not found", id)
	}
	return nil
}

// Unread counts userID's unread notifications.
func (b *Inbox) Unread(ctx context.Context, userID string) (int64, error) {
	var n int64
	err := b.db.WithContext(ctx).Model(&models.Notification{}).
		Where("user_id = ? AND read_at IS NULL", userID).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count the unread notifications of %s: %w", userID, err)
	}
	return n, nil
}
