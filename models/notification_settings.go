package models

import (
	"reflect"
	"slices"
	"sync"
	"time"
)

// NotificationSettings are a user's choices for notifications: which
// channels they accept and their own destinations on the channels that
// post to one. The destinations are secrets (encrypted, never shown);
// this row names them.
type NotificationSettings struct {
	UserID string `gorm:"primaryKey;size:36" json:"-"`
	// Channels the user accepts; null: every channel.
	Channels JSON[[]string] `json:"channels"`
	// SlackSecret and TeamsSecret name the secrets holding the user's own
	// incoming-webhook URLs ("" = none). A column holding a channel's own
	// destination says which in its destination tag: Destination finds it
	// by that, so this row names channels only where it stores them.
	SlackSecret string    `gorm:"size:64" json:"-" destination:"slack"`
	TeamsSecret string    `gorm:"size:64" json:"-" destination:"teams"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Accepts reports whether the user takes notifications on channel (a
// user without settings takes every channel).
func (s *NotificationSettings) Accepts(channel string) bool {
	return s == nil || s.Channels.V == nil || slices.Contains(s.Channels.V, channel)
}

// Destination is the secret holding the user's own destination on
// channel ("" = none, or a channel without a column for one).
func (s *NotificationSettings) Destination(channel string) string {
	if f := s.destination(channel); f != nil {
		return *f
	}
	return ""
}

// SetDestination names the secret holding the user's own destination on
// channel ("" = none); it reports false when the row has no column for
// the channel.
func (s *NotificationSettings) SetDestination(channel, secret string) bool {
	f := s.destination(channel)
	if f != nil {
		*f = secret
	}
	return f != nil
}

// destinationColumns maps a channel to the index of the field tagged as
// holding its own destinations.
var destinationColumns = sync.OnceValue(func() map[string]int {
	t := reflect.TypeFor[NotificationSettings]()
	out := map[string]int{}
	for i := range t.NumField() {
		if ch := t.Field(i).Tag.Get("destination"); ch != "" {
			out[ch] = i
		}
	}
	return out
})

func (s *NotificationSettings) destination(channel string) *string {
	i, ok := destinationColumns()[channel]
	if s == nil || !ok {
		return nil
	}
	return reflect.ValueOf(s).Elem().Field(i).Addr().Interface().(*string)
}
