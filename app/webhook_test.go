package app_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/outbound"
)

// receiver is a webhook receiver on loopback that answers from a script
// and remembers every request.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []seen
	answers map[string][]func(w http.ResponseWriter) // by path, consumed in order
}

type seen struct {
	Method, Path, RawPath, RawQuery string
	Header                          http.Header
	Body                            []byte
	At                              time.Time
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{answers: map[string][]func(http.ResponseWriter){}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, seen{req.Method, req.URL.Path, req.URL.EscapedPath(), req.URL.RawQuery, req.Header.Clone(), b, time.Now()})
		var answer func(http.ResponseWriter)
		if q := r.answers[req.URL.Path]; len(q) > 0 {
			answer, r.answers[req.URL.Path] = q[0], q[1:]
		}
		r.mu.Unlock()
		if answer == nil {
			w.WriteHeader(http.StatusOK)
			return
		}
		answer(w)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) script(path string, answers ...func(http.ResponseWriter)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[path] = answers
}

func (r *receiver) seenAt(path string) []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seen
	for _, s := range r.reqs {
		if s.Path == path {
			out = append(out, s)
		}
	}
	return out
}

func status(code int, hdr ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(code)
	}
}

func jsonAnswer(body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

// TestWebhookOnDev runs invoke_webhook actions over HTTP against a
// receiver on loopback (allowlisted), on SQLite and Postgres.
func TestWebhookOnDev(t *testing.T) {
	for _, d := range testdb.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := ""
			if d == "postgres" {
				dsn = testdb.DSN(t, d)
			}
			webhookSuite(t, startDevArgs(t, dsn, []string{"--outbound-allow", "127.0.0.1/32"}))
		})
	}
}

func webhookSuite(t *testing.T, c devClient) {
	rx := newReceiver(t)
	const token = "tok-3f9a1c77e2b54d0c"
	signing := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a-signing-key-of-32-bytes-long!!"))
	for name, v := range map[string]string{"CRM_TOKEN": token, "CRM_SIGNING": signing} {
		c.must(http.StatusCreated, "POST", "/api/v1/secrets", map[string]any{"name": name, "value": v, "destinations": []string{rx.srv.URL + "/sync"}}, nil)
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types", map[string]any{"name": "Ticket", "primary_key": "title",
		"properties": []map[string]any{{"name": "title", "type": "string", "required": true},
			{"name": "external_id", "type": "string"}, {"name": "notes", "type": "string"}}}, nil)
	var obj struct {
		ID string `json:"id"`
	}
	c.must(http.StatusCreated, "POST", "/api/v1/ontology/types/Ticket/objects",
		map[string]any{"properties": map[string]any{"title": "t1"}}, &obj)
	action := func(name string, op map[string]any) string {
		var a struct {
			ID string `json:"id"`
		}
		c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": name, "object_type_id": "Ticket",
			"operation_kind": "invoke_webhook", "inputs": []map[string]any{{"name": "q", "type": "string"}},
			"config": map[string]any{"operation": op}}, &a)
		return a.ID
	}
	execute := func(id string, q string) (int, map[string]any) {
		st, body := c.do("POST", "/api/v1/ontology/actions/"+id+"/execute",
			map[string]any{"target_object_id": obj.ID, "parameters": map[string]any{"q": q}})
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		return st, m
	}

	t.Run("retried after 500s with one key, signed, written back once", func(t *testing.T) {
		rx.script("/sync", status(500), status(503), jsonAnswer(`{"ticket":{"number":"CRM-42"}}`))
		id := action("sync", map[string]any{"url": rx.srv.URL + "/sync", "max_attempts": 3,
			"headers":           map[string]string{"Authorization": "Bearer {{ secrets.CRM_TOKEN }}"},
			"signing_secret":    "{{ secrets.CRM_SIGNING }}",
			"response_mappings": []map[string]any{{"property": "external_id", "path": "ticket.number"}}})
		st, ex := execute(id, "x")
		if st != http.StatusOK || ex["status"] != "succeeded" {
			t.Fatalf("execute: %d %v", st, ex)
		}
		got := rx.seenAt("/sync")
		if len(got) != 3 {
			t.Fatalf("%d attempts, want 3", len(got))
		}
		key := got[0].Header.Get("Idempotency-Key")
		for i, s := range got {
			if s.Header.Get("Idempotency-Key") != key || s.Header.Get("webhook-id") != key || key != ex["id"] {
				t.Errorf("attempt %d keys %q/%q, want the execution id %v", i+1, s.Header.Get("Idempotency-Key"), s.Header.Get("webhook-id"), ex["id"])
			}
			if s.Header.Get("Authorization") != "Bearer "+token {
				t.Errorf("attempt %d Authorization = %q", i+1, s.Header.Get("Authorization"))
			}
			if err := outbound.VerifyWebhook(s.Header, signing, s.Body, time.Now(), 5*time.Minute); err != nil {
				t.Errorf("attempt %d signature: %v", i+1, err)
			}
		}
		if p := c.object(obj.ID); p["external_id"] != "CRM-42" {
			t.Errorf("written back: %v", p)
		}
		edits, _ := ex["edits"].([]any)
		if len(edits) != 1 {
			t.Errorf("edits = %v, want the one write-back", ex["edits"])
		}
		// The call as recorded on the execution: method, URL, status, the
		// answer's excerpt, attempts, duration, what was written back.
		res, _ := ex["operation_result"].(map[string]any)
		call, _ := res["webhook"].(map[string]any)
		if call["status_code"] != float64(200) || !strings.Contains(fmt.Sprint(call["response_excerpt"]), "CRM-42") ||
			call["attempts"] != float64(3) || call["duration_ms"] == nil || call["method"] != "POST" ||
			call["url"] != rx.srv.URL+"/sync" || fmt.Sprint(call["mapped"]) != "map[external_id:CRM-42]" {
			t.Errorf("recorded call %v", call)
		}
		// The secret's value is nowhere in what the API shows.
		_, rec := c.do("GET", "/api/v1/ontology/executions/"+ex["id"].(string), nil)
		_, def := c.do("GET", "/api/v1/ontology/actions/"+id, nil)
		for what, b := range map[string][]byte{"execution": rec, "action type": def} {
			if strings.Contains(string(b), token) || strings.Contains(string(b), signing) {
				t.Errorf("the %s shows a secret's value: %s", what, b)
			}
		}
	})

	t.Run("each method", func(t *testing.T) {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			id := action("m-"+strings.ToLower(m), map[string]any{"url": rx.srv.URL + "/m/" + m, "method": m})
			if st, ex := execute(id, "v"); st != http.StatusOK {
				t.Fatalf("%s: %d %v", m, st, ex)
			}
			got := rx.seenAt("/m/" + m)
			if len(got) != 1 || got[0].Method != m {
				t.Fatalf("%s: requests %+v", m, got)
			}
			withBody := m != "GET" && m != "DELETE"
			var doc map[string]any
			if withBody != (len(got[0].Body) > 0) || (withBody && (json.Unmarshal(got[0].Body, &doc) != nil ||
				doc["parameters"].(map[string]any)["q"] != "v" || doc["execution_id"] == nil)) {
				t.Errorf("%s: body %q", m, got[0].Body)
			}
		}
	})

	t.Run("a 400 is final: one attempt, WebhookFailed", func(t *testing.T) {
		rx.script("/bad", status(400))
		id := action("bad", map[string]any{"url": rx.srv.URL + "/bad"})
		st, ex := execute(id, "x")
		e, _ := ex["error"].(map[string]any)
		if st != http.StatusBadGateway || e["code"] != "WebhookFailed" || !strings.Contains(e["message"].(string), "400") {
			t.Errorf("execute: %d %v", st, ex)
		}
		if n := len(rx.seenAt("/bad")); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})

	t.Run("429 waits for Retry-After", func(t *testing.T) {
		rx.script("/slow", status(429, "Retry-After", "2"), status(204))
		id := action("slow", map[string]any{"url": rx.srv.URL + "/slow", "method": "PUT"})
		if st, ex := execute(id, "x"); st != http.StatusOK {
			t.Fatalf("execute: %d %v", st, ex)
		}
		got := rx.seenAt("/slow")
		if len(got) != 2 || got[1].At.Sub(got[0].At) < 2*time.Second || got[0].Method != "PUT" {
			t.Errorf("attempts %d, gap %v, method %s", len(got), got[len(got)-1].At.Sub(got[0].At), got[0].Method)
		}
	})

	t.Run("a redirect is not followed", func(t *testing.T) {
		rx.script("/moved", status(302, "Location", rx.srv.URL+"/elsewhere"))
		id := action("moved", map[string]any{"url": rx.srv.URL + "/moved"})
		if st, _ := execute(id, "x"); st != http.StatusBadGateway {
			t.Errorf("execute: %d", st)
		}
		if n := len(rx.seenAt("/elsewhere")); n != 0 {
			t.Errorf("the redirect was followed")
		}
	})

	t.Run("a timeout retries", func(t *testing.T) {
		rx.script("/late", func(w http.ResponseWriter) { time.Sleep(2 * time.Second); w.WriteHeader(200) }, status(200))
		id := action("late", map[string]any{"url": rx.srv.URL + "/late", "timeout": "1s", "max_attempts": 2})
		if st, ex := execute(id, "x"); st != http.StatusOK {
			t.Errorf("execute: %d %v", st, ex)
		}
		if n := len(rx.seenAt("/late")); n != 2 {
			t.Errorf("%d attempts, want 2", n)
		}
	})

	t.Run("a body that drips past the timeout on every attempt is WebhookFailed", func(t *testing.T) {
		drip := func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			for range 30 {
				if _, err := io.WriteString(w, "x"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond)
			}
		}
		rx.script("/drip", drip, drip)
		id := action("drip", map[string]any{"url": rx.srv.URL + "/drip", "timeout": "1s", "max_attempts": 2})
		st, ex := execute(id, "x")
		e, _ := ex["error"].(map[string]any)
		if st != http.StatusBadGateway || e["code"] != "WebhookFailed" || !strings.Contains(fmt.Sprint(e["message"]), "after 2 attempts") {
			t.Errorf("execute: %d %v, want 502 WebhookFailed after 2 attempts", st, ex)
		}
		if n := len(rx.seenAt("/drip")); n != 2 {
			t.Errorf("%d attempts, want 2", n)
		}
	})

	t.Run("hostile template values are escaped", func(t *testing.T) {
		id := action("tmpl", map[string]any{"method": "GET", "url": rx.srv.URL + "/t/{{ parameters.q }}?q={{ parameters.q }}&t={{ target.properties.title }}"})
		if st, ex := execute(id, "../a b?x=1&y=#{{ secrets.CRM_TOKEN }}"); st != http.StatusOK {
			t.Fatalf("execute: %d %v", st, ex)
		}
		var got []seen
		rx.mu.Lock()
		for _, s := range rx.reqs {
			if strings.HasPrefix(s.Path, "/t/") {
				got = append(got, s)
			}
		}
		rx.mu.Unlock()
		if len(got) != 1 || got[0].Path != "/t/../a b?x=1&y=#{{ secrets.CRM_TOKEN }}" || got[0].Method != "GET" || len(got[0].Body) != 0 {
			t.Fatalf("requests %+v", got)
		}
		// In the query too each value stays one value: no parameter of its
		// own (x, y), no fragment, no secret resolved from a value.
		q, err := url.ParseQuery(got[0].RawQuery)
		if err != nil || len(q) != 2 || q.Get("q") != "../a b?x=1&y=#{{ secrets.CRM_TOKEN }}" || q.Get("t") != "t1" {
			t.Errorf("query %q: %v (%v)", got[0].RawQuery, q, err)
		}
	})

	t.Run("localhost is reached through the allowlist of 127.0.0.1", func(t *testing.T) {
		// The guard checks the address dialled, not the name: localhost
		// passes only because 127.0.0.1 is allowlisted (--outbound-allow).
		u := strings.Replace(rx.srv.URL, "127.0.0.1", "localhost", 1) + "/named"
		id := action("named", map[string]any{"url": u})
		if st, ex := execute(id, "x"); st != http.StatusOK || ex["status"] != "succeeded" {
			t.Errorf("execute: %d %v", st, ex)
		}
		if n := len(rx.seenAt("/named")); n != 1 {
			t.Errorf("%d requests at the receiver, want 1", n)
		}
	})

	t.Run("a missing secret is refused when the action is saved", func(t *testing.T) {
		st, body := c.do("POST", "/api/v1/ontology/actions", map[string]any{"name": "nosecret", "operation_kind": "invoke_webhook",
			"config": map[string]any{"operation": map[string]any{"url": rx.srv.URL + "/x",
				"headers": map[string]string{"X-Key": "{{ secrets.NOPE }}"}}}})
		if st != http.StatusBadRequest || !strings.Contains(string(body), "headers.X-Key") {
			t.Errorf("save: %d %s", st, body)
		}
	})
}

// TestWebhookToLoopbackRefusedByDefault: without --outbound-allow the
// guard refuses the receiver on 127.0.0.1, by address and by the name
// localhost, and it never sees a request.
func TestWebhookToLoopbackRefusedByDefault(t *testing.T) {
	c := startDev(t, "")
	rx := newReceiver(t)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		var a struct {
			ID string `json:"id"`
		}
		u := strings.Replace(rx.srv.URL, "127.0.0.1", host, 1) + "/x"
		c.must(http.StatusCreated, "POST", "/api/v1/ontology/actions", map[string]any{"name": "hook-" + host, "operation_kind": "invoke_webhook",
			"config": map[string]any{"operation": map[string]any{"url": u}}}, &a)
		st, body := c.do("POST", "/api/v1/ontology/actions/"+a.ID+"/execute", map[string]any{})
		if st != http.StatusBadGateway || !strings.Contains(string(body), "outbound guard") {
			t.Errorf("execute to %s: %d %s", host, st, body)
		}
	}
	if n := len(rx.seenAt("/x")); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}
