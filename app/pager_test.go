package app_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/channelspec"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/notifications/delivery"
)

// pager is a notification channel that exists only in this file, under
// a name of its own: a remote channel posting to a destination kept as a
// secret (a side effect's pager_webhook), recording what it delivered
// and where. Its whole registration is app.ExtraChannels(p) — the proof
// that adding a channel touches its own file and one registration line:
// definitions may name it, users accept it or not, secrets bind to it and
// the OpenAPI document lists it, all from its Spec.
type pager struct {
	mu        sync.Mutex
	delivered []string
}

func (p *pager) Name() string { return "pager" }

func (p *pager) Spec() channelspec.Spec { return channelspec.Spec{Name: "pager", Destination: true} }

func (p *pager) Deliver(_ context.Context, msgs []delivery.Message, report func(int, delivery.Result)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, m := range msgs {
		p.delivered = append(p.delivered, m.Recipient.Username+": "+m.Title+" via "+m.Effect.Destinations["pager"])
		report(i, delivery.Result{})
	}
}

func (p *pager) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.delivered)
}

// TestChannelDefinedOnlyInTheTest runs the test's channel end to end over
// HTTP on an in-process dev: a secret is bound to it and its binding
// holds, an action type naming it validates, a user opting out of it is
// skipped and one opting in receives the rendered message after the
// execution succeeds, and the served OpenAPI document lists it.
func TestChannelDefinedOnlyInTheTest(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			p := &pager{}
			c := startDev(t, dsn, app.ExtraChannels(p))
			c.must(http.StatusCreated, "POST", "/api/v1/secrets", map[string]any{"name": "PAGER_HOOK", "value": "https://pager.example.com/x", "channel": "pager"}, nil)
			c.must(http.StatusCreated, "POST", "/api/v1/secrets", map[string]any{"name": "SLACK_HOOK", "value": "https://hooks.slack.example.com/x", "channel": "slack"}, nil)
			effect := map[string]any{"title": "paged {{ execution.kind }}", "channels": []string{"pager"}, "send_to_actor": true,
				"pager_webhook": "{{ secrets.PAGER_HOOK }}"}

			c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Page", "primary_key": "title",
				"properties": []map[string]any{{"name": "title", "type": "string", "required": true}}}, nil)
			other := map[string]any{"title": "t", "channels": []string{"pager"}, "send_to_actor": true, "pager_webhook": "{{ secrets.SLACK_HOOK }}"}
			st, b := c.do("POST", "/api/v1/ontology/actions", map[string]any{"name": "page-wrong", "operation_kind": "create_object",
				"object_type_id": "Page", "config": map[string]any{"operation": map[string]any{"static_patch": map[string]any{"title": "x"}},
					"notification_side_effects": []map[string]any{other}}})
			if st != http.StatusBadRequest || !errorOf(b).names("config.notification_side_effects[0].pager_webhook", "secret_channel") {
				t.Fatalf("an action type posting the slack secret to the pager: %d %s, want it refused by the secret's binding", st, b)
			}

			c.must(http.StatusOK, "PUT", "/api/v1/me/notification-settings", map[string]any{"channels": []string{"in_app"}}, nil)
			ex := notifyRun(t, c, effect)
			if out := waitNotified(t, c, ex); ex["status"] != "succeeded" || len(out) != 1 || out[0]["status"] != "skipped" {
				t.Fatalf("opted out: execution %v, outcomes %v", ex["status"], out)
			}
			c.must(http.StatusOK, "PUT", "/api/v1/me/notification-settings", map[string]any{"channels": []string{"in_app", "pager"}}, nil)
			ex = notifyRun(t, c, effect)
			out := waitNotified(t, c, ex)
			if ex["status"] != "succeeded" || len(out) != 1 || out[0]["status"] != "delivered" {
				t.Fatalf("opted in: execution %v, outcomes %v", ex["status"], out)
			}
			if got := p.got(); !slices.Equal(got, []string{"admin: paged execute via {{ secrets.PAGER_HOOK }}"}) {
				t.Fatalf("the test's channel delivered %q, want the one rendered message to the actor, to its destination", got)
			}
			if st, doc := c.do("GET", "/openapi.yaml", nil); st != http.StatusOK || !strings.Contains(string(doc), `"pager"`) {
				t.Fatalf("the served OpenAPI document does not list the channel (%d)", st)
			}
		})
	}
}
