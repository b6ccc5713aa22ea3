// Package senders sends notifications to people outside Ontoflow: e-mail
// over SMTP, Slack incoming webhooks and Microsoft Teams Workflows
// webhooks. The chat senders post through the SSRF-guarded client of
// package outbound. Every failure is an *Error that says whether trying
// again may help (network trouble, 408, 429, 5xx, SMTP 4xx) or not (other
// 4xx, 3xx, SMTP 5xx, a refused address), and never carries the
// destination URL, which is a secret.
package senders

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ontoflow/ontoflow/outbound"
)

// Message is what every channel renders: a title and a plain-text body.
type Message struct {
	Title string
	Body  string
}

// Error is a failed delivery.
type Error struct {
	// Channel is "email", "slack" or "teams".
	Channel string
	// Retryable tells whether the same delivery may succeed later.
	Retryable bool
	// StatusCode is the HTTP status (or SMTP reply code), 0 when the
	// server never answered.
	StatusCode int
	// RetryAfter is the wait the server asked for (Retry-After), 0 when
	// none.
	RetryAfter time.Duration
	// Message says what happened, without the destination.
	Message string
	// Excerpt is the start of the server's answer (at most 512 bytes).
	Excerpt string
	Err     error
}

func (e *Error) Error() string {
	s := e.Channel + ": " + e.Message
	if e.Excerpt != "" {
		s += ": " + strconv.Quote(e.Excerpt)
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// AsError extracts an *Error from err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Retryable reports whether err is a delivery failure worth retrying.
func Retryable(err error) bool {
	e, ok := AsError(err)
	return ok && e.Retryable
}

// postJSON POSTs body to dest with client and classifies the outcome. The
// error text never holds dest.
func postJSON(ctx context.Context, client *http.Client, channel, dest string, body []byte) error {
	if _, err := outbound.CheckURL(dest); err != nil {
		return &Error{Channel: channel, Message: "the webhook URL is invalid: " + err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dest, bytes.NewReader(body))
	if err != nil {
		return &Error{Channel: channel, Message: "the webhook URL is invalid"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Ontoflow")
	res, err := client.Do(req)
	if err != nil {
		return transportError(channel, err)
	}
	defer outbound.Drain(res.Body)
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return nil
	}
	excerpt, _, _ := outbound.ReadBody(res.Body, 512)
	e := &Error{
		Channel:    channel,
		StatusCode: res.StatusCode,
		Retryable:  outbound.RetryableStatus(res.StatusCode),
		Message:    "the webhook answered " + res.Status,
		Excerpt:    strings.ToValidUTF8(string(excerpt), "?"),
	}
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
		e.RetryAfter = outbound.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
	}
	return e
}

// transportError describes a request that got no answer: refused by the
// guard or for its destination (permanent), or a network failure or
// timeout (retryable). The *url.Error around it, which holds the URL, is
// dropped.
func transportError(channel string, err error) error {
	var de *outbound.DestinationError
	if errors.As(err, &de) {
		return &Error{Channel: channel, Message: de.Error(), Err: de}
	}
	if errors.Is(err, outbound.ErrBlocked) {
		var be *outbound.BlockedError
		errors.As(err, &be)
		return &Error{Channel: channel, Message: be.Error(), Err: be}
	}
	inner := err
	for {
		u := errors.Unwrap(inner)
		if u == nil {
			break
		}
		inner = u
	}
	msg := "the webhook could not be reached"
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		msg = "the webhook did not answer in time"
	}
	return &Error{Channel: channel, Retryable: true, Message: msg + ": " + inner.Error(), Err: inner}
}

// truncate cuts s to at most max bytes on a rune boundary, ending with an
// ellipsis when it cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ell = "…"
	cut := max - len(ell)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if cut < 0 {
		cut = 0
	}
	return s[:cut] + ell
}

// truncateRunes cuts s to at most max runes, ending with an ellipsis when
// it cut.
func truncateRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

func errorf(channel string, format string, args ...any) *Error {
	return &Error{Channel: channel, Message: fmt.Sprintf(format, args...)}
}

// Sender delivers a message to one destination: Slack and Teams take a
// webhook URL (the resolved value of a secret reference).
type Sender interface {
	Send(ctx context.Context, dest string, m Message) error
}

var (
	_ Sender = (*Slack)(nil)
	_ Sender = (*Teams)(nil)
)
