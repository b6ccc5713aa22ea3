// Package invokewebhook is the invoke_webhook operation kind: an HTTP
// call to an external system (docs/actions.md, "invoke_webhook").
package invokewebhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

// InvokeWebhook is the invoke_webhook kind: an HTTP call to an external
// system, made by its own effect step (a regular Temporal activity,
// retried, outside any transaction; call.go), whose outcome — and
// any response_mappings written back to the target — the run step records
// with the execution, exactly once.
//
// Client must be an outbound (SSRF-guarded) client and Secrets resolves
// {{ secrets.NAME }}; the zero value, as kinds.Builtin lists it, checks
// definitions but cannot call (app/app.go puts in one that can).
type InvokeWebhook struct {
	Client  *http.Client
	Secrets SecretSource
}

// SecretSource resolves secret references at call time and checks them
// when a definition is saved (secrets.Store is one); UsePolicy is a
// secret's use policy, checked again when the call is made.
type SecretSource interface {
	secrets.Resolver
	CheckRefs(ctx context.Context, member, text string) error
	UsePolicy(ctx context.Context, name string) (secrets.Policy, error)
}

// Webhook limits and defaults (docs/actions.md, "invoke_webhook").
const (
	WebhookDefaultTimeout  = 10 * time.Second
	WebhookMaxTimeout      = 30 * time.Second
	WebhookDefaultAttempts = 5
	WebhookMaxAttempts     = 10
	webhookInitialBackoff  = time.Second
	webhookMaxBackoff      = time.Minute
	webhookExcerptMax      = 1024
	webhookResponseMax     = 1 << 20
)

// webhookConfig is invoke_webhook's operation config.
type webhookConfig struct {
	Method           string            `json:"method,omitempty"`
	URL              string            `json:"url,omitempty"`
	Headers          map[string]string `json:"headers,omitempty"`
	Body             string            `json:"body,omitempty"`
	Timeout          string            `json:"timeout,omitempty"`
	MaxAttempts      int               `json:"max_attempts,omitempty"`
	SigningSecret    string            `json:"signing_secret,omitempty"`
	ResponseMappings []responseMapping `json:"response_mappings,omitempty"`
}

// responseMapping writes the member at Path (dot-separated) of the JSON
// response to the target's Property.
type responseMapping struct {
	Property string `json:"property"`
	Path     string `json:"path"`
}

func (c *webhookConfig) method() string {
	if c.Method == "" {
		return http.MethodPost
	}
	return c.Method
}

func (c *webhookConfig) timeout() time.Duration {
	d, err := time.ParseDuration(c.Timeout)
	if err != nil || d <= 0 {
		return WebhookDefaultTimeout
	}
	return min(d, WebhookMaxTimeout)
}

func (c *webhookConfig) attempts() int32 {
	if c.MaxAttempts <= 0 {
		return WebhookDefaultAttempts
	}
	return int32(min(c.MaxAttempts, WebhookMaxAttempts))
}

// Name implements domain.OperationKind.
func (InvokeWebhook) Name() string { return domain.KindInvokeWebhook }

// NeedsObjectType implements domain.OperationKind: optional.
func (InvokeWebhook) NeedsObjectType() bool { return false }

// HasTarget implements domain.OperationKind: when it names an object type.
func (InvokeWebhook) HasTarget(objectTypeID string) bool { return objectTypeID != "" }

// NewConfig implements domain.OperationKind.
func (InvokeWebhook) NewConfig() any { return &webhookConfig{} }

// CheckConfig implements domain.OperationKind.
func (k InvokeWebhook) CheckConfig(ctx context.Context, s *domain.KindScope, cfg any) error {
	c := cfg.(*webhookConfig)
	if err := domain.CheckWebhook(s.Field, c.method(), c.URL, c.Headers); err != nil {
		return err
	}
	if c.Timeout != "" {
		if d, err := time.ParseDuration(c.Timeout); err != nil || d <= 0 || d > WebhookMaxTimeout {
			return s.Err(".timeout", "range", "timeout must be a duration such as \"10s\", at most %s", WebhookMaxTimeout)
		}
	}
	if c.MaxAttempts < 0 || c.MaxAttempts > WebhookMaxAttempts {
		return s.Err(".max_attempts", "range", "max_attempts must be between 1 and %d", WebhookMaxAttempts)
	}
	// Exactly one reference and nothing around it: signing uses the
	// named secret's value alone, so text around it ("v1-{{ secrets.K }}")
	// would be silently ignored and the receiver's check would fail.
	if _, ok := onlySecretRef(c.SigningSecret); c.SigningSecret != "" && !ok {
		return s.Err(".signing_secret", "invalid_secret_reference", "signing_secret must be one secret reference, {{ secrets.NAME }}")
	}
	if err := checkMappings(s, c.ResponseMappings); err != nil {
		return err
	}
	return k.checkSecrets(ctx, s.Field, c)
}

// checkMappings checks response_mappings against the action's object type.
func checkMappings(s *domain.KindScope, ms []responseMapping) error {
	for i, m := range ms {
		f := fmt.Sprintf(".response_mappings[%d]", i)
		if s.ObjectType == nil {
			return s.Err(f, "no_target", "response_mappings write to the target: the action needs an object type")
		}
		if _, ok := s.ObjectType.Property(m.Property); !ok {
			return s.Err(f+".property", "unknown_property", "object type %s has no property %q", s.ObjectType.Name, domain.Clip(m.Property))
		}
		if strings.TrimSpace(m.Path) == "" {
			return s.Err(f+".path", "required", "a response mapping needs the path of a member of the response")
		}
	}
	return nil
}

// checkSecrets refuses references to secrets that do not exist, naming
// the member. The request's context, bounded still: each lookup is one
// row, so a check that takes longer is stuck, not slow.
func (k InvokeWebhook) checkSecrets(ctx context.Context, field string, c *webhookConfig) error {
	if k.Secrets == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	check := map[string]string{field + ".url": c.URL, field + ".signing_secret": c.SigningSecret, field + ".body": c.Body}
	for h, v := range c.Headers {
		check[field+".headers."+h] = v
	}
	for member, text := range check {
		if err := k.Secrets.CheckRefs(ctx, member, text); err != nil {
			return err
		}
	}
	return nil
}

// References implements domain.OperationKind.
func (InvokeWebhook) References(cfg any) domain.References {
	var r domain.References
	for _, m := range cfg.(*webhookConfig).ResponseMappings {
		r.Properties = append(r.Properties, m.Property)
	}
	return r
}

// RedactSecrets implements domain.SecretRedactor with RedactHeaders' rule
// for the members that carry credentials: header values (the names stay)
// and the signing secret. A value that is exactly one secret reference is
// not a secret and stays; anything else is redacted.
func (InvokeWebhook) RedactSecrets(cfg any, redacted string) {
	c := cfg.(*webhookConfig)
	c.Headers = RedactHeaders(c.Headers, redacted, secrets.Ref)
	if c.SigningSecret != "" {
		c.SigningSecret = RedactHeaders(map[string]string{"": c.SigningSecret}, redacted, secrets.Ref)[""]
	}
}

// RedactHeaders is the one rule for showing configured webhook headers to
// someone who may not see their values (the definition view without
// ontology:write, and every what-if preview, which any runner of the
// action reads): a value that is exactly one secret reference is shown as
// ref(name); anything else, a literal or a template that may render one,
// is redacted.
func RedactHeaders(headers map[string]string, redacted string, ref func(name string) string) map[string]string {
	if headers == nil {
		return nil
	}
	out := make(map[string]string, len(headers))
	for k, v := range headers {
		if name, ok := onlySecretRef(v); ok {
			out[k] = ref(name)
		} else {
			out[k] = redacted
		}
	}
	return out
}

// onlySecretRef returns the secret name when v is exactly one secret
// reference, {{ secrets.NAME }}.
func onlySecretRef(v string) (string, bool) {
	refs := secrets.Refs(v)
	if len(refs) != 1 || strings.TrimSpace(v) != secrets.Ref(refs[0]) {
		return "", false
	}
	return refs[0], true
}

// Preview implements Kind: the edits depend on the answer, unknown before
// the call.
func (InvokeWebhook) Preview(context.Context, *engine.Op) ([]models.Edit, error) { return nil, nil }

// EffectOptions implements EffectKind: each attempt is bounded by the
// config's timeout; the backoff between attempts is the effect's own
// (NextRetryDelay, with jitter and Retry-After), so the policy's
// intervals are only its floor.
func (InvokeWebhook) EffectOptions(op *engine.Op) engine.EffectOptions {
	c := op.Config.(*webhookConfig)
	return engine.EffectOptions{StartToClose: c.timeout() + 5*time.Second, MaxAttempts: c.attempts(),
		InitialInterval: webhookInitialBackoff, MaxInterval: webhookMaxBackoff}
}

// Apply implements Kind: records the call and writes response_mappings
// back to the target in the execution's transaction.
func (InvokeWebhook) Apply(ctx context.Context, op *engine.Op) (*engine.Outcome, error) {
	var call Call
	if err := json.Unmarshal(op.Effect, &call); err != nil {
		return nil, fmt.Errorf("decode the webhook call's record: %w", err)
	}
	out := &engine.Outcome{Result: map[string]any{"webhook": call}}
	if len(call.Mapped) == 0 || op.Target == nil {
		return out, nil
	}
	after, err := op.Ontology.In(op.Tx).UpdateObject(ctx, op.Target.ID, call.Mapped)
	if err != nil {
		return nil, err
	}
	out.Edits = []models.Edit{{Op: models.EditUpdateObject, ObjectTypeID: after.ObjectTypeID, ObjectID: after.ID,
		Before: engine.Pick(op.Target.Properties, call.Mapped), After: engine.Pick(after.Properties, call.Mapped),
		UpdatedAtBefore: engine.TimePtr(op.Target.UpdatedAt), UpdatedAtAfter: engine.TimePtr(after.UpdatedAt)}}
	return out, nil
}

// Invert implements Kind: the call is not undone; a written-back update is.
func (InvokeWebhook) Invert(ed models.Edit) ([]models.Edit, error) {
	if ed.Op != models.EditUpdateObject {
		return nil, fmt.Errorf("invoke_webhook cannot invert a %s edit", ed.Op)
	}
	return ed.Inverse()
}
