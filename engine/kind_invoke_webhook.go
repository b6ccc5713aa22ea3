package engine

import (
	"context"
	"fmt"

	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology/domain"
)

// InvokeWebhook is the invoke_webhook kind. This release checks its
// definition only: running it answers 422 OperationNotSupported. The
// webhook issue builds it as an EffectKind (the call as its own activity,
// retried with the execution id as idempotency key).
type InvokeWebhook struct{}

// webhookConfig is invoke_webhook's operation config.
type webhookConfig struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
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
func (InvokeWebhook) CheckConfig(s *domain.KindScope, cfg any) error {
	c := cfg.(*webhookConfig)
	return domain.CheckWebhook(s.Field, c.Method, c.URL, c.Headers)
}

// References implements domain.OperationKind.
func (InvokeWebhook) References(any) domain.References { return domain.References{} }

// RedactSecrets implements domain.SecretRedactor: header values commonly
// carry credentials; the names stay.
func (InvokeWebhook) RedactSecrets(cfg any, redacted string) {
	c := cfg.(*webhookConfig)
	if len(c.Headers) == 0 {
		return
	}
	red := make(map[string]string, len(c.Headers))
	for k := range c.Headers {
		red[k] = redacted
	}
	c.Headers = red
}

// Preview implements Kind: nothing is known before the call.
func (InvokeWebhook) Preview(context.Context, *Op) ([]models.Edit, error) { return nil, nil }

// Apply implements Kind: not available in this release.
func (InvokeWebhook) Apply(context.Context, *Op) (*Outcome, error) {
	return nil, notSupported(domain.KindInvokeWebhook)
}

// Invert implements Kind: a webhook's call is not undone.
func (InvokeWebhook) Invert(ed models.Edit) ([]models.Edit, error) {
	return nil, fmt.Errorf("invoke_webhook records no edit to invert (got %s)", ed.Op)
}
