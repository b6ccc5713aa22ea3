package engine

import (
	"context"
	"strconv"
	"time"

	"github.com/ontoflow/ontoflow/models"
)

// maxDeliveryWait caps the wait a chat service's Retry-After may ask of a
// delivery step: a notification that arrives hours late has lost its
// point, and the step's attempts are few.
const maxDeliveryWait = 10 * time.Minute

// DeliveryProgress carries, from one attempt of a remote delivery step to
// the next, what earlier attempts settled (keyed by side effect and
// recipient), so that a retry sends only what is left: a bounced address
// or one failing destination does not send the others' messages again.
// The activity layer keeps it in the step's heartbeat details; without
// one (a test calling the engine) nothing carries over.
type DeliveryProgress interface {
	Load() map[string]models.RecipientOutcome
	Save(map[string]models.RecipientOutcome)
}

type progressKey struct{}

// WithDeliveryProgress gives a delivery step the progress of its earlier
// attempts.
func WithDeliveryProgress(ctx context.Context, p DeliveryProgress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

type noProgress struct{}

func (noProgress) Load() map[string]models.RecipientOutcome {
	return map[string]models.RecipientOutcome{}
}
func (noProgress) Save(map[string]models.RecipientOutcome) {}

func progressOf(ctx context.Context) DeliveryProgress {
	if p, ok := ctx.Value(progressKey{}).(DeliveryProgress); ok {
		return p
	}
	return noProgress{}
}

// messageKey names a message across attempts: its side effect and its
// recipient (a side effect renders one message per recipient).
func messageKey(m Message) string {
	id := ""
	if m.Recipient != nil {
		id = m.Recipient.ID
	}
	return strconv.Itoa(m.SideEffect) + "/" + id
}

// deliverRemote sends the messages earlier attempts left unsettled and
// returns each message's outcome. A retryable failure before the step's
// last attempt leaves its message unsettled and asks for another attempt
// (after the longest Retry-After its servers asked for); on the last
// attempt it is recorded failed.
func deliverRemote(ctx context.Context, remote RemoteChannel, msgs []Message) ([]models.RecipientOutcome, error) {
	prog := progressOf(ctx)
	done := prog.Load()
	var pending []Message
	for _, m := range msgs {
		if _, ok := done[messageKey(m)]; !ok {
			pending = append(pending, m)
		}
	}
	var retry *RetryableDelivery
	if len(pending) > 0 {
		final := finalAttempt(ctx)
		for i, r := range remote.Deliver(ctx, pending) {
			if r.Err != nil && r.Retryable && !final {
				if retry == nil {
					retry = &RetryableDelivery{Err: r.Err}
				}
				retry.Delay = min(max(retry.Delay, r.RetryAfter), maxDeliveryWait)
				continue
			}
			done[messageKey(pending[i])] = recipientOutcome(pending[i], r)
		}
		prog.Save(done)
	}
	if retry != nil {
		return nil, retry
	}
	out := make([]models.RecipientOutcome, len(msgs))
	for i, m := range msgs {
		out[i] = done[messageKey(m)]
	}
	return out, nil
}

func recipientOutcome(m Message, r Result) models.RecipientOutcome {
	o := models.RecipientOutcome{Status: Delivered}
	if m.Recipient != nil {
		o.RecipientID, o.Username = m.Recipient.ID, m.Recipient.Username
	}
	switch {
	case r.Err != nil && r.Skipped:
		o.Status, o.Error = Skipped, r.Err.Error()
	case r.Err != nil:
		o.Status, o.Error = Failed, r.Err.Error()
	}
	return o
}

// tally folds the recipients' outcomes into their side effects' outcomes:
// a side effect failed when any recipient's delivery failed, skipped when
// every recipient was skipped, else delivered; each keeps its recipients'
// outcomes.
func tally(outcomes []models.NotificationOutcome, msgs []Message, recs []models.RecipientOutcome) []models.NotificationOutcome {
	per := map[int][]models.RecipientOutcome{}
	for i, r := range recs {
		per[msgs[i].SideEffect] = append(per[msgs[i].SideEffect], r)
	}
	for i := range outcomes {
		o := &outcomes[i]
		if o.Status != Delivered {
			continue
		}
		o.Deliveries = per[o.Index]
		failed, skipped := "", ""
		sent := false
		for _, r := range o.Deliveries {
			switch r.Status {
			case Failed:
				if failed == "" {
					failed = r.Error
				}
			case Skipped:
				skipped = r.Error
			default:
				sent = true
			}
		}
		if failed != "" {
			o.Status, o.Error = Failed, failed
		} else if skipped != "" && !sent {
			o.Status, o.Error = Skipped, skipped
		}
	}
	return outcomes
}

// RetryableDelivery asks for another attempt of a remote delivery, after
// Delay when a server asked for one (Retry-After). On its last attempt
// (WithFinalAttempt) failures are recorded instead.
type RetryableDelivery struct {
	Err   error
	Delay time.Duration
}

func (r *RetryableDelivery) Error() string { return "delivery failed, will retry: " + r.Err.Error() }
func (r *RetryableDelivery) Unwrap() error { return r.Err }

type finalKey struct{}

// WithFinalAttempt tells Deliver that the step will not be tried again:
// record failures rather than ask for a retry.
func WithFinalAttempt(ctx context.Context) context.Context {
	return context.WithValue(ctx, finalKey{}, true)
}

func finalAttempt(ctx context.Context) bool { b, _ := ctx.Value(finalKey{}).(bool); return b }
