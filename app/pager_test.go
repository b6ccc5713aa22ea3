package app_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/ontoflow/ontoflow/app"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/notifications/delivery"
)

// pager is a notification channel that exists only in this file: a
// remote channel under the name of one a definition may name ("slack"),
// whose built-in it replaces, recording what it delivered. Its whole
// registration is app.ExtraChannels(p) — the proof that adding a channel
// touches its own file and one registration line.
type pager struct {
	mu        sync.Mutex
	delivered []string
}

func (p *pager) Name() string { return "slack" }

func (p *pager) Deliver(_ context.Context, msgs []delivery.Message, report func(int, delivery.Result)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, m := range msgs {
		p.delivered = append(p.delivered, m.Recipient.Username+": "+m.Title)
		report(i, delivery.Result{})
	}
}

func (p *pager) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.delivered)
}

// TestChannelDefinedOnlyInTheTest runs an action whose side effect goes
// to the test's channel end to end over HTTP on an in-process dev: the
// delivery step hands the rendered message to it and records it
// delivered.
func TestChannelDefinedOnlyInTheTest(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			p := &pager{}
			c := startDev(t, dsn, app.ExtraChannels(p))
			ex := notifyRun(t, c, map[string]any{"title": "paged {{ execution.kind }}", "channels": []string{"slack"}, "send_to_actor": true})
			out := waitNotified(t, c, ex)
			if ex["status"] != "succeeded" || len(out) != 1 || out[0]["status"] != "delivered" {
				t.Fatalf("execution %v, outcomes %v", ex["status"], out)
			}
			if got := p.got(); !slices.Equal(got, []string{"admin: paged execute"}) {
				t.Fatalf("the test's channel delivered %q, want the one rendered message to the actor", got)
			}
		})
	}
}
