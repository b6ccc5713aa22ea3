// Package channels holds the notification channels that leave the
// process: e-mail over SMTP (email.go), Slack and Microsoft Teams
// (chat.go), one file each. Each implements engine.RemoteChannel (Name and
// delivery.Sender) over a transport of package senders, so the engine
// runs each as its own activity with bounded retries, after success only,
// and records its outcome without ever failing the action. The in-app
// channel is package notifications' InApp. app/app.go's channels()
// registers them: a new channel is a new file here and a line there.
package channels

import (
	"github.com/ontoflow/ontoflow/notifications/delivery"
	"github.com/ontoflow/ontoflow/notifications/senders"
)

// result turns a sender's error into a Result; delivery errors never hold
// the destination.
func result(err error) delivery.Result {
	if err == nil {
		return delivery.Result{}
	}
	r := delivery.Result{Err: err, Retryable: senders.Retryable(err)}
	if e, ok := senders.AsError(err); ok {
		r.RetryAfter = e.RetryAfter
	}
	return r
}
