package delivery

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/loopback"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications/senders"
	"github.com/ontoflow/ontoflow/outbound"
)

// chatTo is a remote channel posting each message with a chat sender to
// one URL, reporting as the Slack and Teams channels do.
type chatTo struct {
	name string
	s    senders.Sender
	url  string
}

func (c chatTo) Name() string { return c.name }

func (c chatTo) Deliver(ctx context.Context, msgs []Message, report func(int, Result)) {
	for i, m := range msgs {
		err := c.s.Send(ctx, c.url, senders.Message{Title: "t", Body: m.Body})
		report(i, Result{Err: err, Retryable: senders.Retryable(err)})
	}
}

// Every way a Slack or Teams post can fail ends as the channel's recorded
// delivery failure naming the attempts: a retry request before the step's
// last attempt, the recipient failed (and the side effect with it) on
// the last; a failure no retry mends is recorded at once, naming its
// attempt.
func TestChatFailureShapesAreRecorded(t *testing.T) {
	client := func() *http.Client {
		a, err := outbound.ParseAllowlist("127.0.0.1/32")
		if err != nil {
			t.Fatal(err)
		}
		return outbound.NewClient(outbound.Options{Allow: a, Timeout: 300 * time.Millisecond, DialTimeout: time.Second})
	}()
	late := loopback.HandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	})
	unavailableDrip := loopback.HandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusServiceUnavailable)
		for r.Context().Err() == nil {
			_, _ = w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	})
	badRequest := loopback.HandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("invalid_payload"))
	})
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = nil
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	resetMidBody := loopback.RawServer(t, func(c *net.TCPConn) {
		_, _ = c.Write([]byte("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 100\r\n\r\npartial"))
		time.Sleep(50 * time.Millisecond)
		_ = c.SetLinger(0)
	})
	resetBeforeAnswer := loopback.RawServer(t, func(c *net.TCPConn) { _ = c.SetLinger(0) })

	cases := []struct {
		name, url string
		final     bool // recorded on the first attempt
		want      string
	}{
		{"no answer within the timeout", late.URL + "/hook", false, "did not answer in time"},
		{"503 whose body drips", unavailableDrip.URL + "/hook", false, "503"},
		{"502 reset mid-body", resetMidBody, false, "502"},
		{"reset before the answer", resetBeforeAnswer, false, "could not be reached"},
		{"untrusted TLS certificate", tlsSrv.URL + "/hook", false, "certificate"},
		{"400", badRequest.URL + "/hook", true, "400"},
	}
	for _, sender := range []struct {
		name string
		s    senders.Sender
	}{{"slack", &senders.Slack{Client: client}}, {"teams", &senders.Teams{Client: client}}} {
		for _, tc := range cases {
			t.Run(sender.name+"/"+tc.name, func(t *testing.T) {
				ch := chatTo{name: sender.name, s: sender.s, url: tc.url}
				prog := &memProgress{}
				msgs := msgsTo("bob")
				last := int32(5)
				if tc.final {
					last = 1
				}
				for n := int32(1); n < last; n++ {
					ctx := WithDeliveryProgress(context.Background(), prog)
					var rd *RetryableDelivery
					if _, err := Remote(ctx, ch, msgs, n); !errors.As(err, &rd) {
						t.Fatalf("attempt %d: %v, want a retry", n, err)
					}
				}
				ctx := WithDeliveryProgress(context.Background(), prog)
				want := "failed on attempt 1, not retried: " + sender.name + ": "
				if !tc.final {
					ctx = WithFinalAttempt(ctx)
					want = "failed after 5 attempts: " + sender.name + ": "
				}
				recs, err := Remote(ctx, ch, msgs, last)
				if err != nil {
					t.Fatalf("attempt %d: %v, want the failure recorded", last, err)
				}
				out := Tally([]models.NotificationOutcome{{Index: 0, Channel: sender.name, Recipients: 1, Status: Delivered}}, msgs, recs)
				d := out[0].Deliveries
				if out[0].Status != Failed || len(d) != 1 || d[0].Status != Failed ||
					!strings.HasPrefix(d[0].Error, want) || !strings.Contains(d[0].Error, tc.want) {
					t.Fatalf("outcome %+v, want failed %q…%q", out[0], want, tc.want)
				}
			})
		}
	}
}
