// Package channels holds the notification channels that leave the
// process: e-mail over SMTP, Slack and Microsoft Teams. Each implements
// engine.RemoteChannel over a sender of package delivery, so the engine
// runs each as its own activity with bounded retries, after success only,
// and records its outcome without ever failing the action. app/app.go
// chooses which are registered.
package channels

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/ontoflow/ontoflow/delivery"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/outbound"
	"github.com/ontoflow/ontoflow/secrets"
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
	sender  delivery.Sender
	secrets Secrets
	dest    func(*domain.NotificationSideEffect) string
}

// Secrets resolves a side effect's destination (a secret reference) and a
// recipient's own (a user's secret, which only delivery to that user may
// open), and reads a secret's use policy; secrets.Store is one.
type Secrets interface {
	secrets.Resolver
	ResolveOwned(ctx context.Context, name string) (string, error)
	UsePolicy(ctx context.Context, name string) (secrets.Policy, error)
}

var _ engine.RemoteChannel = (*Chat)(nil)

// Slack posts to Slack incoming webhooks (slack_webhook) through client,
// which must be the outbound (SSRF-guarded) client.
func Slack(client *http.Client, r Secrets) *Chat {
	return &Chat{name: "slack", sender: &delivery.Slack{Client: client}, secrets: r,
		dest: func(n *domain.NotificationSideEffect) string { return n.SlackWebhook }}
}

// Teams posts Adaptive Cards to Teams Workflows webhooks (teams_webhook).
func Teams(client *http.Client, r Secrets) *Chat {
	return &Chat{name: "teams", sender: &delivery.Teams{Client: client}, secrets: r,
		dest: func(n *domain.NotificationSideEffect) string { return n.TeamsWebhook }}
}

// Name implements engine.Channel.
func (c *Chat) Name() string { return c.name }

// Deliver implements engine.RemoteChannel: a result per message.
func (c *Chat) Deliver(ctx context.Context, msgs []engine.Message, report func(int, engine.Result)) {
	posted := map[string]engine.Result{}
	for i, m := range msgs {
		if ctx.Err() != nil {
			return
		}
		ref, own := c.dest(m.Effect), false
		if ref == "" && m.Settings.Destination(c.name) != "" {
			ref, own = secrets.Ref(m.Settings.Destination(c.name)), true
		}
		if ref == "" {
			report(i, engine.Result{Skipped: true, Err: fmt.Errorf("neither the side effect (%s_webhook) nor the recipient's notification settings name a %s destination", c.name, c.name)})
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
func (c *Chat) post(ctx context.Context, ref string, own bool, m engine.Message) engine.Result {
	names := secrets.Refs(ref)
	if len(names) != 1 {
		return engine.Result{Err: fmt.Errorf("%s destination %q is not one secret reference", c.name, ref)}
	}
	resolve := c.secrets.Resolve
	if own {
		resolve = c.secrets.ResolveOwned
	} else {
		var err error
		if ctx, err = c.restrict(ctx, names[0]); err != nil {
			return engine.Result{Err: err}
		}
	}
	url, err := resolve(ctx, names[0])
	if err != nil {
		return engine.Result{Err: fmt.Errorf("resolve the %s destination: %w", c.name, err)}
	}
	return result(c.sender.Send(ctx, url, delivery.Message{Title: m.Title, Body: m.Body}))
}

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

// result turns a sender's error into a Result; delivery errors never hold
// the destination.
func result(err error) engine.Result {
	if err == nil {
		return engine.Result{}
	}
	r := engine.Result{Err: err, Retryable: delivery.Retryable(err)}
	if e, ok := delivery.AsError(err); ok {
		r.RetryAfter = e.RetryAfter
	}
	return r
}

// Email sends each recipient their own message at the address on their
// account; a recipient without one is skipped with the reason.
type Email struct {
	Mailer *delivery.Mailer
}

var _ engine.RemoteChannel = (*Email)(nil)

// Name implements engine.Channel.
func (*Email) Name() string { return "email" }

// Deliver implements engine.RemoteChannel: messages rendered alike go out
// in one SMTP session, one mail per address (recipients never see each
// other).
func (e *Email) Deliver(ctx context.Context, msgs []engine.Message, report func(int, engine.Result)) {
	groups := map[delivery.Message][]int{}
	var order []delivery.Message
	for i, m := range msgs {
		if m.Recipient == nil || m.Recipient.Email == "" {
			report(i, engine.Result{Skipped: true, Err: errors.New("recipient has no e-mail address")})
			continue
		}
		dm := delivery.Message{Title: m.Title, Body: m.Body}
		if _, ok := groups[dm]; !ok {
			order = append(order, dm)
		}
		groups[dm] = append(groups[dm], i)
	}
	for _, dm := range order {
		if ctx.Err() != nil {
			return
		}
		idx := groups[dm]
		to := make([]string, len(idx))
		for k, i := range idx {
			to[k] = msgs[i].Recipient.Email
		}
		rs, err := e.Mailer.Send(ctx, to, dm)
		for k, i := range idx {
			report(i, unaddressed(mailResult(rs, k, err), to))
		}
	}
}

// unaddressed takes the addresses out of a failure's text (SMTP errors
// quote them): the record of a delivery is read by the action's actor,
// who need not learn recipients' addresses.
func unaddressed(r engine.Result, addrs []string) engine.Result {
	if r.Err == nil {
		return r
	}
	msg := r.Err.Error()
	for _, a := range addrs {
		// Servers may echo an address in another case.
		msg = regexp.MustCompile(`(?i)`+regexp.QuoteMeta(a)).ReplaceAllLiteralString(msg, "<address>")
	}
	r.Err = errors.New(msg)
	return r
}

func mailResult(rs []delivery.RecipientResult, k int, err error) engine.Result {
	if k < len(rs) && rs[k].Status == "sent" {
		return engine.Result{}
	}
	if k < len(rs) && rs[k].Error != "" {
		return engine.Result{Err: errors.New(rs[k].Error), Retryable: rs[k].Retryable}
	}
	if err != nil {
		return result(err)
	}
	return engine.Result{Err: errors.New("not sent")}
}
