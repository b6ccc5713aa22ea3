package senders

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/mail"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// SMTP transport security, chosen by the URL (see ParseSMTPURL).
const (
	TLSStartTLS      = "starttls"      // STARTTLS required (the default)
	TLSOpportunistic = "opportunistic" // STARTTLS when offered, else plain
	TLSNone          = "none"          // plain text (a local relay)
	TLSImplicit      = "implicit"      // TLS from the first byte (smtps://)
)

// DefaultSMTPTimeout bounds connecting and each SMTP exchange.
const DefaultSMTPTimeout = 10 * time.Second

// SMTPConfig is where and how e-mail is sent.
type SMTPConfig struct {
	Host               string
	Port               int
	Username, Password string
	// TLS is one of TLSStartTLS, TLSOpportunistic, TLSNone, TLSImplicit.
	TLS string
	// From is the sender, "Name <address>" or an address.
	From string
	// Timeout bounds connecting and each exchange (0 = DefaultSMTPTimeout).
	Timeout time.Duration
	// TLSConfig overrides the TLS settings (tests: a private CA); its
	// ServerName defaults to Host.
	TLSConfig *tls.Config
}

// ParseSMTPURL reads --smtp-url:
//
//	smtp://user:pass@host:587            STARTTLS required (port default 587)
//	smtps://user:pass@host:465           TLS from the start (port default 465)
//	smtp://host:25?tls=opportunistic     STARTTLS when the server offers it
//	smtp://host:25?tls=none              no TLS at all (a relay on the same host)
//
// User and password are URL-encoded (%40 for @).
func ParseSMTPURL(raw, from string) (SMTPConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return SMTPConfig{}, errors.New("--smtp-url is not a URL")
	}
	c := SMTPConfig{Host: u.Hostname(), From: from}
	switch u.Scheme {
	case "smtp":
		c.TLS, c.Port = TLSStartTLS, 587
	case "smtps":
		c.TLS, c.Port = TLSImplicit, 465
	default:
		return SMTPConfig{}, fmt.Errorf("--smtp-url: scheme %q; use smtp:// or smtps://", u.Scheme)
	}
	if c.Host == "" {
		return SMTPConfig{}, errors.New("--smtp-url has no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return SMTPConfig{}, fmt.Errorf("--smtp-url: port %q", p)
		}
		c.Port = n
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	q := u.Query()
	for k := range q {
		if k != "tls" {
			return SMTPConfig{}, fmt.Errorf("--smtp-url: unknown parameter %q (only tls)", k)
		}
	}
	if t := q.Get("tls"); t != "" {
		if u.Scheme == "smtps" {
			return SMTPConfig{}, errors.New("--smtp-url: smtps:// is always TLS; tls= applies to smtp://")
		}
		if t != TLSStartTLS && t != TLSOpportunistic && t != TLSNone {
			return SMTPConfig{}, fmt.Errorf("--smtp-url: tls=%q; use starttls, opportunistic or none", t)
		}
		c.TLS = t
	}
	if from != "" {
		if _, err := mail.ParseAddress(from); err != nil {
			return SMTPConfig{}, fmt.Errorf("--smtp-from %q is not an address: %w", from, err)
		}
	}
	return c, nil
}

// RecipientResult is the outcome of the delivery to one address.
type RecipientResult struct {
	Address string `json:"address"`
	// Status is "sent" or "failed".
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Retryable is set on a failure that may pass later (SMTP 4xx,
	// network).
	Retryable bool `json:"retryable,omitempty"`
}

// Mailer sends e-mail over SMTP.
type Mailer struct {
	cfg SMTPConfig
	// Tracer, when set, records a client span for each SMTP session, as
	// the outbound HTTP transport does for webhooks, Slack and Teams
	// (nil: tracing is off).
	Tracer trace.Tracer
}

// NewMailer checks cfg and returns a Mailer.
func NewMailer(cfg SMTPConfig) (*Mailer, error) {
	if cfg.Host == "" || cfg.Port == 0 {
		return nil, errors.New("smtp: host and port are required")
	}
	if _, err := mail.ParseAddress(cfg.From); err != nil {
		return nil, fmt.Errorf("smtp: sender %q is not an address: %w", cfg.From, err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultSMTPTimeout
	}
	return &Mailer{cfg: cfg}, nil
}

func (m *Mailer) client() (*gomail.Client, error) {
	c := m.cfg
	tc := c.TLSConfig
	if tc == nil {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
	} else {
		tc = tc.Clone()
	}
	if tc.ServerName == "" {
		tc.ServerName = c.Host
	}
	opts := []gomail.Option{gomail.WithPort(c.Port), gomail.WithTimeout(c.Timeout), gomail.WithTLSConfig(tc)}
	switch c.TLS {
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	case TLSOpportunistic:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if c.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(c.Username), gomail.WithPassword(c.Password))
	}
	return gomail.NewClient(c.Host, opts...)
}

// Send delivers msg to each address of to as its own message (recipients
// do not see each other, and one refused address does not stop the
// rest), over one connection. It returns a result per address, in order;
// the error is set when the server could not be used at all (every
// result is then failed with it): unreachable, TLS or authentication
// refused.
func (m *Mailer) Send(ctx context.Context, to []string, msg Message) ([]RecipientResult, error) {
	if m.Tracer == nil {
		return m.send(ctx, to, msg)
	}
	ctx, span := m.Tracer.Start(ctx, "SMTP send outbound", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("server.address", m.cfg.Host), attribute.Int("server.port", m.cfg.Port),
			attribute.Int("ontoflow.smtp.recipients", len(to))))
	defer span.End()
	results, err := m.send(ctx, to, msg)
	traceOutcome(span, results, err)
	return results, err
}

// traceOutcome marks span failed when the session failed or a message
// was not sent. Its description never holds an address: a trace is read
// by operators, not by the recipients' owners.
func traceOutcome(span trace.Span, results []RecipientResult, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return
	}
	failed := 0
	for _, r := range results {
		if r.Status != "sent" {
			failed++
		}
	}
	if failed > 0 {
		span.SetStatus(codes.Error, fmt.Sprintf("%d of %d messages not sent", failed, len(results)))
	}
}

func (m *Mailer) send(ctx context.Context, to []string, msg Message) ([]RecipientResult, error) {
	results := make([]RecipientResult, len(to))
	var msgs []*gomail.Msg
	var idx []int
	for i, addr := range to {
		results[i] = RecipientResult{Address: addr, Status: "failed"}
		gm, err := m.message(addr, msg)
		if err != nil {
			results[i].Error = err.Error()
			continue
		}
		msgs, idx = append(msgs, gm), append(idx, i)
	}
	if len(msgs) == 0 {
		return results, nil
	}
	c, err := m.client()
	if err != nil {
		return failAll(results, idx, smtpError(err, "set up the SMTP client"))
	}
	if err := c.DialWithContext(ctx); err != nil {
		return failAll(results, idx, smtpError(err, "connect to the SMTP server"))
	}
	defer c.Close()
	for k, gm := range msgs {
		r := &results[idx[k]]
		if ctx.Err() != nil {
			// The caller's time is up: what is left is for its next try.
			e := smtpError(ctx.Err(), "send")
			r.Error, r.Retryable = e.Error(), true
			continue
		}
		if err := c.Send(gm); err != nil {
			e := smtpError(err, "send")
			r.Error, r.Retryable = e.Error(), e.Retryable
			continue
		}
		r.Status, r.Error = "sent", ""
	}
	return results, nil
}

func failAll(results []RecipientResult, idx []int, e *Error) ([]RecipientResult, error) {
	for _, i := range idx {
		results[i].Error, results[i].Retryable = e.Error(), e.Retryable
	}
	return results, e
}

// message builds the mail to one address: a plain-text part and an HTML
// part with the same title and body.
func (m *Mailer) message(to string, msg Message) (*gomail.Msg, error) {
	addr, err := mail.ParseAddress(to)
	if err != nil {
		return nil, errorf("email", "%q is not an e-mail address", to)
	}
	gm := gomail.NewMsg()
	if err := gm.From(m.cfg.From); err != nil {
		return nil, errorf("email", "sender: %v", err)
	}
	if err := gm.To(addr.String()); err != nil {
		return nil, errorf("email", "%q is not an e-mail address", to)
	}
	// A subject is one line: line breaks in a title must not start
	// headers of their own.
	gm.Subject(oneLine(msg.Title))
	gm.SetDate()
	gm.SetMessageID()
	gm.SetBodyString(gomail.TypeTextPlain, PlainText(msg))
	h, err := HTML(msg)
	if err != nil {
		return nil, err
	}
	gm.AddAlternativeString(gomail.TypeTextHTML, h)
	return gm, nil
}

// PlainText is the text part of a notification e-mail.
func PlainText(msg Message) string {
	return strings.TrimSpace(msg.Body) + "\n"
}

var htmlTemplate = template.Must(template.New("mail").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body style="font-family: sans-serif">
<h2>{{.Title}}</h2>
{{range .Paragraphs}}<p>{{range $i, $l := .}}{{if $i}}<br>{{end}}{{$l}}{{end}}</p>
{{end}}</body></html>
`))

// HTML is the HTML part of a notification e-mail: the title as a heading,
// the body's paragraphs (split at blank lines) with their line breaks,
// everything escaped.
func HTML(msg Message) (string, error) {
	var paras [][]string
	for _, p := range strings.Split(strings.ReplaceAll(strings.TrimSpace(msg.Body), "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			paras = append(paras, strings.Split(p, "\n"))
		}
	}
	var b bytes.Buffer
	err := htmlTemplate.Execute(&b, struct {
		Title      string
		Paragraphs [][]string
	}{oneLine(msg.Title), paras})
	if err != nil {
		return "", fmt.Errorf("render e-mail: %w", err)
	}
	return b.String(), nil
}

// oneLine joins the lines of a title, as a subject and a heading are one
// line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// smtpError classifies an SMTP failure: network trouble and 4xx replies
// may pass later; 5xx replies, TLS and authentication refusals will not.
func smtpError(err error, doing string) *Error {
	e := &Error{Channel: "email", Message: doing + ": " + err.Error(), Err: err}
	var se *gomail.SendError
	var te *textproto.Error
	var ne net.Error
	switch {
	case errors.As(err, &se):
		e.Retryable, e.StatusCode = se.IsTemp(), se.ErrorCode()
		if e.StatusCode == 0 && errors.As(err, &ne) {
			e.Retryable = true
		}
	case errors.As(err, &te):
		e.Retryable, e.StatusCode = te.Code >= 400 && te.Code < 500, te.Code
	case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded):
		e.Retryable = true
	default:
		var oe *net.OpError
		e.Retryable = errors.As(err, &oe)
	}
	return e
}
