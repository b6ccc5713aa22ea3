package invokewebhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/outbound"
	"github.com/ontoflow/ontoflow/secrets"
	"github.com/ontoflow/ontoflow/telemetry"
)

// Call is the record of a webhook's effect step: what was sent
// and what came back, with every resolved secret redacted. It is the
// step's result, so it is in the workflow's history and on the execution:
// it never holds a secret's value.
type Call struct {
	Method     string            `json:"method"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       string            `json:"body,omitempty"`
	StatusCode int               `json:"status_code,omitempty"`
	Excerpt    string            `json:"response_excerpt,omitempty"`
	Attempts   int32             `json:"attempts,omitempty"`
	DurationMS int64             `json:"duration_ms"`
	Mapped     map[string]any    `json:"mapped,omitempty"`
	// Preview marks a what-if's call: built, shown, never sent.
	Preview bool `json:"preview,omitempty"`
	// SignedWith, in a preview, names the secret the call would be signed
	// with (Standard Webhooks headers, added when it is sent).
	SignedWith string `json:"signed_with,omitempty"`
}

// webhookRequest is a built request before it is sent.
type webhookRequest struct {
	method, url string
	header      http.Header
	body        []byte
}

// Effect implements EffectKind: one attempt of the call. key (the
// execution id) is its Idempotency-Key and webhook-id on every attempt.
// A call that ends with it (no retry follows) is counted settled.
func (k InvokeWebhook) Effect(ctx context.Context, op *engine.Op, key string) (json.RawMessage, error) {
	res, err := k.attempt(ctx, op, key)
	engine.WebhookSettled(ctx, err)
	return res, err
}

// attempt makes one attempt of the call.
func (k InvokeWebhook) attempt(ctx context.Context, op *engine.Op, key string) (json.RawMessage, error) {
	if k.Client == nil || k.Secrets == nil {
		return nil, engine.NotSupported(domain.KindInvokeWebhook)
	}
	c := op.Config.(*webhookConfig)
	x := secrets.NewExpander(k.Secrets)
	req, err := buildWebhook(ctx, c, op, x, key)
	if err != nil {
		return nil, err
	}
	if ctx, err = k.restrictToSecrets(ctx, x); err != nil {
		return nil, err
	}
	// The call's span, record and errors show the URL as defined, each
	// secret by name; x.Redact catches a value in any other form.
	ctx = telemetry.WithShownURL(ctx, shownURL(ctx, c, op), x.Redact)
	attempt := engine.Attempt(ctx)
	call := &Call{Method: req.method, URL: telemetry.ShownURL(ctx, nil), Attempts: attempt}
	start := time.Now()
	resp, err := k.send(ctx, req, c.timeout())
	call.DurationMS = time.Since(start).Milliseconds()
	engine.WebhookAnswered(ctx, statusOf(resp), time.Since(start))
	if err != nil {
		return nil, k.sendFailure(ctx, err, attempt, c.attempts())
	}
	defer outbound.Drain(resp.Body)
	body, oversize, rerr := outbound.ReadBody(resp.Body, webhookResponseMax)
	call.StatusCode = resp.StatusCode
	call.Excerpt = excerpt(x.Redact(string(body)))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusFailure(resp, call, attempt, c.attempts())
	}
	if rerr != nil {
		return nil, readFailure(ctx, rerr, call, attempt, c.attempts())
	}
	if oversize {
		// Final at once: the receiver would send the same answer again.
		return nil, apperr.New(apperr.WebhookFailed, "the webhook's answer is larger than %d bytes (attempt %d of %d, not tried again)",
			webhookResponseMax, attempt, c.attempts()).WithData(map[string]any{"webhook": call})
	}
	if call.Mapped, err = mapResponse(body, c.ResponseMappings); err != nil {
		return nil, err
	}
	return json.Marshal(call)
}

// PreviewEffect implements EffectPreviewer: the request that would be
// sent, secrets shown as references, nothing sent. A signed webhook is
// not signed (a placeholder is no key): SignedWith names its secret.
func (k InvokeWebhook) PreviewEffect(ctx context.Context, op *engine.Op) (json.RawMessage, error) {
	c := op.Config.(*webhookConfig)
	x := secrets.NewExpander(placeholderSecrets{})
	unsigned := *c
	unsigned.SigningSecret = ""
	req, err := buildWebhook(ctx, &unsigned, op, x, op.ExecutionID)
	if err != nil {
		return nil, err
	}
	call := &Call{Method: req.method, URL: req.url, Headers: previewHeaders(c, req.header), Body: string(req.body), Preview: true}
	if c.SigningSecret != "" {
		call.SignedWith = secrets.Refs(c.SigningSecret)[0]
	}
	return json.Marshal(call)
}

// previewHeaders are the headers a preview shows. The preview is stored
// with the branch and shown to whoever may run the action, who may not see
// the configured values: those are redacted by the definition view's rule
// (RedactHeaders), never copied as rendered. Headers the engine adds
// itself (Idempotency-Key, webhook-id, a default Content-Type) carry no
// configured value and stay.
func previewHeaders(c *webhookConfig, rendered http.Header) map[string]string {
	out := map[string]string{}
	for h := range rendered {
		out[h] = rendered.Get(h)
	}
	for h, v := range RedactHeaders(c.Headers, domain.RedactedValue, placeholderRef) {
		out[http.CanonicalHeaderKey(h)] = v
	}
	return out
}

func placeholderRef(name string) string { return secrets.Placeholder(name) }

// shownURL is c's URL as a record may show it: rendered with op's
// parameters, each secret as its placeholder (as a preview shows it), so
// that no value is read to build it. A URL that does not render shows
// as its template.
func shownURL(ctx context.Context, c *webhookConfig, op *engine.Op) string {
	u, err := renderRefs(ctx, c.URL, webhookScope(op), secrets.NewExpander(placeholderSecrets{}), urlEscape)
	if err != nil {
		return c.URL
	}
	return u
}

// placeholderSecrets resolves every secret to its own reference, for a
// preview that must show where a secret goes without reading it.
type placeholderSecrets struct{}

func (placeholderSecrets) Resolve(_ context.Context, name string) (string, error) {
	return placeholderRef(name), nil
}

// send makes one attempt, bounded by timeout.
func (k InvokeWebhook) send(ctx context.Context, r *webhookRequest, timeout time.Duration) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, bytes.NewReader(r.body))
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header = r.header
	resp, err := k.Client.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

// sendFailure classifies a failed attempt that got no answer: refused by
// the outbound guard is final; network trouble and timeouts retry. The
// message names the URL as ctx shows it (net/http's error quotes the URL
// as sent).
func (k InvokeWebhook) sendFailure(ctx context.Context, err error, attempt, max int32) error {
	msg := telemetry.ErrorText(ctx, err)
	if f := destinationFailure(err); f != nil {
		return f
	}
	if errors.Is(err, outbound.ErrBlocked) {
		return apperr.New(apperr.WebhookFailed, "the webhook's address is refused by the outbound guard (see --outbound-allow): %s", msg)
	}
	if attempt >= max {
		return apperr.New(apperr.WebhookFailed, "the webhook could not be reached after %d attempts: %s", attempt, msg)
	}
	return &engine.RetryLater{Err: errors.New("the webhook could not be reached: " + msg), Delay: backoff(attempt)}
}

// readFailure classifies an answer whose body could not be read to its
// end (the connection reset, or the attempt's time ran out mid-body):
// tried again as a connection error is, and typed on the last attempt.
func readFailure(ctx context.Context, err error, call *Call, attempt, max int32) error {
	why := telemetry.ErrorText(ctx, err)
	if errors.Is(err, context.DeadlineExceeded) {
		why = "the answer did not arrive in time (" + why + ")"
	}
	if attempt >= max {
		return apperr.New(apperr.WebhookFailed, "the webhook answered %d but its answer could not be read after %d attempts: %s", call.StatusCode, attempt, why).
			WithData(map[string]any{"webhook": call})
	}
	return &engine.RetryLater{Err: fmt.Errorf("read the webhook's answer: %s", why), Delay: backoff(attempt)}
}

// statusFailure classifies a non-2xx answer: 408, 429 and 5xx retry
// (honouring Retry-After) until the attempts are spent; others are final.
func statusFailure(resp *http.Response, call *Call, attempt, max int32) error {
	final := apperr.New(apperr.WebhookFailed, "the webhook answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)).
		WithData(map[string]any{"webhook": call})
	if !outbound.RetryableStatus(resp.StatusCode) || attempt >= max {
		return final
	}
	d := max64(backoff(attempt), outbound.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
	return &engine.RetryLater{Err: final, Delay: d}
}

// statusOf is resp's status (0: no answer).
func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

func max64(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// backoff is the wait after attempt: exponential from one second, capped,
// with full jitter over its upper half so retries of many executions
// spread out.
func backoff(attempt int32) time.Duration {
	d := webhookInitialBackoff << min(attempt-1, 10)
	d = min(d, webhookMaxBackoff)
	return d/2 + rand.N(d/2+1)
}

func excerpt(s string) string {
	if len(s) <= webhookExcerptMax {
		return s
	}
	return strings.ToValidUTF8(s[:webhookExcerptMax], "")
}

// mapResponse reads the members response_mappings name from a JSON answer.
// A member that is absent maps nothing; an answer that is not JSON while
// mappings are configured fails the action.
func mapResponse(body []byte, ms []responseMapping) (map[string]any, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, apperr.New(apperr.WebhookFailed, "the webhook's answer is not JSON, so response_mappings cannot read it: %v", err)
	}
	out := map[string]any{}
	for _, m := range ms {
		if v, ok := lookupPath(doc, m.Path); ok {
			out[m.Property] = v
		}
	}
	return out, nil
}

func lookupPath(doc any, path string) (any, bool) {
	cur := doc
	for _, part := range strings.Split(strings.TrimPrefix(path, "$."), ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// buildWebhook renders the request of c for op. Templates and secret
// references are resolved in one pass over the config's own text, so a
// parameter value that looks like a reference stays text.
func buildWebhook(ctx context.Context, c *webhookConfig, op *engine.Op, x *secrets.Expander, key string) (*webhookRequest, error) {
	scope := webhookScope(op)
	r := &webhookRequest{method: c.method(), header: http.Header{}}
	var err error
	if r.url, err = renderRefs(ctx, c.URL, scope, x, urlEscape); err != nil {
		return nil, err
	}
	if _, err := url.ParseRequestURI(r.url); err != nil {
		// The parser's *url.Error quotes the rendered URL, secrets and
		// all: the reason alone is told.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, apperr.New(apperr.WebhookFailed, "the webhook url does not parse once rendered: %s", x.Redact(err.Error()))
	}
	for h, v := range c.Headers {
		s, err := renderRefs(ctx, v, scope, x, headerEscape)
		if err != nil {
			return nil, err
		}
		r.header.Set(h, s)
	}
	if r.body, err = webhookBody(ctx, c, scope, x); err != nil {
		return nil, err
	}
	if r.header.Get("Content-Type") == "" && len(r.body) > 0 {
		r.header.Set("Content-Type", "application/json")
	}
	r.header.Set("Idempotency-Key", key)
	return r, signWebhook(ctx, c, r, x, key)
}

// signWebhook adds the Standard Webhooks headers (webhook-id always;
// timestamp and signature with a signing secret).
func signWebhook(ctx context.Context, c *webhookConfig, r *webhookRequest, x *secrets.Expander, key string) error {
	r.header.Set("webhook-id", key)
	if c.SigningSecret == "" {
		return nil
	}
	secret, err := x.Resolve(ctx, secrets.Refs(c.SigningSecret)[0])
	if err != nil {
		return err
	}
	if err := outbound.SignWebhook(r.header, secret, key, time.Now(), r.body); err != nil {
		return apperr.New(apperr.WebhookFailed, "sign the webhook: %s", x.Redact(err.Error()))
	}
	return nil
}

// webhookBody is the body template rendered (values JSON-escaped), or by
// default a JSON document of the action, execution, target and parameters.
// GET and DELETE send no default body.
func webhookBody(ctx context.Context, c *webhookConfig, scope map[string]any, x *secrets.Expander) ([]byte, error) {
	if c.Body != "" {
		s, err := renderRefs(ctx, c.Body, scope, x, jsonEscape)
		return []byte(s), err
	}
	if c.method() == http.MethodGet || c.method() == http.MethodDelete {
		return nil, nil
	}
	return json.Marshal(map[string]any{"action": scope["action"], "execution_id": scope["execution_id"],
		"target": scope["target"], "parameters": scope["parameters"]})
}

func webhookScope(op *engine.Op) map[string]any {
	var target any
	if op.Target != nil {
		target = map[string]any{"id": op.Target.ID, "object_type_id": op.Target.ObjectTypeID, "properties": op.Target.Properties}
	}
	return map[string]any{
		"action":       map[string]any{"id": op.Action.ID, "name": op.Action.Name, "version": op.Action.Version},
		"actor":        map[string]any{"id": op.Actor.ID, "username": op.Actor.Username},
		"execution_id": op.ExecutionID,
		"target":       target,
		"parameters":   op.Params,
	}
}

// renderRefs replaces {{ secrets.NAME }} with the secret's value as it is
// and {{ path }} with the value at path in scope, escaped by esc.
func renderRefs(ctx context.Context, s string, scope map[string]any, x *secrets.Expander, esc func(string) string) (string, error) {
	var firstErr error
	out := engine.EachPlaceholder(s, func(m, path string) string {
		if name, ok := strings.CutPrefix(path, "secrets."); ok {
			v, err := x.Resolve(ctx, name)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			return v
		}
		return esc(engine.RenderTemplate(m, scope))
	})
	return out, firstErr
}

// urlEscape escapes a value for any part of a URL: a query escape whose
// spaces are %20, which also reads right in a path.
func urlEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

func headerEscape(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == 0 {
			return ' '
		}
		return r
	}, s)
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
