package invokewebhook

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
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
	op := &engine.Op{Action: &engine.ActionType{ID: "a1", ActionDefinition: domain.ActionDefinition{Name: "sync"}}, Config: c,
		Actor: &models.User{ID: "u1", Username: "ann"}, Params: map[string]any{"note": "sk_live_param"}, ExecutionID: "ex1"}
	raw, err := InvokeWebhook{}.PreviewEffect(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	var call Call
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

// TestWebhookPreviewOfSignedWebhook: a what-if of a webhook with a
// signing_secret previews the call — method, URL, headers with secrets
// masked, body, and the name of the secret it would be signed with —
// instead of failing to sign with a placeholder (which is no key).
func TestWebhookPreviewOfSignedWebhook(t *testing.T) {
	c := &webhookConfig{Method: "PUT", URL: "https://crm.example/hook/{{ parameters.note }}",
		Headers:       map[string]string{"Authorization": "Bearer {{ secrets.CRM_TOKEN }}", "X-Token": "{{ secrets.CRM_TOKEN }}"},
		Body:          `{"note":"{{ parameters.note }}"}`,
		SigningSecret: "{{ secrets.CRM_SIGNING }}"}
	op := &engine.Op{Action: &engine.ActionType{ID: "a1", ActionDefinition: domain.ActionDefinition{Name: "sync"}}, Config: c,
		Actor: &models.User{ID: "u1", Username: "ann"}, Params: map[string]any{"note": "n1"}, ExecutionID: "ex1"}
	raw, err := InvokeWebhook{}.PreviewEffect(context.Background(), op)
	if err != nil {
		t.Fatalf("preview of a signed webhook: %v", err)
	}
	var call Call
	if err := json.Unmarshal(raw, &call); err != nil {
		t.Fatal(err)
	}
	if !call.Preview || call.Method != "PUT" || call.URL != "https://crm.example/hook/n1" || call.Body != `{"note":"n1"}` {
		t.Errorf("preview %+v", call)
	}
	if call.SignedWith != "CRM_SIGNING" {
		t.Errorf("signed_with = %q, want CRM_SIGNING", call.SignedWith)
	}
	if call.Headers["Authorization"] != "***" || call.Headers["X-Token"] != "[secret:CRM_TOKEN]" || call.Headers["Webhook-Id"] != "ex1" {
		t.Errorf("headers %v", call.Headers)
	}
	for _, h := range []string{"Webhook-Signature", "Webhook-Timestamp"} {
		if v, ok := call.Headers[h]; ok {
			t.Errorf("the preview carries %s %q: a signature over a placeholder", h, v)
		}
	}
}
