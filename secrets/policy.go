package secrets

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/channelspec"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/printable"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/outbound"
)

// A secret's use policy says who may reference it in a definition and
// where it may be sent, as a data source's does in Foundry or a policy in
// Vault: the right to read a secret (secrets:read shows metadata only) and
// the right to use it are apart, and executing an action needs neither.
//
//   - UseRoles, UseUsers: beside admins, who may save an action type that
//     references the secret (by default its creator).
//   - Destinations: hosts or URL prefixes (outbound.Destination) a webhook
//     may send it to, by URL, header, body or signature. Required for any
//     use in a webhook: none means it cannot be used in one.
//   - Channel: a channel that posts to a destination (Store.Channels,
//     e.g. "slack") binds the secret (whose value is the channel's
//     webhook URL) to that channel's destination (its
//     channelspec.Spec.DestinationMember, e.g. slack_webhook) and to
//     nothing else; "" is a webhook secret, which no channel may post to.
//
// The definition-time check is CheckUses; the worker checks again when it
// sends (ChannelError, and the destinations the engine gives
// outbound.RestrictTo).

// Limits of a use policy.
const (
	MaxUseEntries = 64
	maxRoleChars  = 128
)

// Policy is the use policy of a secret.
type Policy struct {
	UseRoles     []string
	UseUsers     []string
	UseGroups    []string
	Destinations outbound.Destinations
	Channel      string
}

// MayUse reports whether u may reference the secret in a definition: an
// admin, a user named in UseUsers, or one holding a role of UseRoles. No
// user (nil) may not.
func (p Policy) MayUse(u *models.User) bool {
	if u == nil {
		return false
	}
	if u.IsAdmin() || slices.Contains(p.UseUsers, u.ID) {
		return true
	}
	for _, r := range u.Roles.V {
		if slices.Contains(p.UseRoles, r) {
			return true
		}
	}
	return u.InAnyGroup(p.UseGroups)
}

// policyOf reads a row's policy. A destination that no longer parses is
// left out (it permits nothing); a row never given a policy is admins
// only, no destination.
func policyOf(row *models.Secret) Policy {
	if !row.PolicySet {
		return Policy{}
	}
	p := Policy{UseRoles: row.UseRoles.V, UseUsers: row.UseUsers.V, UseGroups: row.UseGroups.V, Channel: row.Channel}
	for _, s := range row.Destinations.V {
		if d, err := outbound.ParseDestination(s); err == nil {
			p.Destinations = append(p.Destinations, d)
		}
	}
	return p
}

// UsePolicy reads the use policy of the secret name (for the worker's
// call-time checks).
func (s *Store) UsePolicy(ctx context.Context, name string) (Policy, error) {
	row, err := s.Get(ctx, name)
	if err != nil {
		return Policy{}, err
	}
	return policyOf(row), nil
}

// normalise shows a row's lists as lists, never null.
func normalise(row *models.Secret) {
	for _, l := range []*models.JSON[[]string]{&row.UseRoles, &row.UseUsers, &row.UseGroups, &row.Destinations} {
		if l.V == nil {
			l.V = []string{}
		}
	}
}

func invalidPolicy(field, reason, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return apperr.New(apperr.InvalidArgument, "%s: %s", field, msg).
		WithDetails(apperr.Detail{Field: field, Reason: reason, Message: msg})
}

// applyPolicy checks the policy members sp sets and writes them to row;
// on create the members sp leaves out take their defaults: the creator
// by (when known) alone, no destination, no channel.
func (s *Store) applyPolicy(ctx context.Context, row *models.Secret, sp Spec, create bool, by string) error {
	if create {
		row.UseRoles.V, row.UseUsers.V, row.Destinations.V, row.Channel = []string{}, []string{}, []string{}, ""
		row.UseGroups.V = []string{}
		if by != "" {
			row.UseUsers.V = []string{by}
		}
	}
	if sp.UseRoles != nil {
		roles, err := checkRoles(*sp.UseRoles)
		if err != nil {
			return err
		}
		row.UseRoles.V = roles
	}
	if sp.UseGroups != nil {
		groups, err := checkNames("use_groups", "group", *sp.UseGroups)
		if err != nil {
			return err
		}
		row.UseGroups.V = groups
	}
	if sp.UseUsers != nil {
		ids, err := s.checkUsers(ctx, *sp.UseUsers)
		if err != nil {
			return err
		}
		row.UseUsers.V = ids
	}
	if sp.Destinations != nil {
		ds, err := outbound.ParseDestinations(*sp.Destinations)
		if err != nil {
			return invalidPolicy("destinations", "invalid", "%v", err)
		}
		row.Destinations.V = ds.Strings()
	}
	if sp.Channel != nil {
		// A secret may be bound only to a channel whose destination is a
		// secret. (E-mail takes its credentials from the server's
		// configuration, so no definition references an e-mail secret.)
		bindable := s.Channels.WithDestination()
		if *sp.Channel != "" && !slices.Contains(bindable, *sp.Channel) {
			return invalidPolicy("channel", "invalid", "channel must be \"\" (a webhook secret), %s, got %q", channelspec.QuotedOr(bindable), domain.Clip(*sp.Channel))
		}
		row.Channel = *sp.Channel
	}
	row.PolicySet = true
	return nil
}

func checkRoles(roles []string) ([]string, error) { return checkNames("use_roles", "role", roles) }

// checkNames checks a policy's list of role or group names (field, of
// what): non-empty, one line, bounded, duplicates dropped.
func checkNames(field, what string, roles []string) ([]string, error) {
	if len(roles) > MaxUseEntries {
		return nil, invalidPolicy(field, "too_many", "at most %d %ss", MaxUseEntries, what)
	}
	out := []string{}
	for _, r := range roles {
		if r == "" || utf8.RuneCountInString(r) > maxRoleChars || !printable.String(r) {
			return nil, invalidPolicy(field, "invalid", "a %s is one line of text of at most %d characters", what, maxRoleChars)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// checkUsers checks that every id names a user.
func (s *Store) checkUsers(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) > MaxUseEntries {
		return nil, invalidPolicy("use_users", "too_many", "at most %d users", MaxUseEntries)
	}
	out := []string{}
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	var found []string
	if err := s.db.WithContext(ctx).Model(&models.User{}).Where("id IN ?", out).Pluck("id", &found).Error; err != nil {
		return nil, fmt.Errorf("look up users: %w", err)
	}
	for _, id := range out {
		if !slices.Contains(found, id) {
			return nil, invalidPolicy("use_users", "unknown_user", "no user has the id %q", domain.Clip(id))
		}
	}
	return out, nil
}

// CheckUses is the definition-time check of an action type's references
// to secrets, saved by definer: every secret must exist (400); the
// definer must be allowed to use each (403 PermissionDenied naming the
// member); each must be used as its channel binding says, and a webhook's
// URL must lie within the secret's destinations (400 InvalidDefinition
// naming the member).
func (s *Store) CheckUses(ctx context.Context, definer *models.User, uses []domain.SecretUse) error {
	sort.SliceStable(uses, func(i, j int) bool { return uses[i].Field < uses[j].Field })
	pols := map[string]Policy{}
	for _, u := range uses {
		row, err := s.Get(ctx, u.Name)
		if apperr.Is(err, apperr.SecretNotFound) {
			// Answered alike for a user's own secret: a definition must
			// not learn which users have destinations.
			return apperr.New(apperr.InvalidDefinition, "%s references the secret %q, which does not exist", u.Field, u.Name).
				WithDetails(apperr.Detail{Field: u.Field, Reason: "missing_secret", Message: "secret " + u.Name + " does not exist"})
		}
		if err != nil {
			return err
		}
		pols[u.Name] = policyOf(row)
	}
	for _, u := range uses {
		if !pols[u.Name].MayUse(definer) {
			return apperr.New(apperr.PermissionDenied, "%s: you may not use the secret %q in a definition (its use policy names who may: use_users, use_roles)", u.Field, u.Name).
				WithDetails(apperr.Detail{Field: u.Field, Reason: "secret_use_denied", Message: "not allowed to use secret " + u.Name})
		}
	}
	for _, u := range uses {
		if err := checkUse(u, pols[u.Name]); err != nil {
			return err
		}
	}
	return nil
}

func checkUse(u domain.SecretUse, p Policy) error {
	bad := func(reason, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		return apperr.New(apperr.InvalidDefinition, "%s: %s", u.Field, msg).
			WithDetails(apperr.Detail{Field: u.Field, Reason: reason, Message: msg})
	}
	switch {
	case u.Channel != p.Channel && p.Channel != "":
		return bad("secret_channel", "the secret %q is bound to the %s channel and may be used only as its destination", u.Name, p.Channel)
	case u.Channel != p.Channel:
		return bad("secret_channel", "the secret %q is not bound to the %s channel (its channel is set on the secret)", u.Name, u.Channel)
	case u.Channel != "":
		return nil
	case len(p.Destinations) == 0:
		return bad("secret_destination", "the secret %q has no allowed destinations, so no webhook may send it (set its destinations)", u.Name)
	case !p.Destinations.PermitsTemplate(u.URL):
		return bad("secret_destination", "the secret %q may not be sent to %s: the webhook url is outside the secret's allowed destinations", u.Name, domain.Clip(u.URL))
	}
	return nil
}

// ChannelError is the worker's call-time check of a secret about to be
// sent by channel ("" for a webhook): nil when its binding allows it.
func (p Policy) ChannelError(name, channel string) error {
	if p.Channel == channel {
		return nil
	}
	if p.Channel == "" {
		return fmt.Errorf("the secret %q is not bound to the %s channel", name, channel)
	}
	return fmt.Errorf("the secret %q is bound to the %s channel and may be used only as its destination", name, p.Channel)
}

// MigratePolicies gives every secret written before secrets had a use
// policy (PolicySet false) one: admins only, and the destinations of the
// action types that use it today (uses lists a definition's references,
// e.g. engine.Kinds.Domain().SecretUses). A secret used only as one chat
// channel's destination is bound to that channel; one used by webhooks
// may be sent to each webhook URL's literal prefix. It runs at every
// start and changes only rows without a policy, each guarded by that, so
// replicas starting together agree. It returns how many it migrated.
func MigratePolicies(ctx context.Context, db *gorm.DB, log *slog.Logger, uses func(domain.ActionDefinition) []domain.SecretUse) (int, error) {
	var rows []models.Secret
	if err := db.WithContext(ctx).Omit("ciphertext").Where("policy_set = ?", false).Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("read secrets without a use policy: %w", err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	var ats []models.ActionType
	if err := db.WithContext(ctx).Find(&ats).Error; err != nil {
		return 0, fmt.Errorf("read action types to migrate secrets: %w", err)
	}
	found := map[string]*legacyUse{}
	for _, at := range ats {
		d := domain.ActionDefinition{Name: at.Name, ObjectTypeID: at.ObjectTypeID, OperationKind: at.OperationKind, Config: at.Config.V}
		for _, u := range uses(d) {
			if found[u.Name] == nil {
				found[u.Name] = &legacyUse{}
			}
			found[u.Name].add(at.Name, u)
		}
	}
	n := 0
	for _, row := range rows {
		lu := found[row.Name]
		if lu == nil || Reserved(row.Name) {
			lu = &legacyUse{}
		}
		channel, dests := lu.policy(log, row.Name)
		res := db.WithContext(ctx).Model(&models.Secret{}).Where("id = ? AND policy_set = ?", row.ID, false).Updates(map[string]any{
			"use_roles": models.NewJSON([]string{}), "use_users": models.NewJSON([]string{}),
			"destinations": models.NewJSON(dests), "channel": channel, "policy_set": true,
		})
		if res.Error != nil {
			return n, fmt.Errorf("migrate the use policy of secret %q: %w", row.Name, res.Error)
		}
		n += int(res.RowsAffected)
	}
	log.InfoContext(ctx, "secrets given a use policy: admins only, the destinations of the action types that use them", "secrets", n)
	return n, nil
}

// legacyUse gathers how the action types of before use policies used one
// secret.
type legacyUse struct {
	channels []string
	dests    outbound.Destinations
	actions  []string
	unclear  []string // URLs with no literal origin
}

func (l *legacyUse) add(action string, u domain.SecretUse) {
	l.actions = append(l.actions, action)
	if u.Channel != "" {
		if !slices.Contains(l.channels, u.Channel) {
			l.channels = append(l.channels, u.Channel)
		}
		return
	}
	if d, ok := outbound.DestinationOf(u.URL); ok {
		l.dests = append(l.dests, d)
	} else {
		l.unclear = append(l.unclear, u.URL)
	}
}

// policy is the channel and destinations the uses amount to. A secret
// both posted to a channel and sent by webhooks (or bound to two
// channels) keeps its webhook destinations (else its first channel); the
// uses it loses fail when they run, and the log says which.
func (l *legacyUse) policy(log *slog.Logger, name string) (string, []string) {
	dests := l.dests.Strings()
	switch {
	case len(l.channels) == 0:
	case len(dests) == 0 && len(l.unclear) == 0 && len(l.channels) == 1:
		return l.channels[0], []string{}
	case len(dests) == 0 && len(l.unclear) == 0:
		log.Warn("secret used by two chat channels: bound to the first; an admin must split it", "secret", name, "channel", l.channels[0], "actions", l.actions)
		return l.channels[0], []string{}
	default:
		log.Warn("secret used both by webhooks and as a chat destination: kept for webhooks; its chat uses will fail until an admin splits it", "secret", name, "actions", l.actions)
	}
	if len(l.unclear) > 0 {
		log.Warn("secret used by a webhook whose url has no literal host: no destination derived for it", "secret", name, "actions", l.actions)
	}
	return "", dests
}
