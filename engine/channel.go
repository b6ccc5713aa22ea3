package engine

import (
	"context"

	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/notifications/delivery"
)

// A Channel delivers the notification side effects of successful
// executions on one medium (in-app, e-mail, Slack, Teams). This is all the
// engine knows of channels: the implementations live in
// notifications/channels (and the in-app one with the inbox, package
// notifications) and are chosen at assembly (Deps.Channels); a side effect naming a channel this
// process has none for is recorded skipped. The workflow runs one delivery
// step per channel an action uses, each recording its own outcomes on the
// execution; a delivery never fails the action, which has committed.
//
// A channel implements exactly one of TxChannel (its delivery is a write
// to the database, committed with the record of its outcome: exactly
// once) and RemoteChannel (its delivery leaves the process: it runs as a
// regular Temporal activity with bounded retries, outside any
// transaction, and is recorded after; at least once).
type Channel interface {
	Name() string
}

// TxChannel delivers inside the transaction that records the outcome:
// an error rolls both back and the step tries again.
type TxChannel interface {
	Channel
	DeliverTx(ctx context.Context, tx models.Tx, msgs []delivery.Message) error
}

// RemoteChannel delivers outside any transaction.
type RemoteChannel interface {
	Channel
	// Deliver (delivery.Sender) sends msgs and calls report once per message (by its index
	// in msgs) as soon as its result is known, so the step keeps its
	// progress even when its time runs out midway. A delivery.Result's Retryable
	// asks the step to try that delivery again (up to the step's
	// attempts) before recording it failed. Deliver stops when ctx ends;
	// a message it did not report is tried again. report is called from
	// Deliver's own goroutine, before Deliver returns.
	Deliver(ctx context.Context, msgs []delivery.Message, report func(i int, r delivery.Result))
}
