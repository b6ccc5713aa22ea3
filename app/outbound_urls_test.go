package app_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/internal/harness/otlptest"
)

// TestOutboundURLsAreRecordedAsDefined: with traces exported over OTLP
// (from the OTEL_* environment, as in production) and debug logging, a
// webhook whose URL path holds a secret, a Slack notification whose
// webhook URL is a secret, and the same two pointed at a loopback port
// where nothing listens (connection refused: the webhook fails, the Slack
// delivery fails after its attempts). Every byte the collector received,
// the log, the Temporal histories and the API's execution records
// (delivery outcomes included) hold none of the values; the spans'
// url.full show each secret as [secret:NAME]. The path values are
// Slack-style paths with a "|", which a URL shows escaped while its "/"
// stays: a form no escaping of the value reproduces. SQLite: what is
// recorded does not depend on the dialect.
func TestOutboundURLsAreRecordedAsDefined(t *testing.T) {
	collector := otlptest.Start(t)
	rx := newReceiver(t)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // only its address is used: nothing listens there
	logs := &syncBuffer{}
	a := startWithLog(t, t.TempDir(), "", logs)
	c := devClient{t: t, base: a.APIURL}

	values := map[string]string{
		"OK_PATH":    "T0A1/B0B2/ok|9e41c7",
		"DOWN_PATH":  "T0C3/B0D4/down|5a7f20",
		"OK_SLACK":   rx.srv.URL + "/slack/ok-2c8e61d4",
		"DOWN_SLACK": downURL + "/slack/down-7b3d95e0",
	}
	for name, v := range values {
		spec := map[string]any{"name": name, "value": v}
		switch name {
		case "OK_PATH":
			spec["destinations"] = []string{rx.srv.URL + "/hooks/"}
		case "DOWN_PATH":
			spec["destinations"] = []string{downURL + "/hooks/"}
		default:
			spec["channel"] = "slack"
		}
		c.must(http.StatusCreated, "POST", "/api/v1/secrets", spec, nil)
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true}}}, nil)
	var obj, ok, failing idOnly
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects", map[string]any{"properties": map[string]any{"title": "t"}}, &obj)
	slack := func(name string) map[string]any {
		return map[string]any{"title": "done", "channels": []string{"slack"}, "send_to_actor": true,
			"slack_webhook": "{{ secrets." + name + " }}"}
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "ok-hook", "object_type_id": "Ticket",
		"operation_kind": "invoke_webhook", "config": map[string]any{
			"operation":                 map[string]any{"url": rx.srv.URL + "/hooks/p/{{ secrets.OK_PATH }}/x"},
			"notification_side_effects": []map[string]any{slack("OK_SLACK"), slack("DOWN_SLACK")}}}, &ok)
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "down-hook", "object_type_id": "Ticket",
		"operation_kind": "invoke_webhook", "config": map[string]any{
			"operation": map[string]any{"url": downURL + "/hooks/p/{{ secrets.DOWN_PATH }}/x", "max_attempts": 1, "timeout": "2s"}}}, &failing)

	var okEx map[string]any
	c.must(http.StatusOK, "POST", "/api/v1/ontology/actions/"+ok.ID+"/execute", map[string]any{"target_object_id": obj.ID}, &okEx)
	st, failBody := c.do("POST", "/api/v1/ontology/actions/"+failing.ID+"/execute", map[string]any{"target_object_id": obj.ID})
	if st != http.StatusBadGateway || !bytes.Contains(failBody, []byte("[secret:DOWN_PATH]")) {
		t.Errorf("the refused webhook: %d %s, want 502 naming [secret:DOWN_PATH]", st, failBody)
	}
	outcomes := waitNotified(t, c, okEx)
	if len(rx.seenAt("/hooks/p/"+values["OK_PATH"]+"/x")) != 1 || len(rx.seenAt("/slack/ok-2c8e61d4")) != 1 {
		t.Fatal("the webhook or the Slack destination got no request: the secrets were not used")
	}
	if len(outcomes) != 2 || outcomes[1]["status"] != "failed" {
		t.Errorf("notification outcomes %v, want the second (the refused Slack post) failed", outcomes)
	}

	var records bytes.Buffer
	records.Write(failBody)
	for _, p := range []string{"/api/v1/ontology/executions/" + okEx["id"].(string), "/api/v1/ontology/executions"} {
		_, b := c.do("GET", p, nil)
		records.Write(b)
	}
	history := histories(t, a)
	a.Stop(context.Background()) // sends the spans still batched
	exported := collector.Bytes()
	urls, _ := collector.URLs()

	for name, v := range values {
		for where, data := range map[string][]byte{"the spans sent to the collector": exported, "the log": []byte(logs.String()),
			"the Temporal histories": history, "the execution records": records.Bytes()} {
			// As is, and as a URL's path or query, or an escaping, writes it.
			for _, form := range []string{v, (&url.URL{Path: v}).EscapedPath(), url.PathEscape(v), url.QueryEscape(v)} {
				if bytes.Contains(data, []byte(form)) {
					t.Errorf("%s hold the value of %s (as %q)", where, name, form)
					break
				}
			}
		}
	}
	for _, want := range []string{rx.srv.URL + "/hooks/p/[secret:OK_PATH]/x", downURL + "/hooks/p/[secret:DOWN_PATH]/x",
		"[secret:OK_SLACK]", "[secret:DOWN_SLACK]"} {
		found := false
		for _, u := range urls {
			found = found || u == want
		}
		if !found {
			t.Errorf("no outbound span with url.full %q; got %q", want, urls)
		}
	}
	if len(history) == 0 || !strings.Contains(logs.String(), "level=DEBUG") || !bytes.Contains(records.Bytes(), []byte("[secret:DOWN_PATH]")) {
		t.Errorf("nothing was scanned: %d history bytes, %d log bytes, records %d bytes", len(history), len(logs.String()), records.Len())
	}
}
