package channels

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications/delivery"
	"github.com/ontoflow/ontoflow/outbound"
	"github.com/ontoflow/ontoflow/secrets"
)

// policySecrets is a secret store of one shared and one own destination.
type policySecrets struct {
	url    string
	policy secrets.Policy
}

func (p *policySecrets) Resolve(_ context.Context, name string) (string, error) {
	if name != "HOOK" {
		return "", apperr.New(apperr.SecretNotFound, "no %s", name)
	}
	return p.url, nil
}

func (p *policySecrets) ResolveOwned(_ context.Context, name string) (string, error) {
	return p.url + "own", nil
}

func (p *policySecrets) UsePolicy(context.Context, string) (secrets.Policy, error) {
	return p.policy, nil
}

// TestChatUsePolicyAtCallTime: a shared chat destination is posted to only
// while its secret is still bound to the channel and, when the secret
// lists destinations, its URL is inside them; a refusal is permanent and
// does not show the URL. A recipient's own destination has no policy.
// Loopback only.
func TestChatUsePolicyAtCallTime(t *testing.T) {
	var hits atomic.Int32
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer rx.Close()
	allow, err := outbound.ParseAllowlist("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	client := outbound.NewClient(outbound.Options{Allow: allow})
	dests := func(list ...string) outbound.Destinations {
		ds, err := outbound.ParseDestinations(list)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	other := httptest.NewServer(http.NotFoundHandler())
	other.Close() // only its address is used: a port nothing is sent to
	send := func(p secrets.Policy, settings *models.NotificationSettings, ref string) delivery.Result {
		s := &policySecrets{url: rx.URL + "/slack/T0/B0/tokenpart", policy: p}
		var got delivery.Result
		Slack(client, s).Deliver(context.Background(), []delivery.Message{{Title: "t", Body: "b",
			Effect: &domain.NotificationSideEffect{Destinations: map[string]string{"slack": ref}}, Settings: settings}},
			func(_ int, r delivery.Result) { got = r })
		return got
	}
	if r := send(secrets.Policy{Channel: "slack"}, nil, "{{ secrets.HOOK }}"); r.Err != nil || hits.Load() != 1 {
		t.Fatalf("bound, no destinations listed: %v (%d posts)", r.Err, hits.Load())
	}
	if r := send(secrets.Policy{Channel: "slack", Destinations: dests(rx.URL + "/slack/")}, nil, "{{ secrets.HOOK }}"); r.Err != nil || hits.Load() != 2 {
		t.Fatalf("inside its destinations: %v (%d posts)", r.Err, hits.Load())
	}
	refusals := map[string]secrets.Policy{
		"outside its destinations": {Channel: "slack", Destinations: dests(other.URL + "/slack/")},
		"another path":             {Channel: "slack", Destinations: dests(rx.URL + "/teams/")},
		"bound to teams":           {Channel: "teams"},
		"a webhook secret":         {Destinations: dests(rx.URL + "/")},
	}
	for name, p := range refusals {
		r := send(p, nil, "{{ secrets.HOOK }}")
		if r.Err == nil || r.Retryable || strings.Contains(r.Err.Error(), "tokenpart") || !strings.Contains(r.Err.Error(), "HOOK") {
			t.Errorf("%s: %v (retryable %v)", name, r.Err, r.Retryable)
		}
	}
	if hits.Load() != 2 {
		t.Errorf("%d posts, want 2: a refused delivery was sent", hits.Load())
	}
	own := &models.NotificationSettings{SlackSecret: "USER_x_SLACK"}
	if r := send(secrets.Policy{Channel: "teams"}, own, ""); r.Err != nil || hits.Load() != 3 {
		t.Errorf("a recipient's own destination: %v (%d posts)", r.Err, hits.Load())
	}
}
