package invokewebhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/internal/harness/loopback"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/outbound"
	"github.com/ontoflow/ontoflow/secrets"
)

// noSecrets resolves nothing: the calls of these tests reference none.
type noSecrets struct{}

func (noSecrets) Resolve(context.Context, string) (string, error) {
	return "", errors.New("no secrets here")
}
func (noSecrets) CheckRefs(context.Context, string, string) error { return nil }
func (noSecrets) UsePolicy(context.Context, string) (secrets.Policy, error) {
	return secrets.Policy{}, errors.New("no secrets here")
}

// loopbackClient is the outbound client with 127.0.0.1 allowlisted.
func loopbackClient(t *testing.T) *http.Client {
	t.Helper()
	a, err := outbound.ParseAllowlist("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	return outbound.NewClient(outbound.Options{Allow: a, Timeout: 5 * time.Second, DialTimeout: time.Second})
}

// webhookAttempt makes attempt n (of max) of a call to url with a 300ms
// timeout.
func webhookAttempt(t *testing.T, url string, n, max int32) error {
	t.Helper()
	k := InvokeWebhook{Client: loopbackClient(t), Secrets: noSecrets{}}
	c := &webhookConfig{URL: url, Timeout: "300ms", MaxAttempts: int(max)}
	op := &engine.Op{Action: &engine.ActionType{ID: "a1", ActionDefinition: domain.ActionDefinition{Name: "sync"}}, Config: c,
		Actor: &models.User{ID: "u1", Username: "ann"}, Params: map[string]any{}, ExecutionID: "ex1"}
	_, err := k.Effect(engine.WithAttempt(context.Background(), n), op, "ex1")
	return err
}

// Every way an attempt can fail after the request left ends typed: a
// retry before the last attempt, WebhookFailed naming the attempts on the
// last one — never an untyped error that the workflow would record as
// Internal once Temporal's attempts are spent. An oversize answer is final
// at once (the same answer would come again).
func TestWebhookFailureShapesAreTyped(t *testing.T) {
	drip := loopback.HandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		for r.Context().Err() == nil {
			_, _ = w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	})
	late := loopback.HandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	})
	huge := loopback.HandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("a", webhookResponseMax+1)))
	})
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = nil
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	resetMidBody := loopback.RawServer(t, func(c *net.TCPConn) {
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nContent-Type: application/json\r\n\r\n{\"partial\":"))
		time.Sleep(50 * time.Millisecond)
		_ = c.SetLinger(0) // close with a reset
	})
	resetBeforeAnswer := loopback.RawServer(t, func(c *net.TCPConn) { _ = c.SetLinger(0) })

	cases := []struct {
		name, url string
		final     bool   // final at the first attempt
		want      string // in the final message
	}{
		{"body drips past the timeout", drip.URL + "/hook", false, "could not be read after 3 attempts"},
		{"reset mid-body", resetMidBody, false, "could not be read after 3 attempts"},
		{"no answer within the timeout", late.URL + "/hook", false, "could not be reached after 3 attempts"},
		{"reset before the answer", resetBeforeAnswer, false, "could not be reached after 3 attempts"},
		{"untrusted TLS certificate", tlsSrv.URL + "/hook", false, "could not be reached after 3 attempts"},
		{"oversize answer", huge.URL + "/hook", true, "larger than 1048576 bytes (attempt 1 of 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.final {
				for n := int32(1); n < 3; n++ {
					var rl *engine.RetryLater
					if err := webhookAttempt(t, tc.url, n, 3); !errors.As(err, &rl) {
						t.Fatalf("attempt %d of 3: %v (%T), want a retry", n, err, err)
					}
				}
			}
			last := int32(3)
			if tc.final {
				last = 1
			}
			err := webhookAttempt(t, tc.url, last, 3)
			var rl *engine.RetryLater
			if errors.As(err, &rl) {
				t.Fatalf("attempt %d of 3 asks for a retry: %v", last, err)
			}
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.WebhookFailed || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("attempt %d of 3: %v (%T), want WebhookFailed %q", last, err, err, tc.want)
			}
		})
	}
}
