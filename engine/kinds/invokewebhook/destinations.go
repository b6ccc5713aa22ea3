package invokewebhook

import (
	"context"
	"errors"
	"sort"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/outbound"
	"github.com/ontoflow/ontoflow/secrets"
)

// SecretUses implements domain.SecretReferrer: each secret the webhook
// references is sent to its URL, whichever member holds it.
func (InvokeWebhook) SecretUses(field string, cfg any) []domain.SecretUse {
	c := cfg.(*webhookConfig)
	texts := map[string]string{field + ".url": c.URL, field + ".body": c.Body, field + ".signing_secret": c.SigningSecret}
	for h, v := range c.Headers {
		texts[field+".headers."+h] = v
	}
	members := make([]string, 0, len(texts))
	for m := range texts {
		members = append(members, m)
	}
	sort.Strings(members)
	var out []domain.SecretUse
	for _, m := range members {
		for _, name := range secrets.Refs(texts[m]) {
			out = append(out, domain.SecretUse{Field: m, Name: name, URL: c.URL})
		}
	}
	return out
}

// restrictToSecrets is the call-time half of the secrets' use policy:
// every secret the built request holds (x resolved it) must still be a
// webhook secret, and the request goes out only to a URL inside each
// one's destinations, checked by the outbound client as it sends
// (outbound.RestrictTo). A refusal is final: WebhookFailed, not retried.
func (k InvokeWebhook) restrictToSecrets(ctx context.Context, x *secrets.Expander) (context.Context, error) {
	for _, name := range x.Names() {
		p, err := k.Secrets.UsePolicy(ctx, name)
		if err != nil {
			return nil, err
		}
		if err := p.ChannelError(name, ""); err != nil {
			return nil, apperr.New(apperr.WebhookFailed, "the webhook was not sent: %v", err)
		}
		ctx = outbound.RestrictTo(ctx, "the secret "+name, p.Destinations)
	}
	return ctx, nil
}

// destinationFailure is the final failure of a request the outbound
// client refused for its secrets' destinations (nil for other errors).
func destinationFailure(err error) error {
	var de *outbound.DestinationError
	if !errors.As(err, &de) {
		return nil
	}
	return apperr.New(apperr.WebhookFailed, "the webhook was not sent: %s (see the secret's destinations)", de.Error())
}
