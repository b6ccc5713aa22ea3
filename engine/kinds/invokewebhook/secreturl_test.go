package invokewebhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/outbound"
	"github.com/ontoflow/ontoflow/secrets"
)

// pathSecret is a secret store holding one webhook secret, PATH_S, that
// may be sent to dest.
type pathSecret struct {
	value string
	dest  outbound.Destinations
}

func (p pathSecret) Resolve(_ context.Context, name string) (string, error) {
	if name != "PATH_S" {
		return "", apperr.New(apperr.SecretNotFound, "no secret %s", name)
	}
	return p.value, nil
}
func (pathSecret) CheckRefs(context.Context, string, string) error { return nil }
func (p pathSecret) UsePolicy(context.Context, string) (secrets.Policy, error) {
	return secrets.Policy{Destinations: p.dest}, nil
}

// TestRefusedWebhookRecordsTheDefinedURL: a webhook whose URL path holds
// a secret fails to connect (nothing listens on its loopback port); the
// retry's error, the final failure and its data (what the execution
// records and the workflow's history holds) name the URL as defined, the
// secret as [secret:PATH_S], never its value. The value is a Slack-style
// path whose "|" net/http's error shows escaped and its "/" not: a form
// no escaping of the value reproduces, so only the URL as defined hides
// it.
func TestRefusedWebhookRecordsTheDefinedURL(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	const value = "T0A1/B0B2/ab|cd"
	dests, err := outbound.ParseDestinations([]string{down.URL + "/hooks/"})
	if err != nil {
		t.Fatal(err)
	}
	k := InvokeWebhook{Client: loopbackClient(t), Secrets: pathSecret{value: value, dest: dests}}
	c := &webhookConfig{URL: down.URL + "/hooks/p/{{ secrets.PATH_S }}/x?id={{ parameters.n }}", Timeout: "300ms", MaxAttempts: 2}
	op := &engine.Op{Action: &engine.ActionType{ID: "a1", ActionDefinition: domain.ActionDefinition{Name: "sync"}}, Config: c,
		Actor: &models.User{ID: "u1", Username: "ann"}, Params: map[string]any{"n": "7"}, ExecutionID: "ex1"}
	shown := down.URL + "/hooks/p/[secret:PATH_S]/x?id=7"
	leaks := func(s string) bool {
		return strings.Contains(s, "T0A1") || strings.Contains(s, "B0B2") || strings.Contains(s, "ab|cd") || strings.Contains(s, "ab%7Ccd")
	}

	_, err = k.Effect(engine.WithAttempt(context.Background(), 1), op, "ex1")
	var rl *engine.RetryLater
	if !errors.As(err, &rl) {
		t.Fatalf("attempt 1 of 2: %v, want a retry", err)
	}
	if leaks(rl.Err.Error()) || !strings.Contains(rl.Err.Error(), shown) {
		t.Errorf("the retry's error %q, want the URL as defined (%s) and no value", rl.Err.Error(), shown)
	}
	_, err = k.Effect(engine.WithAttempt(context.Background(), 2), op, "ex1")
	e, ok := apperr.As(err)
	if !ok || e.Code != apperr.WebhookFailed {
		t.Fatalf("attempt 2 of 2: %v, want WebhookFailed", err)
	}
	record, _ := json.Marshal(e)
	if leaks(e.Message) || leaks(string(record)) || !strings.Contains(e.Message, shown) || !strings.Contains(e.Message, "connection refused") {
		t.Errorf("the final failure %q (record %s), want the URL as defined (%s), the reason and no value", e.Message, record, shown)
	}
}
