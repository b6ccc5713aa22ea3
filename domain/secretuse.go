package domain

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/ontoflow/ontoflow/channelspec"
)

// SecretUse is one reference of an action type to a secret, as the
// secrets' use policy judges it when the action type is saved.
type SecretUse struct {
	// Field is the member holding the reference, e.g.
	// "config.operation.headers.Authorization".
	Field string
	// Name is the secret's name.
	Name string
	// Channel is the notification channel whose destination the secret
	// is (a channel that posts to one, e.g. "slack"), or "" when a
	// webhook sends it.
	Channel string
	// URL is the webhook's URL as configured (templates included), where
	// the secret is sent; "" for a channel.
	URL string
}

// SecretReferrer is implemented by kinds whose config may reference
// secrets: it lists the references in cfg (as NewConfig returned it,
// decoded); field prefixes each member.
type SecretReferrer interface {
	SecretUses(field string, cfg any) []SecretUse
}

// secretRefName captures the name of one whole secret reference.
var secretRefName = regexp.MustCompile(`^\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}$`)

// SecretUses lists d's references to secrets: its operation's (when its
// kind is a SecretReferrer and its config decodes) and its notification
// side effects' destinations, one per channel, in the order of the
// channels' names.
func (r *Kinds) SecretUses(d ActionDefinition) []SecretUse {
	var out []SecretUse
	if k, cfg, err := r.Config(d); err == nil {
		if sr, ok := k.(SecretReferrer); ok {
			out = sr.SecretUses("config.operation", cfg)
		}
	}
	sides := map[string][]NotificationSideEffect{
		"config.notification_side_effects":        d.Config.NotificationSideEffects,
		"config.revert_notification_side_effects": d.Config.RevertNotificationSideEffects,
	}
	for _, f := range []string{"config.notification_side_effects", "config.revert_notification_side_effects"} {
		for i, n := range sides[f] {
			for _, ch := range slices.Sorted(maps.Keys(n.Destinations)) {
				if m := secretRefName.FindStringSubmatch(n.Destinations[ch]); m != nil {
					member := channelspec.Spec{Name: ch}.DestinationMember()
					out = append(out, SecretUse{Field: fmt.Sprintf("%s[%d].%s", f, i, member), Name: m[1], Channel: ch})
				}
			}
		}
	}
	return out
}
