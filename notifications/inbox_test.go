package notifications_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications"
)

// The inbox the API and the console share: newest first, only the user's
// own, the unread filter, pages; marking read keeps the first read time,
// and another user's or a missing notification is NotificationNotFound
// (the console used to ignore it and the API to move the read time).
func TestInbox(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		ann, bob := "00000000-0000-4000-8000-00000000a001", "00000000-0000-4000-8000-00000000b001"
		for _, u := range []models.User{{ID: ann, Username: "ann", PasswordHash: "x"}, {ID: bob, Username: "bob", PasswordHash: "x"}} {
			if err := db.Create(&u).Error; err != nil {
				t.Fatal(err)
			}
		}
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, n := range []models.Notification{
			{ID: "00000000-0000-4000-8000-0000000000c1", UserID: ann, Title: "old", CreatedAt: base},
			{ID: "00000000-0000-4000-8000-0000000000c2", UserID: ann, Title: "new", CreatedAt: base.Add(time.Hour)},
			{ID: "00000000-0000-4000-8000-0000000000c3", UserID: bob, Title: "bob's", CreatedAt: base},
		} {
			if err := db.Create(&n).Error; err != nil {
				t.Fatal(err)
			}
		}
		in := notifications.NewInbox(db)
		titles := func(unread bool, offset, limit int) []string {
			t.Helper()
			rows, err := in.List(ctx, ann, unread, offset, limit)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range rows {
				out = append(out, r.Title)
			}
			return out
		}
		if got := titles(false, 0, 10); len(got) != 2 || got[0] != "new" || got[1] != "old" {
			t.Fatalf("ann's inbox = %v, want [new old]", got)
		}
		if got := titles(false, 1, 1); len(got) != 1 || got[0] != "old" {
			t.Fatalf("second page of one = %v, want [old]", got)
		}
		rows, _ := in.List(ctx, ann, false, 0, 10)
		newID := rows[0].ID
		if err := in.MarkRead(ctx, ann, newID); err != nil {
			t.Fatal(err)
		}
		if got := titles(true, 0, 10); len(got) != 1 || got[0] != "old" {
			t.Fatalf("unread after marking new = %v, want [old]", got)
		}
		var first models.Notification
		db.First(&first, "id = ?", newID)
		time.Sleep(10 * time.Millisecond)
		if err := in.MarkRead(ctx, ann, newID); err != nil {
			t.Fatalf("marking read again: %v", err)
		}
		var again models.Notification
		db.First(&again, "id = ?", newID)
		if first.ReadAt == nil || again.ReadAt == nil || !again.ReadAt.Equal(*first.ReadAt) {
			t.Fatalf("read time moved from %v to %v", first.ReadAt, again.ReadAt)
		}
		bobs, _ := in.List(ctx, bob, false, 0, 10)
		if err := in.MarkRead(ctx, ann, bobs[0].ID); !apperr.Is(err, apperr.NotificationNotFound) {
			t.Fatalf("ann marking bob's: %v, want NotificationNotFound", err)
		}
		if err := in.MarkRead(ctx, ann, "00000000-0000-4000-8000-000000000000"); !apperr.Is(err, apperr.NotificationNotFound) {
			t.Fatalf("marking a missing one: %v, want NotificationNotFound", err)
		}
	})
}
