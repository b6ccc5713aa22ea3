// Package channelspec describes notification channels to the parts that
// judge what names them: a channel's name, whether it posts to a
// destination kept as a secret, and whether its users keep their own.
// Definitions (domain), users' settings (users), secrets' channel binding
// (secrets), the settings' rows (models) and the API's OpenAPI document
// (api) consult a Registry instead of listing channels, so a channel is
// its own file and one registration. It is a leaf: those packages sit
// below the channels' implementations (notifications/channels), so the
// description cannot live with the delivery code it describes.
package channelspec

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Spec is the definition-time half of a notification channel (as
// domain.OperationKind is of an operation kind): what validating a
// definition, a user's settings and a secret's binding need, without the
// delivery.
type Spec struct {
	// Name is the channel's value in a side effect's channels, e.g. "slack".
	Name string
	// Destination: the channel posts to a destination whose address is a
	// credential (a webhook URL), so it is a secret. A side effect names a
	// shared one as a secret reference in DestinationMember, and a secret
	// may be bound to the channel (its use policy) to serve only as that.
	Destination bool
	// OwnDestination: a user may keep their own destination in their
	// notification settings (DestinationMember, shown as
	// ConfiguredMember), used when a side effect names none. A user's own
	// destination is stored on their settings' row (models), so a channel
	// with one has a column there.
	OwnDestination bool
}

// DestinationMember is the member of a side effect and of a user's
// settings that holds the channel's destination ("slack_webhook").
func (s Spec) DestinationMember() string { return s.Name + "_webhook" }

// ConfiguredMember is the member of a user's settings view telling
// whether they keep their own destination ("slack_configured").
func (s Spec) ConfiguredMember() string { return s.Name + "_configured" }

// ChannelOfMember is the channel whose DestinationMember member is.
func ChannelOfMember(member string) (string, bool) {
	return strings.CutSuffix(member, "_webhook")
}

// Described is implemented by a channel's implementation that carries its
// description; assembly registers the description of each channel it is
// given (one without Spec is described by its name alone).
type Described interface {
	Spec() Spec
}

// Registry is the channels a process knows, in registration order. Its
// methods treat a nil Registry as Default().
type Registry struct {
	byName map[string]Spec
	names  []string
}

// New registers specs; a second channel of the same name panics (an
// assembly error).
func New(specs ...Spec) *Registry {
	r := &Registry{byName: map[string]Spec{}}
	for _, s := range specs {
		if _, dup := r.byName[s.Name]; dup {
			panic(fmt.Sprintf("notification channel %q registered twice", s.Name))
		}
		r.byName[s.Name] = s
		r.names = append(r.names, s.Name)
	}
	return r
}

// builtin is built once, when first asked for (a package variable
// would refer to itself through the nil-safe methods).
var builtin = sync.OnceValue(func() *Registry { return New(Builtin()...) })

// Default is the registry of the built-in channels.
func Default() *Registry { return builtin() }

// With is r with specs put in place of the channel of the same name, or
// added after the others.
func (r *Registry) With(specs ...Spec) *Registry {
	all := r.Specs()
	for _, s := range specs {
		if i := slices.IndexFunc(all, func(x Spec) bool { return x.Name == s.Name }); i >= 0 {
			all[i] = s
			continue
		}
		all = append(all, s)
	}
	return New(all...)
}

func (r *Registry) or() *Registry {
	if r == nil {
		return builtin()
	}
	return r
}

// Get returns the channel called name.
func (r *Registry) Get(name string) (Spec, bool) {
	s, ok := r.or().byName[name]
	return s, ok
}

// Specs lists the channels in registration order.
func (r *Registry) Specs() []Spec {
	r = r.or()
	out := make([]Spec, len(r.names))
	for i, n := range r.names {
		out[i] = r.byName[n]
	}
	return out
}

// Names lists the channels' names in registration order.
func (r *Registry) Names() []string { return slices.Clone(r.or().names) }

// WithDestination lists the channels that post to a secret destination
// (those a secret may be bound to).
func (r *Registry) WithDestination() []string {
	return r.filter(func(s Spec) bool { return s.Destination })
}

// WithOwnDestination lists the channels whose users may keep their own
// destination.
func (r *Registry) WithOwnDestination() []string {
	return r.filter(func(s Spec) bool { return s.OwnDestination })
}

func (r *Registry) filter(keep func(Spec) bool) []string {
	var out []string
	for _, s := range r.Specs() {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out
}

// QuotedOr lists names for a message: "a", "b" or "c".
func QuotedOr(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
