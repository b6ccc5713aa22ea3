package users

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/channelspec"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

// NotificationSettingsView is what GET /me/notification-settings shows:
// the accepted channels and, for each channel whose users keep their own
// destination, whether they set one ("slack_configured"; the
// destinations themselves are never shown).
type NotificationSettingsView struct {
	Channels   []string
	Configured []ChannelConfigured
}

// ChannelConfigured is whether a user keeps their own destination on a
// channel.
type ChannelConfigured struct {
	Channel string
	Set     bool
}

// NotificationSettingsSpec is a change: nil members are left alone; an
// empty destination removes it; channels null accepts every channel.
// Destinations are by channel, each given in JSON as its channel's
// member ("slack_webhook").
type NotificationSettingsSpec struct {
	Channels     *[]string
	Destinations map[string]*string
}

// Notifications keeps users' notification settings; their own
// destinations are stored in the secrets store.
type Notifications struct {
	DB      *gorm.DB
	Secrets *secrets.Store
	// Channels are the channels a user may accept or keep a destination
	// on (nil: the built-in ones).
	Channels *channelspec.Registry
}

// Get reads u's settings (defaults when none are stored).
func (n *Notifications) Get(ctx context.Context, userID string) (*NotificationSettingsView, error) {
	s, err := n.load(ctx, userID)
	if err != nil {
		return nil, err
	}
	return n.view(s), nil
}

func (n *Notifications) view(s *models.NotificationSettings) *NotificationSettingsView {
	v := &NotificationSettingsView{Channels: s.Channels.V}
	for _, ch := range n.Channels.WithOwnDestination() {
		v.Configured = append(v.Configured, ChannelConfigured{Channel: ch, Set: s.Destination(ch) != ""})
	}
	return v
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
	if err := n.checkSettings(sp); err != nil {
		return nil, err
	}
	s, err := n.load(ctx, userID)
	if err != nil {
		return nil, err
	}
	if sp.Channels != nil {
		s.Channels = models.NewJSON(*sp.Channels)
	}
	for _, ch := range n.Channels.WithOwnDestination() {
		name, err := n.destination(ctx, userID, ch, s.Destination(ch), sp.Destinations[ch])
		if err != nil {
			return nil, err
		}
		if !s.SetDestination(ch, name) && name != "" {
			return nil, fmt.Errorf("store the %s destination of %s: the settings' row has no column for it", ch, userID)
		}
	}
	if err := n.DB.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(s).Error; err != nil {
		return nil, fmt.Errorf("store notification settings of %s: %w", userID, err)
	}
	return n.view(s), nil
}

func (n *Notifications) checkSettings(sp NotificationSettingsSpec) error {
	if sp.Channels != nil {
		names := n.Channels.Names()
		for _, c := range *sp.Channels {
			if !slices.Contains(names, c) {
				return apperr.New(apperr.InvalidArgument, "channels: %q is not one of %s", c, strings.Join(names, ", ")).
					WithDetails(apperr.Detail{Field: "channels", Reason: "invalid", Message: "unknown channel " + c})
			}
		}
	}
	own := n.Channels.WithOwnDestination()
	for _, ch := range slices.Sorted(maps.Keys(sp.Destinations)) {
		v, field := sp.Destinations[ch], channelspec.Spec{Name: ch}.DestinationMember()
		if !slices.Contains(own, ch) {
			// As the strict decoder answered when the members were fields.
			return apperr.New(apperr.InvalidJSON, "unknown field %q", field).
				WithDetails(apperr.Detail{Field: field, Reason: "unknown", Message: "unknown field"})
		}
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

// MarshalJSON shows the view as it always was: "channels", then
// "<channel>_configured" for each channel whose users keep their own
// destination, in the channels' order.
func (v NotificationSettingsView) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	chs, err := json.Marshal(v.Channels)
	if err != nil {
		return nil, err
	}
	b.WriteString(`{"channels":`)
	b.Write(chs)
	for _, c := range v.Configured {
		fmt.Fprintf(&b, `,%q:%t`, channelspec.Spec{Name: c.Channel}.ConfiguredMember(), c.Set)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads "channels" and each destination member
// ("<channel>_webhook"); whether the channel keeps users' destinations is
// Set's check. Any other member is unknown, as to the API's strict
// decoder.
func (sp *NotificationSettingsSpec) UnmarshalJSON(data []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return err
	}
	*sp = NotificationSettingsSpec{}
	for m, raw := range members {
		if m == "channels" {
			if err := json.Unmarshal(raw, &sp.Channels); err != nil {
				return err
			}
			continue
		}
		ch, ok := channelspec.ChannelOfMember(m)
		if !ok {
			return fmt.Errorf("json: unknown field %q", m)
		}
		var v *string
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		if sp.Destinations == nil {
			sp.Destinations = map[string]*string{}
		}
		sp.Destinations[ch] = v
	}
	return nil
}
