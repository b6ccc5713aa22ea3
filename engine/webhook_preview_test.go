package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// TestWebhookPreviewRedactsHeaders: a what-if's preview is stored with the
// branch and read by anyone who may run the action, so it shows the
// configured headers as the definition view does to a caller without
// ontology:write — a literal (or anything but exactly one secret
// reference) as ***, a reference as [secret:NAME] — never their values.
func TestWebhookPreviewRedactsHeaders(t *testing.T) {
	c := &webhookConfig{URL: "https://crm.example/hook", Headers: map[string]string{
		"Authorization": "Bearer sk_live_abc",
		"x-token":       "{{ secrets.CRM_TOKEN }}",
		"X-Mixed":       "Bearer {{ secrets.CRM_TOKEN }}",
		"X-Param":       "{{ parameters.note }}",
	}}
	op := &Op{Action: &ActionType{ID: "a1", ActionDefinition: domain.ActionDefinition{Name: "sync"}}, Config: c,
		Actor: &models.User{ID: "u1", Username: "ann"}, Params: map[string]any{"note": "sk_live_param"}, ExecutionID: "ex1"}
	raw, err := InvokeWebhook{}.PreviewEffect(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	var call WebhookCall
	if err := json.Unmarshal(raw, &call); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Authorization": "***", "X-Token": "[secret:CRM_TOKEN]", "X-Mixed": "***", "X-Param": "***",
		"Idempotency-Key": "ex1", "Webhook-Id": "ex1"}
	for h, v := range want {
		if call.Headers[h] != v {
			t.Errorf("header %s = %q, want %q (all: %v)", h, call.Headers[h], v, call.Headers)
		}
	}
	// The definition view redacts by the same rule.
	view := &webhookConfig{Headers: map[string]string{"Authorization": "Bearer sk_live_abc", "X-Token": "{{ secrets.CRM_TOKEN }}"}}
	InvokeWebhook{}.RedactSecrets(view, "***")
	if view.Headers["Authorization"] != "***" || view.Headers["X-Token"] != "{{ secrets.CRM_TOKEN }}" {
		t.Errorf("definition view %v", view.Headers)
	}
}
