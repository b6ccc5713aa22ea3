package senders_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/notifications/senders"
	"github.com/ontoflow/ontoflow/outbound"
)

// Every server these tests talk to listens on 127.0.0.1.

// hook is a webhook receiver on loopback that records what it got and
// answers with the status (and headers) the test sets.
type hook struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	status  int
	respond func(w http.ResponseWriter)
}

func newHook(t *testing.T) *hook {
	t.Helper()
	h := &hook{status: 200}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, b)
		h.headers = append(h.headers, r.Header.Clone())
		status, respond := h.status, h.respond
		h.mu.Unlock()
		if r.URL.Path != "/services/SECRET-PATH" {
			status = http.StatusNotFound
		}
		if respond != nil {
			respond(w)
		}
		w.WriteHeader(status)
		io.WriteString(w, "answer-body")
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hook) dest() string { return h.URL + "/services/SECRET-PATH" }

func (h *hook) last(t *testing.T) map[string]any {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.bodies) == 0 {
		t.Fatal("the receiver got nothing")
	}
	var v map[string]any
	if err := json.Unmarshal(h.bodies[len(h.bodies)-1], &v); err != nil {
		t.Fatalf("payload is not JSON: %v", err)
	}
	return v
}

func (h *hook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.bodies)
}

func allowLoopback(t *testing.T) *http.Client {
	t.Helper()
	a, err := outbound.ParseAllowlist("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	return outbound.NewClient(outbound.Options{Allow: a, Timeout: 2 * time.Second})
}

func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func TestSlackPayload(t *testing.T) {
	h := newHook(t)
	s := &senders.Slack{Client: allowLoopback(t)}
	msg := senders.Message{Title: "Ticket <b> & co\nclosed", Body: "Closed by <!channel> & <@U123>\n*bold* stays"}
	if err := s.Send(context.Background(), h.dest(), msg); err != nil {
		t.Fatal(err)
	}
	p := h.last(t)
	if ct := h.headers[0].Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	want := map[string]any{
		"text":               "Ticket &lt;b&gt; &amp; co\nclosed\nClosed by &lt;!channel&gt; &amp; &lt;@U123&gt;\n*bold* stays",
		"blocks.0.type":      "header",
		"blocks.0.text.type": "plain_text",
		"blocks.0.text.text": "Ticket &lt;b&gt; &amp; co closed",
		"blocks.1.type":      "section",
		"blocks.1.text.type": "mrkdwn",
		"blocks.1.text.text": "Closed by &lt;!channel&gt; &amp; &lt;@U123&gt;\n*bold* stays",
		"blocks.2":           nil,
		"attachments":        nil,
	}
	for path, w := range want {
		var keys []any
		for _, k := range strings.Split(path, ".") {
			if n, err := parseInt(k); err == nil {
				keys = append(keys, n)
			} else {
				keys = append(keys, k)
			}
		}
		if got := get(p, keys...); got != w {
			t.Errorf("%s = %#v, want %#v", path, got, w)
		}
	}

	// Limits: the header is cut to 150 characters, the section to 3000,
	// never inside an entity.
	long := senders.Message{Title: strings.Repeat("&", 200), Body: strings.Repeat("<", 2000)}
	b, err := senders.SlackPayload(long)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	json.Unmarshal(b, &v)
	header := get(v, "blocks", 0, "text", "text").(string)
	section := get(v, "blocks", 1, "text", "text").(string)
	if n := len([]rune(header)); n > 150 || !strings.HasSuffix(header, "&amp;…") {
		t.Errorf("header of %d characters: ...%q", n, header[len(header)-12:])
	}
	if n := len([]rune(section)); n > 3000 || !strings.HasSuffix(section, "&lt;…") {
		t.Errorf("section of %d characters", n)
	}
	if _, err := senders.SlackPayload(senders.Message{}); err == nil {
		t.Error("empty message accepted")
	}
	// Only a body: no header block.
	b, _ = senders.SlackPayload(senders.Message{Body: "just this"})
	json.Unmarshal(b, &v)
	if get(v, "blocks", 0, "type") != "section" || get(v, "blocks", 1) != nil {
		t.Errorf("body-only payload: %s", b)
	}
}

func parseInt(s string) (int, error) {
	n := 0
	if s == "" {
		return 0, errors.New("empty")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

func TestTeamsPayload(t *testing.T) {
	h := newHook(t)
	h.status = http.StatusAccepted // what Workflows answer
	tm := &senders.Teams{Client: allowLoopback(t)}
	if err := tm.Send(context.Background(), h.dest(), senders.Message{Title: "Ticket closed", Body: "By <alice> & bob"}); err != nil {
		t.Fatal(err)
	}
	p := h.last(t)
	checks := []struct {
		path []any
		want any
	}{
		{[]any{"type"}, "message"},
		{[]any{"attachments", 0, "contentType"}, "application/vnd.microsoft.card.adaptive"},
		{[]any{"attachments", 0, "contentUrl"}, nil},
		{[]any{"attachments", 1}, nil},
		{[]any{"attachments", 0, "content", "type"}, "AdaptiveCard"},
		{[]any{"attachments", 0, "content", "$schema"}, "http://adaptivecards.io/schemas/adaptive-card.json"},
		{[]any{"attachments", 0, "content", "version"}, "1.4"},
		{[]any{"attachments", 0, "content", "body", 0, "type"}, "TextBlock"},
		{[]any{"attachments", 0, "content", "body", 0, "text"}, "Ticket closed"},
		{[]any{"attachments", 0, "content", "body", 0, "wrap"}, true},
		{[]any{"attachments", 0, "content", "body", 0, "weight"}, "Bolder"},
		{[]any{"attachments", 0, "content", "body", 1, "type"}, "TextBlock"},
		{[]any{"attachments", 0, "content", "body", 1, "text"}, "By <alice> & bob"},
		{[]any{"attachments", 0, "content", "body", 1, "wrap"}, true},
		{[]any{"attachments", 0, "content", "body", 2}, nil},
	}
	for _, c := range checks {
		if got := get(p, c.path...); got != c.want {
			t.Errorf("%v = %#v, want %#v", c.path, got, c.want)
		}
	}
	if _, ok := p["attachments"].([]any)[0].(map[string]any)["contentUrl"]; !ok {
		t.Error("contentUrl is not present (null)")
	}

	// A body too large for 28 KB is cut to fit, escapes included.
	for _, body := range []string{strings.Repeat("x", 40000), strings.Repeat("<", 40000), strings.Repeat("é", 20000)} {
		b, err := senders.TeamsPayload(senders.Message{Title: "T", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > senders.TeamsMaxBytes || len(b) < senders.TeamsMaxBytes-200 {
			t.Errorf("payload of %d bytes for a %d-byte body; want at most %d and close to it", len(b), len(body), senders.TeamsMaxBytes)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		text := get(v, "attachments", 0, "content", "body", 1, "text").(string)
		if !strings.HasSuffix(text, "…") || !strings.HasPrefix(body, strings.TrimSuffix(text, "…")) {
			t.Errorf("cut body does not end in an ellipsis or is not a prefix")
		}
	}
}

func TestChatErrors(t *testing.T) {
	h := newHook(t)
	s := &senders.Slack{Client: allowLoopback(t)}
	ctx := context.Background()
	msg := senders.Message{Title: "t", Body: "b"}
	cases := []struct {
		status     int
		respond    func(w http.ResponseWriter)
		retryable  bool
		retryAfter time.Duration
	}{
		{500, nil, true, 0},
		{503, func(w http.ResponseWriter) { w.Header().Set("Retry-After", "3") }, true, 3 * time.Second},
		{429, func(w http.ResponseWriter) { w.Header().Set("Retry-After", "7") }, true, 7 * time.Second},
		{429, func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		}, true, 90 * time.Second},
		{408, nil, true, 0},
		{400, nil, false, 0},
		{403, nil, false, 0},
		{410, nil, false, 0},
		{302, func(w http.ResponseWriter) { w.Header().Set("Location", "/elsewhere") }, false, 0},
	}
	for _, c := range cases {
		h.mu.Lock()
		h.status, h.respond = c.status, c.respond
		h.mu.Unlock()
		err := s.Send(ctx, h.dest(), msg)
		e, ok := senders.AsError(err)
		if !ok || e.StatusCode != c.status || e.Retryable != c.retryable || senders.Retryable(err) != c.retryable || e.Channel != "slack" {
			t.Errorf("status %d: %#v", c.status, err)
			continue
		}
		if d := e.RetryAfter - c.retryAfter; d < -2*time.Second || d > 0 {
			t.Errorf("status %d: RetryAfter %v, want %v", c.status, e.RetryAfter, c.retryAfter)
		}
		if e.Excerpt != "answer-body" {
			t.Errorf("status %d: excerpt %q", c.status, e.Excerpt)
		}
		if strings.Contains(err.Error(), "SECRET-PATH") {
			t.Errorf("status %d: the error shows the webhook URL: %v", c.status, err)
		}
	}
	before := h.count()

	// The guard: without the allowlist the loopback receiver is refused,
	// permanently, and never reached.
	guarded := &senders.Teams{Client: outbound.NewClient(outbound.Options{})}
	err := guarded.Send(ctx, h.dest(), msg)
	if e, ok := senders.AsError(err); !ok || e.Retryable || !errors.Is(err, outbound.ErrBlocked) || strings.Contains(err.Error(), "SECRET-PATH") {
		t.Errorf("guarded: %v", err)
	}
	if h.count() != before {
		t.Error("the guarded send reached the receiver")
	}

	// Nobody listening: retryable, and quick.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String() + "/services/SECRET-PATH"
	ln.Close()
	start := time.Now()
	err = s.Send(ctx, closed, msg)
	if e, ok := senders.AsError(err); !ok || !e.Retryable || e.StatusCode != 0 || strings.Contains(err.Error(), "SECRET-PATH") || time.Since(start) > 3*time.Second {
		t.Errorf("closed port: %v after %v", err, time.Since(start))
	}

	// A receiver that never answers: the client's timeout, retryable.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so the server notices the client hanging up
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	a, _ := outbound.ParseAllowlist("127.0.0.1/32")
	quick := &senders.Slack{Client: outbound.NewClient(outbound.Options{Allow: a, Timeout: 300 * time.Millisecond})}
	err = quick.Send(ctx, slow.URL+"/services/SECRET-PATH", msg)
	if e, ok := senders.AsError(err); !ok || !e.Retryable || !strings.Contains(e.Message, "in time") || strings.Contains(err.Error(), "SECRET-PATH") {
		t.Errorf("timeout: %v", err)
	}

	for _, bad := range []string{"ftp://127.0.0.1/x", "not a url", "http://user:SECRET-PATH@127.0.0.1/"} {
		err := s.Send(ctx, bad, msg)
		if e, ok := senders.AsError(err); !ok || e.Retryable || strings.Contains(err.Error(), "SECRET-PATH") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
