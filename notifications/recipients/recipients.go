// Package recipients resolves a notification side effect's recipients to
// users and reads which channels each accepts (their notification
// settings).
package recipients

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// Resolve resolves side effect n's recipients to distinct, existing,
// enabled users: the named ones, those named by the parameters (params)
// and by the target's properties (target, as the operation found it),
// its creator, the actor, or everyone (broadcast). A recipient source
// naming a user that does not exist is an error (the outcome records it).
func Resolve(ctx context.Context, db *gorm.DB, n domain.NotificationSideEffect, actor *models.User, target *domain.Object, params map[string]any) ([]*models.User, error) {
	named := append([]string(nil), n.UserIDs...)
	if n.UserIDInputName != "" {
		named = append(named, stringsOf(params[n.UserIDInputName])...)
	}
	if n.TargetUserPropertyName != "" && target != nil {
		named = append(named, stringsOf(target.Properties[n.TargetUserPropertyName])...)
	}
	if n.SendToTargetCreator && target != nil && target.CreatedBy != "" {
		named = append(named, target.CreatedBy)
	}
	users, err := lookUp(ctx, db, n.Broadcast, named)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*models.User
	add := func(u *models.User) {
		if !seen[u.ID] {
			seen[u.ID] = true
			out = append(out, u)
		}
	}
	if n.SendToActor {
		add(actor)
	}
	for i := range users {
		if !users[i].Disabled {
			add(&users[i])
		}
	}
	return out, nil
}

// lookUp reads every enabled user (broadcast) or those named, by id or
// username; a name that is no user is an error.
func lookUp(ctx context.Context, db *gorm.DB, broadcast bool, named []string) ([]models.User, error) {
	var users []models.User
	// The read rule's columns too: each recipient's notification is
	// rendered with what that recipient may read.
	q := db.WithContext(ctx).Model(&models.User{}).Select("id", "username", "disabled", "roles", "clearance", "organization", "email")
	if broadcast {
		if err := q.Where("disabled = ?", false).Find(&users).Error; err != nil {
			return nil, fmt.Errorf("list users: %w", err)
		}
		return users, nil
	}
	if len(named) == 0 {
		return nil, nil
	}
	if err := q.Where("id IN ? OR username IN ?", named, named).Find(&users).Error; err != nil {
		return nil, fmt.Errorf("look up recipients: %w", err)
	}
	found := map[string]bool{}
	for _, u := range users {
		found[u.ID], found[u.Username] = true, true
	}
	for _, x := range named {
		if !found[x] {
			return nil, fmt.Errorf("recipient %q is not a user", x)
		}
	}
	return users, nil
}

func stringsOf(v any) []string {
	switch x := v.(type) {
	case string:
		if x != "" {
			return []string{x}
		}
	case []any:
		var out []string
		for _, y := range x {
			if s, ok := y.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Settings reads the users' notification settings by user id; users
// without settings are absent (they take every channel).
func Settings(ctx context.Context, db *gorm.DB, users []*models.User) (map[string]*models.NotificationSettings, error) {
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	var rows []models.NotificationSettings
	if len(ids) > 0 {
		if err := db.WithContext(ctx).Where("user_id IN ?", ids).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("read recipients' notification settings: %w", err)
		}
	}
	out := make(map[string]*models.NotificationSettings, len(rows))
	for i := range rows {
		out[rows[i].UserID] = &rows[i]
	}
	return out, nil
}

// Accepting keeps the users whose settings accept channel.
func Accepting(users []*models.User, settings map[string]*models.NotificationSettings, channel string) []*models.User {
	var out []*models.User
	for _, u := range users {
		if settings[u.ID].Accepts(channel) {
			out = append(out, u)
		}
	}
	return out
}
