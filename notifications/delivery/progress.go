// Package delivery is what every notification channel and the engine's
// delivery step share: the rendered Message and a delivery's Result, the
// outcome statuses recorded on an execution, and the progress of a
// remote delivery across the attempts of its step (what was settled is
// not sent again). It knows no channel by name.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// Outcome statuses of a side effect or of one recipient's delivery.
const (
	Delivered = "delivered"
	Failed    = "failed"
	Skipped   = "skipped"
)

// Message is one rendered notification for one recipient: title, body and
// metadata rendered with what that recipient may read.
type Message struct {
	SideEffect   int // index in the action's notification_side_effects
	Effect       *domain.NotificationSideEffect
	Recipient    *models.User
	ExecutionID  string
	ActionTypeID string
	// ActionVersion is the version of the action type rendered: with
	// SideEffect and Recipient it names the message across attempts.
	ActionVersion int
	Title, Body   string
	Metadata      map[string]any
	// Settings are the recipient's notification settings (nil: none
	// stored), e.g. their own chat destinations.
	Settings *models.NotificationSettings
}

// Result is the outcome of delivering one message.
type Result struct {
	Err       error
	Retryable bool
	// Skipped says the message was not sent for a reason that is not a
	// failure (Err holds it): a recipient without an address.
	Skipped bool
	// RetryAfter is the wait the server asked for before another try
	// (Retry-After), 0 when none.
	RetryAfter time.Duration
}

// Sender is the delivering half of a remote channel (engine.RemoteChannel).
type Sender interface {
	// Deliver sends msgs and calls report once per message (by its index
	// in msgs) as soon as its result is known; see engine.RemoteChannel.
	Deliver(ctx context.Context, msgs []Message, report func(i int, r Result))
}

// maxDeliveryWait caps the wait a chat service's Retry-After may ask of a
// delivery step: a notification that arrives hours late has lost its
// point, and the step's attempts are few.
const maxDeliveryWait = 10 * time.Minute

// DeliveryProgress carries, from one attempt of a remote delivery step to
// the next, what earlier attempts settled (keyed by messageKey), so that
// a retry sends only what is left: a bounced address
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

// messageKey names a message across attempts: the action's version, its
// side effect and its recipient. Not what it says: an attempt renders
// again from the objects as they are then, and an edit between attempts
// must not make a delivered message look new.
func messageKey(m Message) string {
	id := ""
	if m.Recipient != nil {
		id = m.Recipient.ID
	}
	return strconv.Itoa(m.ActionVersion) + "/" + strconv.Itoa(m.SideEffect) + "/" + id
}

// deliveryMargin is the time a delivery attempt keeps back from its
// deadline to save its progress and answer: an attempt that times out
// loses the progress it had not yet reported.
const deliveryMargin = 15 * time.Second

// progressEvery spaces the saves of a step's progress while it sends.
const progressEvery = time.Second

// maxProgressError bounds a failure's text kept in a step's progress (its
// heartbeat details, which Temporal caps at 2 MB): hundreds of recipients
// each with a long answer excerpt must not outgrow it.
const maxProgressError = 200

// Remote sends the messages earlier attempts left unsettled (attempt is
// the step's, from 1) and returns each message's outcome, saving progress as each is settled. A
// retryable failure before the step's last attempt leaves its message
// unsettled and asks for another attempt (after the longest Retry-After
// its servers asked for); so does running out of time. On the last
// attempt what is still unsettled is recorded failed.
func Remote(ctx context.Context, remote Sender, msgs []Message, attempt int32) ([]models.RecipientOutcome, error) {
	prog := progressOf(ctx)
	done := prog.Load()
	var pending []Message
	for _, m := range msgs {
		if _, ok := done[messageKey(m)]; !ok {
			pending = append(pending, m)
		}
	}
	final := finalAttempt(ctx)
	var retry *RetryableDelivery
	if len(pending) > 0 {
		dctx, cancel := sendWindow(ctx)
		reported := make([]bool, len(pending))
		var saved time.Time
		remote.Deliver(dctx, pending, func(i int, r Result) {
			if i < 0 || i >= len(pending) || reported[i] {
				return
			}
			reported[i] = true
			if r.Err != nil && r.Retryable && !final {
				retry = retry.add(r.Err, r.RetryAfter)
				return
			}
			done[messageKey(pending[i])] = recipientOutcome(pending[i], r, attempt, final)
			// Each save encodes the whole map: at most one a second while
			// sending, and one at the end.
			if time.Since(saved) >= progressEvery {
				prog.Save(done)
				saved = time.Now()
			}
		})
		cancel()
		for i, m := range pending {
			if reported[i] {
				continue
			}
			err := errors.New("not sent: the delivery step's time ran out")
			if !final {
				retry = retry.add(err, 0)
				continue
			}
			done[messageKey(m)] = recipientOutcome(m, Result{Err: err}, attempt, final)
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

// sendWindow is ctx without the last deliveryMargin before its deadline
// (at most half of what is left).
func sendWindow(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(deliveryMargin, time.Until(deadline)/2)
	return context.WithDeadline(ctx, deadline.Add(-margin))
}

// recipientOutcome is m's outcome from r, settled on attempt (final: the
// step's last). A failure says on which attempt it was settled, first, so
// that clipping keeps it.
func recipientOutcome(m Message, r Result, attempt int32, final bool) models.RecipientOutcome {
	o := models.RecipientOutcome{Status: Delivered}
	if m.Recipient != nil {
		o.RecipientID = m.Recipient.ID
	}
	switch {
	case r.Err != nil && r.Skipped:
		o.Status, o.Error = Skipped, clip(r.Err.Error(), maxProgressError)
	case r.Err != nil:
		o.Status, o.Error = Failed, clip(settledOn(attempt, final)+r.Err.Error(), maxProgressError)
	}
	return o
}

// settledOn tells how many attempts a failed delivery had: all of them,
// or (a failure no retry can mend) the one that settled it.
func settledOn(attempt int32, final bool) string {
	if final {
		return fmt.Sprintf("failed after %d attempts: ", attempt)
	}
	return fmt.Sprintf("failed on attempt %d, not retried: ", attempt)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Tally folds the recipients' outcomes into their side effects' outcomes:
// a side effect failed when any recipient's delivery failed, skipped when
// every recipient was skipped, else delivered; each keeps its recipients'
// outcomes.
func Tally(outcomes []models.NotificationOutcome, msgs []Message, recs []models.RecipientOutcome) []models.NotificationOutcome {
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

// add notes one more retryable failure: the first error stands, the
// wait is the longest asked for (at most maxDeliveryWait).
func (r *RetryableDelivery) add(err error, wait time.Duration) *RetryableDelivery {
	if r == nil {
		r = &RetryableDelivery{Err: err}
	}
	r.Delay = min(max(r.Delay, wait), maxDeliveryWait)
	return r
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
