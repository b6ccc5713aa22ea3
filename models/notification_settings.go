package models

import (
	"slices"
	"time"
)

// NotificationSettings are a user's choices for notifications: which
// channels they accept and their own Slack and Teams destinations. The
// destinations are secrets (encrypted, never shown); this row names them.
type NotificationSettings struct {
	UserID string `gorm:"primaryKey;size:36" json:"-"`
	// Channels the user accepts; null: every channel.
	Channels JSON[[]string] `json:"channels"`
	// SlackSecret and TeamsSecret name the secrets holding the user's own
	// incoming-webhook URLs ("" = none).
	SlackSecret string    `gorm:"size:64" json:"-"`
	TeamsSecret string    `gorm:"size:64" json:"-"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Accepts reports whether the user takes notifications on channel (a
// user without settings takes every channel).
func (s *NotificationSettings) Accepts(channel string) bool {
	return s == nil || s.Channels.V == nil || slices.Contains(s.Channels.V, channel)
}

// Destination is the secret holding the user's own destination on a chat
// channel ("" = none).
func (s *NotificationSettings) Destination(channel string) string {
	switch {
	case s == nil:
		return ""
	case channel == "slack":
		return s.SlackSecret
	case channel == "teams":
		return s.TeamsSecret
	}
	return ""
}
