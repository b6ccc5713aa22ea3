package telemetry

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// An outbound call's URL may hold a secret's value: a webhook URL with
// {{ secrets.X }} in its path or query, a Slack or Teams webhook URL that
// is itself a secret. What is recorded of the call — its span, its log
// lines, its execution or delivery record, the errors built from it —
// carries the URL as it was defined instead, each secret shown as
// [secret:NAME]. Only the caller that expanded the secrets knows that
// form, so it puts it in the request's context (WithShownURL); the
// tracing transport and the caller's own error handling read it there.

type shownURLKey struct{}

type shownURL struct {
	url    string
	redact func(string) string
}

// WithShownURL makes the outbound calls made with ctx record shown in
// place of the URL they are sent to. redact (nil: none) is applied to
// every URL and error text recorded of them, shown included, as a second
// line of defence: it replaces the values of the secrets the call
// expanded (secrets.Expander.Redact), wherever a form of the URL that
// shown does not stand for (a dial error naming a host, say) holds one.
// shown "" keeps the URL sent to, redacted.
func WithShownURL(ctx context.Context, shown string, redact func(string) string) context.Context {
	return context.WithValue(ctx, shownURLKey{}, shownURL{url: shown, redact: redact})
}

func shownOf(ctx context.Context) shownURL {
	s, _ := ctx.Value(shownURLKey{}).(shownURL)
	return s
}

func (s shownURL) apply(text string) string {
	if s.redact == nil {
		return text
	}
	return s.redact(text)
}

// ShownURL is the URL to record of a call to u made with ctx: the shown
// URL its context gives (WithShownURL), else u without user information;
// redacted either way.
func ShownURL(ctx context.Context, u *url.URL) string {
	s := shownOf(ctx)
	if s.url != "" {
		return s.apply(s.url)
	}
	if u == nil {
		return ""
	}
	bare := *u
	bare.User = nil
	return s.apply(bare.String())
}

// ErrorText is the text to record of err, the failure of a call made with
// ctx: net/http's *url.Error quotes the URL the request was sent to, which
// is replaced by the shown URL; then the text is redacted.
func ErrorText(ctx context.Context, err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" {
		shown := shownOf(ctx).url
		if shown == "" {
			shown = ue.URL // redacted below with the rest
		}
		// url.Error quotes with %q; a URL from url.URL.String is ASCII
		// without quotes, so the quoted and the bare forms differ only by
		// the quotes, but both are replaced in case a wrapper added its own.
		text = strings.ReplaceAll(text, strconv.Quote(ue.URL), strconv.Quote(shown))
		text = strings.ReplaceAll(text, ue.URL, shown)
	}
	return shownOf(ctx).apply(text)
}

// redactedError is a failed round trip whose text held a secret's value:
// its text redacted, the failure itself kept for errors.Is and As.
type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// Timeout and Temporary keep what url.Error (which asks its inner error
// by a type assertion, not errors.As) reports of a network failure.
func (e *redactedError) Timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}

func (e *redactedError) Temporary() bool {
	t, ok := e.err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}

// RedactError is err with its text redacted by ctx's redactor
// (WithShownURL), still matching what it matched for errors.Is and As;
// err itself, type and all, when its text holds nothing to redact.
func RedactError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	s := shownOf(ctx)
	if s.redact == nil {
		return err
	}
	if red := s.redact(err.Error()); red != err.Error() {
		return &redactedError{text: red, err: err}
	}
	return err
}

// redactHost is host as it may be recorded (server.address).
func redactHost(ctx context.Context, host string) string { return shownOf(ctx).apply(host) }
