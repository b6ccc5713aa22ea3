package channels

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ontoflow/ontoflow/notifications/delivery"
	"github.com/ontoflow/ontoflow/notifications/senders"
	"github.com/ontoflow/ontoflow/outbound"
	"github.com/ontoflow/ontoflow/secrets"
	"github.com/ontoflow/ontoflow/telemetry"
)

// Chat delivers to a team-chat webhook named on the side effect (a secret
// reference) or, when the side effect names none, to each recipient's own
// destination from their notification settings. Recipients of one side
// effect share the side effect's destination, so a text is posted once per
// destination, however many recipients it has:
// messages rendered alike for several recipients are one post; messages
// that differ (recipients who may read different things) are posted each,
// so a shared channel should be given to people with the same access.
type Chat struct {
	name    string
	sender  senders.Sender
	secrets Secrets
}

// Secrets resolves a side effect's destination (a secret reference) and a
// recipient's own (a user's secret, which only delivery to that user may
// open), and reads a secret's use policy; secrets.Store is one.
type Secrets interface {
	secrets.Resolver
	ResolveOwned(ctx context.Context, name string) (string, error)
	UsePolicy(ctx context.Context, name string) (secrets.Policy, error)
}

var _ delivery.Sender = (*Chat)(nil)

// Slack posts to Slack incoming webhooks (slack_webhook) through client,
// which must be the outbound (SSRF-guarded) client.
func Slack(client *http.Client, r Secrets) *Chat {
	return &Chat{name: "slack", sender: &senders.Slack{Client: client}, secrets: r}
}

// Teams posts Adaptive Cards to Teams Workflows webhooks (teams_webhook).
func Teams(client *http.Client, r Secrets) *Chat {
	return &Chat{name: "teams", sender: &senders.Teams{Client: client}, secrets: r}
}

// Name implements engine.Channel.
func (c *Chat) Name() string { return c.name }

// Deliver implements engine.RemoteChannel: a result per message.
func (c *Chat) Deliver(ctx context.Context, msgs []delivery.Message, report func(int, delivery.Result)) {
	posted := map[string]delivery.Result{}
	for i, m := range msgs {
		if ctx.Err() != nil {
			return
		}
		ref, own := m.Effect.Destinations[c.name], false
		if ref == "" && m.Settings.Destination(c.name) != "" {
			ref, own = secrets.Ref(m.Settings.Destination(c.name)), true
		}
		if ref == "" {
			report(i, delivery.Result{Skipped: true, Err: fmt.Errorf("neither the side effect (%s_webhook) nor the recipient's notification settings name a %s destination", c.name, c.name)})
			continue
		}
		key := fmt.Sprintf("%d\x00%s\x00%s\x00%s", m.SideEffect, ref, m.Title, m.Body)
		r, ok := posted[key]
		if !ok {
			r = c.post(ctx, ref, own, m)
			posted[key] = r
		}
		report(i, r)
	}
}

// post resolves the destination inside the activity (it is never in a
// history or record) and sends.
func (c *Chat) post(ctx context.Context, ref string, own bool, m delivery.Message) delivery.Result {
	names := secrets.Refs(ref)
	if len(names) != 1 {
		return delivery.Result{Err: fmt.Errorf("%s destination %q is not one secret reference", c.name, ref)}
	}
	resolve := c.secrets.Resolve
	if own {
		resolve = c.secrets.ResolveOwned
	} else {
		var err error
		if ctx, err = c.restrict(ctx, names[0]); err != nil {
			return delivery.Result{Err: err}
		}
	}
	x := secrets.NewExpander(resolverFunc(resolve))
	url, err := x.Resolve(ctx, names[0])
	if err != nil {
		return delivery.Result{Err: fmt.Errorf("resolve the %s destination: %w", c.name, err)}
	}
	// The destination's value is the URL: the post's span shows the
	// secret's name instead, and its failure, recorded on the execution,
	// is scrubbed of the value in whatever form an error quoted it.
	ctx = telemetry.WithShownURL(ctx, secrets.Placeholder(names[0]), x.Redact)
	r := result(c.sender.Send(ctx, url, senders.Message{Title: m.Title, Body: m.Body}))
	r.Err = telemetry.RedactError(ctx, r.Err)
	return r
}

// resolverFunc is a resolve function as a secrets.Resolver.
type resolverFunc func(ctx context.Context, name string) (string, error)

func (f resolverFunc) Resolve(ctx context.Context, name string) (string, error) { return f(ctx, name) }

// restrict is the call-time half of a shared destination's use policy:
// the secret must still be bound to this channel, and when it lists
// destinations the post goes out only to a URL inside them (checked by
// the outbound client as it sends). A recipient's own destination is
// theirs alone and has no policy.
func (c *Chat) restrict(ctx context.Context, name string) (context.Context, error) {
	p, err := c.secrets.UsePolicy(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read the use policy of the %s destination: %w", c.name, err)
	}
	if err := p.ChannelError(name, c.name); err != nil {
		return nil, fmt.Errorf("not sent: %w", err)
	}
	if len(p.Destinations) > 0 {
		ctx = outbound.RestrictTo(ctx, "the secret "+name, p.Destinations)
	}
	return ctx, nil
}
