package users

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

// NotificationChannels are the channels a user may accept.
var NotificationChannels = []string{"in_app", "email", "slack", "teams"}

// NotificationSettingsView is what GET /me/notification-settings shows:
// the destinations only as whether they are set.
type NotificationSettingsView struct {
	Channels        []string `json:"channels"`
	SlackConfigured bool     `json:"slack_configured"`
	TeamsConfigured bool     `json:"teams_configured"`
}

// NotificationSettingsSpec is a change: nil members are left alone; an
// empty destination removes it; channels null accepts every channel.
type NotificationSettingsSpec struct {
	Channels     *[]string `json:"channels"`
	SlackWebhook *string   `json:"slack_webhook"`
	TeamsWebhook *string   `json:"teams_webhook"`
}

// Notifications keeps users' notification settings; their chat
// destinations are stored in the secrets store.
type Notifications struct {
	DB      *gorm.DB
	Secrets *secrets.Store
}

// Get reads u's settings (defaults when none are stored).
func (n *Notifications) Get(ctx context.Context, userID string) (*NotificationSettingsView, error) {
	s, err := n.load(ctx, userID)
	if err != nil {
		return nil, err
	}
	return view(s), nil
}

func view(s *models.NotificationSettings) *NotificationSettingsView {
	return &NotificationSettingsView{Channels: s.Channels.V, SlackConfigured: s.SlackSecret != "", TeamsConfigured: s.TeamsSecret != ""}
}

func (n *Notifications) load(ctx context.Context, userID string) (*models.NotificationSettings, error) {
	var s models.NotificationSettings
	err := n.DB.WithContext(ctx).Take(&s, "user_id = ?", userID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return &models.NotificationSettings{UserID: userID}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read notification settings of %s: %w", userID, err)
	}
	return &s, nil
}

// Set applies sp to userID's settings. Destinations are checked (http or
// https URLs) and stored as secrets named after the user, then the row.
func (n *Notifications) Set(ctx context.Context, userID string, sp NotificationSettingsSpec) (*NotificationSettingsView, error) {
	if err := checkSettings(sp); err != nil {
		return nil, err
	}
	s, err := n.load(ctx, userID)
	if err != nil {
		return nil, err
	}
	if sp.Channels != nil {
		s.Channels = models.NewJSON(*sp.Channels)
	}
	if s.SlackSecret, err = n.destination(ctx, userID, "slack", s.SlackSecret, sp.SlackWebhook); err != nil {
		return nil, err
	}
	if s.TeamsSecret, err = n.destination(ctx, userID, "teams", s.TeamsSecret, sp.TeamsWebhook); err != nil {
		return nil, err
	}
	if err := n.DB.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(s).Error; err != nil {
		return nil, fmt.Errorf("store notification settings of %s: %w", userID, err)
	}
	return view(s), nil
}

func checkSettings(sp NotificationSettingsSpec) error {
	if sp.Channels != nil {
		for _, c := range *sp.Channels {
			if !slices.Contains(NotificationChannels, c) {
				return apperr.New(apperr.InvalidArgument, "channels: %q is not one of %s", c, strings.Join(NotificationChannels, ", ")).
					WithDetails(apperr.Detail{Field: "channels", Reason: "invalid", Message: "unknown channel " + c})
			}
		}
	}
	for field, v := range map[string]*string{"slack_webhook": sp.SlackWebhook, "teams_webhook": sp.TeamsWebhook} {
		if v == nil || *v == "" {
			continue
		}
		if u, err := url.Parse(*v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return apperr.New(apperr.InvalidArgument, "%s must be an http or https URL", field).
				WithDetails(apperr.Detail{Field: field, Reason: "invalid", Message: "an http or https URL"})
		}
	}
	return nil
}

// destination stores, replaces or removes (value "") the user's own
// destination on channel, and returns the name of the secret now holding
// it ("" = none).
func (n *Notifications) destination(ctx context.Context, userID, channel, current string, value *string) (string, error) {
	if value == nil {
		return current, nil
	}
	name := secrets.UserPrefix + strings.ReplaceAll(userID, "-", "") + "_" + strings.ToUpper(channel)
	if *value == "" {
		if current != "" {
			if err := n.Secrets.DeleteOwned(ctx, current); err != nil {
				return "", err
			}
		}
		return "", nil
	}
	if err := n.Secrets.PutOwned(ctx, name, *value, "the "+channel+" destination of user "+userID, userID); err != nil {
		return "", fmt.Errorf("store the %s destination: %w", channel, err)
	}
	return name, nil
}
