package delivery

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/models"
)

// flaky is a remote channel that exists only in this test: it refuses
// some recipients with a retryable error (asking for a wait) a number of
// times, and logs every message it is handed.
type flaky struct {
	refuse map[string]int // username → retryable refusals left
	hang   string         // a username whose delivery never answers
	sent   [][]string     // usernames handed over, per call
}

func (f *flaky) Name() string { return "slack" }

func (f *flaky) Deliver(ctx context.Context, msgs []Message, report func(int, Result)) {
	var call []string
	defer func() { f.sent = append(f.sent, call) }()
	for i, m := range msgs {
		call = append(call, m.Recipient.Username)
		if m.Recipient.Username == f.hang {
			<-ctx.Done() // a server that never answers: the step's time runs out
			return
		}
		if f.refuse[m.Recipient.Username] > 0 {
			f.refuse[m.Recipient.Username]--
			report(i, Result{Err: errors.New("429 slow down"), Retryable: true, RetryAfter: 3 * time.Second})
			continue
		}
		report(i, Result{})
	}
}

// memProgress stands in for the step's heartbeat details.
type memProgress struct {
	m map[string]models.RecipientOutcome
}

func (p *memProgress) Load() map[string]models.RecipientOutcome {
	out := map[string]models.RecipientOutcome{}
	for k, v := range p.m {
		out[k] = v
	}
	return out
}
func (p *memProgress) Save(m map[string]models.RecipientOutcome) { p.m = m }

func msgsTo(names ...string) []Message {
	var out []Message
	for _, n := range names {
		out = append(out, Message{SideEffect: 0, Recipient: &models.User{ID: "id-" + n, Username: n}})
	}
	return out
}

// A retry of a delivery step sends only what earlier attempts left
// unsettled: the recipient already delivered is not sent twice; the wait
// a server asked for rides on the retry request; each recipient's outcome
// is recorded.
func TestRemoteDeliveryRetriesOnlyWhatIsLeft(t *testing.T) {
	ch := &flaky{refuse: map[string]int{"bob": 1}}
	ctx := WithDeliveryProgress(context.Background(), &memProgress{})
	msgs := msgsTo("alice", "bob")
	_, err := Remote(ctx, ch, msgs, 1)
	var rd *RetryableDelivery
	if !errors.As(err, &rd) || rd.Delay != 3*time.Second {
		t.Fatalf("first attempt: %v, want a RetryableDelivery after 3s", err)
	}
	recs, err := Remote(ctx, ch, msgs, 1)
	if err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	if len(ch.sent) != 2 || len(ch.sent[1]) != 1 || ch.sent[1][0] != "bob" {
		t.Fatalf("sent %v: the second attempt must hand over bob only", ch.sent)
	}
	out := Tally([]models.NotificationOutcome{{Index: 0, Channel: "slack", Recipients: 2, Status: Delivered}}, msgs, recs)
	if out[0].Status != Delivered || len(out[0].Deliveries) != 2 ||
		out[0].Deliveries[0].RecipientID != "id-alice" || out[0].Deliveries[1].Status != Delivered {
		t.Errorf("outcome %+v", out[0])
	}
}

// On the last attempt a recipient still failing is recorded failed (the
// side effect with it) and the others keep their delivered outcome.
func TestRemoteDeliveryLastAttemptRecordsFailures(t *testing.T) {
	ch := &flaky{refuse: map[string]int{"bob": 99}}
	ctx := WithDeliveryProgress(context.Background(), &memProgress{})
	msgs := msgsTo("alice", "bob")
	if _, err := Remote(ctx, ch, msgs, 1); err == nil {
		t.Fatal("first attempt: want a retry")
	}
	recs, err := Remote(WithFinalAttempt(ctx), ch, msgs, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := Tally([]models.NotificationOutcome{{Index: 0, Channel: "slack", Recipients: 2, Status: Delivered}}, msgs, recs)
	d := out[0].Deliveries
	if out[0].Status != Failed || len(d) != 2 || d[0].Status != Delivered || d[1].Status != Failed || d[1].Error == "" {
		t.Errorf("outcome %+v", out[0])
	}
	if len(ch.sent) != 2 || len(ch.sent[1]) != 1 {
		t.Errorf("sent %v: alice was delivered on the first attempt", ch.sent)
	}
}

// An attempt whose time runs out midway keeps what it settled: it stops
// before its deadline (keeping a margin to save progress and answer),
// asks for a retry, and the next attempt sends only what was left. On the
// last attempt what is left is recorded failed.
func TestRemoteDeliveryStopsBeforeItsDeadline(t *testing.T) {
	ch := &flaky{hang: "bob"}
	prog := &memProgress{}
	base := WithDeliveryProgress(context.Background(), prog)
	msgs := msgsTo("alice", "bob", "carol")
	ctx, cancel := context.WithTimeout(base, 300*time.Millisecond)
	defer cancel()
	_, err := Remote(ctx, ch, msgs, 1)
	var rd *RetryableDelivery
	if !errors.As(err, &rd) || ctx.Err() != nil {
		t.Fatalf("attempt cut short: %v (ctx %v), want a RetryableDelivery before the deadline", err, ctx.Err())
	}
	if len(prog.m) != 1 {
		t.Fatalf("progress %v: alice's delivery must be kept", prog.m)
	}
	ch.hang = ""
	recs, err := Remote(base, ch, msgs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.sent) != 2 || len(ch.sent[1]) != 2 || ch.sent[1][0] != "bob" || ch.sent[1][1] != "carol" {
		t.Fatalf("sent %v: the second attempt hands over bob and carol only", ch.sent)
	}
	for i, r := range recs {
		if r.Status != Delivered {
			t.Errorf("recipient %d: %+v", i, r)
		}
	}

	ch2, prog2 := &flaky{hang: "bob"}, &memProgress{}
	ctx2, cancel2 := context.WithTimeout(WithFinalAttempt(WithDeliveryProgress(context.Background(), prog2)), 300*time.Millisecond)
	defer cancel2()
	recs, err = Remote(ctx2, ch2, msgs, 1)
	if err != nil || recs[0].Status != Delivered || recs[1].Status != Failed || recs[2].Status != Failed {
		t.Errorf("last attempt cut short: %+v, %v; want alice delivered, bob and carol failed", recs, err)
	}
}
