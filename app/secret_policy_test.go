package app_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/outbound"
)

// TestSecretUsePolicyOnDev: a user who may write the ontology but may not
// use a secret cannot send it anywhere by defining a webhook (the
// exfiltration of issue 25); a user the secret's policy names can, to its
// destinations only, and anyone may run the action; a destination that no
// longer holds when the call is made refuses the call. Over HTTP, on
// SQLite and Postgres, to receivers on loopback only.
func TestSecretUsePolicyOnDev(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			secretPolicySuite(t, startDevArgs(t, dsn, []string{"--outbound-allow", "127.0.0.1/32"}))
		})
	}
}

type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details []struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
	} `json:"details"`
}

func errorOf(body []byte) apiError {
	var e struct {
		Error apiError `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error
}

func (e apiError) names(field, reason string) bool {
	for _, d := range e.Details {
		if d.Field == field && d.Reason == reason {
			return true
		}
	}
	return false
}

func secretPolicySuite(t *testing.T, admin devClient) {
	crm := newReceiver(t)  // where the secret belongs
	evil := newReceiver(t) // another port on loopback: somewhere else
	const token = "tok-policy-9b1e4c0d77aa"
	signing := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-signing-key-of-32-bytes!"))
	for name, value := range map[string]string{"CRM_TOKEN": token, "CRM_SIGNING": signing} {
		admin.must(http.StatusCreated, "POST", "/api/v1/secrets", map[string]any{"name": name, "value": value,
			"use_roles": []string{"integrations"}, "destinations": []string{crm.srv.URL + "/crm/"}}, nil)
	}
	for _, u := range []map[string]any{
		{"username": "mallory", "password": "mallory-password-1", "permissions": []string{"ontology:write"}},
		{"username": "integrator", "password": "integrator-password-1", "roles": []string{"integrations"}, "permissions": []string{"ontology:write"}},
		{"username": "runner", "password": "runner-password-1"},
	} {
		admin.must(http.StatusCreated, "POST", "/api/v1/users", u, nil)
	}
	mallory := admin.as("mallory", "mallory-password-1")
	integrator := admin.as("integrator", "integrator-password-1")
	runner := admin.as("runner", "runner-password-1")
	define := func(c devClient, name string, op map[string]any) (int, []byte) {
		return c.do("POST", "/api/v1/ontology/actions", map[string]any{"name": name, "operation_kind": "invoke_webhook",
			"inputs": []map[string]any{{"name": "q", "type": "string"}}, "config": map[string]any{"operation": op}})
	}
	execute := func(c devClient, name string) (int, []byte) {
		return c.do("POST", "/api/v1/ontology/actions/"+name+"/execute", map[string]any{"parameters": map[string]any{"q": "x"}})
	}
	sync := map[string]any{"url": crm.srv.URL + "/crm/{{ parameters.q }}", "max_attempts": 2,
		"headers":        map[string]string{"Authorization": "Bearer {{ secrets.CRM_TOKEN }}"},
		"signing_secret": "{{ secrets.CRM_SIGNING }}"}

	t.Run("an ontology writer cannot exfiltrate a secret", func(t *testing.T) {
		st, body := define(mallory, "steal", map[string]any{"url": evil.srv.URL + "/steal",
			"headers": map[string]string{"X-Steal": "{{ secrets.CRM_TOKEN }}"}})
		if e := errorOf(body); st != http.StatusForbidden || e.Code != "PermissionDenied" || !e.names("config.operation.headers.X-Steal", "secret_use_denied") {
			t.Errorf("define: %d %s, want 403 naming config.operation.headers.X-Steal", st, body)
		}
		if st == http.StatusCreated { // today's code: show what it costs
			st, body = execute(mallory, "steal")
			t.Errorf("run: %d %s", st, body)
		}
		// Nor inside the secret's destinations: the policy says who.
		st, body = define(mallory, "steal2", sync)
		if e := errorOf(body); st != http.StatusForbidden || !e.names("config.operation.headers.Authorization", "secret_use_denied") {
			t.Errorf("define at the allowed destination: %d %s", st, body)
		}
		if n := len(evil.seenAt("/steal")); n != 0 {
			t.Errorf("the attacker's receiver got %d requests", n)
		}
	})

	t.Run("a permitted definer, an allowed destination: runs end to end, for a runner without secret rights", func(t *testing.T) {
		if st, body := define(integrator, "crm_sync", sync); st != http.StatusCreated {
			t.Fatalf("define: %d %s", st, body)
		}
		if st, _ := runner.do("GET", "/api/v1/secrets/CRM_TOKEN", nil); st != http.StatusForbidden {
			t.Fatalf("the runner may read secrets (%d): the test would prove nothing", st)
		}
		st, body := execute(runner, "crm_sync")
		if st != http.StatusOK || !strings.Contains(string(body), `"status":"succeeded"`) {
			t.Fatalf("execute: %d %s", st, body)
		}
		got := crm.seenAt("/crm/x")
		if len(got) != 1 || got[0].Header.Get("Authorization") != "Bearer "+token {
			t.Fatalf("requests at the receiver: %+v", got)
		}
		if err := outbound.VerifyWebhook(got[0].Header, signing, got[0].Body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("signature: %v", err)
		}
		// Mallory may not take over the action to point it elsewhere.
		st, body = mallory.do("PATCH", "/api/v1/ontology/actions/crm_sync", map[string]any{"config": map[string]any{"operation": map[string]any{
			"url": evil.srv.URL + "/steal", "headers": map[string]string{"Authorization": "{{ secrets.CRM_TOKEN }}"}}}})
		if st != http.StatusForbidden {
			t.Errorf("patch by an ontology writer without the secret: %d %s", st, body)
		}
		st, body = mallory.do("PUT", "/api/v1/ontology/actions/crm_sync", map[string]any{"name": "crm_sync", "operation_kind": "invoke_webhook",
			"inputs": []map[string]any{{"name": "q", "type": "string"}}, "config": map[string]any{"operation": sync}})
		if st != http.StatusForbidden {
			t.Errorf("put of the same definition by an ontology writer without the secret: %d %s", st, body)
		}
	})

	t.Run("a url outside the destinations is refused when saved, naming the field", func(t *testing.T) {
		for name, url := range map[string]string{"other_port": evil.srv.URL + "/crm/x", "other_path": crm.srv.URL + "/admin/x",
			"other_host": strings.Replace(crm.srv.URL, "127.0.0.1", "127.0.0.2", 1) + "/crm/x"} {
			st, body := define(integrator, name, map[string]any{"url": url, "headers": map[string]string{"X-Key": "{{ secrets.CRM_TOKEN }}"}})
			if e := errorOf(body); st != http.StatusBadRequest || !e.names("config.operation.headers.X-Key", "secret_destination") {
				t.Errorf("%s: %d %s", name, st, body)
			}
		}
		st, body := define(integrator, "unsigned", map[string]any{"url": evil.srv.URL + "/x", "signing_secret": "{{ secrets.CRM_SIGNING }}"})
		if e := errorOf(body); st != http.StatusBadRequest || !e.names("config.operation.signing_secret", "secret_destination") {
			t.Errorf("signing secret: %d %s", st, body)
		}
		// The signing key is the named secret's value alone: text around
		// the reference, or two references, would be ignored when signing.
		for name, v := range map[string]string{"prefixed": "v1-{{ secrets.CRM_SIGNING }}",
			"suffixed": "{{ secrets.CRM_SIGNING }}x", "twice": "{{ secrets.CRM_SIGNING }}{{ secrets.CRM_TOKEN }}", "literal": "k3y"} {
			st, body := define(integrator, "signing_"+name, map[string]any{"url": crm.srv.URL + "/crm/x", "signing_secret": v})
			if e := errorOf(body); st != http.StatusBadRequest || !e.names("config.operation.signing_secret", "invalid_secret_reference") {
				t.Errorf("signing_secret %q: %d %s", v, st, body)
			}
		}
		// An update is checked as a create is.
		st, body = integrator.do("PATCH", "/api/v1/ontology/actions/crm_sync", map[string]any{"config": map[string]any{"operation": map[string]any{
			"url": evil.srv.URL + "/x", "headers": map[string]string{"Authorization": "{{ secrets.CRM_TOKEN }}"}}}})
		if e := errorOf(body); st != http.StatusBadRequest || !e.names("config.operation.headers.Authorization", "secret_destination") {
			t.Errorf("patch: %d %s", st, body)
		}
	})

	t.Run("a destination that no longer holds when the call is made refuses it", func(t *testing.T) {
		before := len(crm.seenAt("/crm/x"))
		admin.must(http.StatusOK, "PUT", "/api/v1/secrets/CRM_TOKEN", map[string]any{"destinations": []string{evil.srv.URL + "/crm/"}}, nil)
		st, body := execute(runner, "crm_sync")
		if e := errorOf(body); st != http.StatusBadGateway || e.Code != "WebhookFailed" || !strings.Contains(e.Message, "CRM_TOKEN") ||
			!strings.Contains(e.Message, "destinations") {
			t.Errorf("execute after the destinations changed: %d %s", st, body)
		}
		if strings.Contains(string(body), token) {
			t.Errorf("the refusal shows the value: %s", body)
		}
		if n := len(crm.seenAt("/crm/x")) - before; n != 0 {
			t.Errorf("%d requests sent after the destinations changed", n)
		}
		if n := len(evil.seenAt("/crm/x")); n != 0 {
			t.Errorf("%d requests at the new destination, which the action does not name", n)
		}
		// Bound to a channel since: not a webhook secret any more.
		admin.must(http.StatusOK, "PUT", "/api/v1/secrets/CRM_TOKEN", map[string]any{"destinations": []string{crm.srv.URL + "/crm/"}, "channel": "slack"}, nil)
		st, body = execute(runner, "crm_sync")
		if e := errorOf(body); st != http.StatusBadGateway || e.Code != "WebhookFailed" || !strings.Contains(e.Message, "slack") {
			t.Errorf("execute after the secret was bound to a channel: %d %s", st, body)
		}
		admin.must(http.StatusOK, "PUT", "/api/v1/secrets/CRM_TOKEN", map[string]any{"channel": ""}, nil)
		if st, body := execute(runner, "crm_sync"); st != http.StatusOK {
			t.Errorf("execute once the policy is restored: %d %s", st, body)
		}
		if n := len(crm.seenAt("/crm/x")) - before; n != 1 {
			t.Errorf("%d requests in all, want the one after the policy was restored", n)
		}
	})

	t.Run("chat destinations are bound to their channel", func(t *testing.T) {
		admin.must(http.StatusCreated, "POST", "/api/v1/secrets", map[string]any{"name": "SLACK_OPS", "value": crm.srv.URL + "/slack/T0/B0/x",
			"channel": "slack", "use_roles": []string{"integrations"}}, nil)
		st, body := define(integrator, "slack_steal", map[string]any{"url": crm.srv.URL + "/crm/x", "headers": map[string]string{"X-Hook": "{{ secrets.SLACK_OPS }}"}})
		if e := errorOf(body); st != http.StatusBadRequest || !e.names("config.operation.headers.X-Hook", "secret_channel") {
			t.Errorf("a chat secret in a webhook: %d %s", st, body)
		}
		side := func(ref string) map[string]any {
			return map[string]any{"name": "notify_" + fmt.Sprint(len(ref)), "operation_kind": "invoke_webhook",
				"config": map[string]any{"operation": map[string]any{"url": crm.srv.URL + "/crm/n"},
					"notification_side_effects": []map[string]any{{"title": "t", "channels": []string{"slack"}, "send_to_actor": true, "slack_webhook": ref}}}}
		}
		st, body = integrator.do("POST", "/api/v1/ontology/actions", side("{{ secrets.CRM_TOKEN }}"))
		if e := errorOf(body); st != http.StatusBadRequest || !e.names("config.notification_side_effects[0].slack_webhook", "secret_channel") {
			t.Errorf("a webhook secret as a Slack destination: %d %s", st, body)
		}
		st, body = mallory.do("POST", "/api/v1/ontology/actions", side("{{ secrets.SLACK_OPS }}"))
		if e := errorOf(body); st != http.StatusForbidden || !e.names("config.notification_side_effects[0].slack_webhook", "secret_use_denied") {
			t.Errorf("a Slack destination the definer may not use: %d %s", st, body)
		}
		if st, body := integrator.do("POST", "/api/v1/ontology/actions", side("{{ secrets.SLACK_OPS }}")); st != http.StatusCreated {
			t.Errorf("a Slack destination as its channel: %d %s", st, body)
		}
	})
}
