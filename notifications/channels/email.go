package channels

import (
	"context"
	"errors"
	"regexp"

	"github.com/ontoflow/ontoflow/notifications/delivery"
	"github.com/ontoflow/ontoflow/notifications/senders"
)

// Email sends each recipient their own message at the address on their
// account; a recipient without one is skipped with the reason.
type Email struct {
	Mailer *senders.Mailer
}

var _ delivery.Sender = (*Email)(nil)

// Name implements engine.Channel.
func (*Email) Name() string { return "email" }

// Deliver implements engine.RemoteChannel: messages rendered alike go out
// in one SMTP session, one mail per address (recipients never see each
// other).
func (e *Email) Deliver(ctx context.Context, msgs []delivery.Message, report func(int, delivery.Result)) {
	groups := map[senders.Message][]int{}
	var order []senders.Message
	for i, m := range msgs {
		if m.Recipient == nil || m.Recipient.Email == "" {
			report(i, delivery.Result{Skipped: true, Err: errors.New("recipient has no e-mail address")})
			continue
		}
		dm := senders.Message{Title: m.Title, Body: m.Body}
		if _, ok := groups[dm]; !ok {
			order = append(order, dm)
		}
		groups[dm] = append(groups[dm], i)
	}
	for _, dm := range order {
		if ctx.Err() != nil {
			return
		}
		idx := groups[dm]
		to := make([]string, len(idx))
		for k, i := range idx {
			to[k] = msgs[i].Recipient.Email
		}
		rs, err := e.Mailer.Send(ctx, to, dm)
		for k, i := range idx {
			report(i, unaddressed(mailResult(rs, k, err), to))
		}
	}
}

// unaddressed takes the addresses out of a failure's text (SMTP errors
// quote them): the record of a delivery is read by the action's actor,
// who need not learn recipients' addresses.
func unaddressed(r delivery.Result, addrs []string) delivery.Result {
	if r.Err == nil {
		return r
	}
	msg := r.Err.Error()
	for _, a := range addrs {
		// Servers may echo an address in another case.
		msg = regexp.MustCompile(`(?i)`+regexp.QuoteMeta(a)).ReplaceAllLiteralString(msg, "<address>")
	}
	r.Err = errors.New(msg)
	return r
}

func mailResult(rs []senders.RecipientResult, k int, err error) delivery.Result {
	if k < len(rs) && rs[k].Status == "sent" {
		return delivery.Result{}
	}
	if k < len(rs) && rs[k].Error != "" {
		return delivery.Result{Err: errors.New(rs[k].Error), Retryable: rs[k].Retryable}
	}
	if err != nil {
		return result(err)
	}
	return delivery.Result{Err: errors.New("not sent")}
}
