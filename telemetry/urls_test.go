package telemetry

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/ontoflow/ontoflow/internal/harness/otlptest"
)

// redactor replaces value with [secret:name], as secrets.Expander.Redact
// does for what it resolved.
func redactor(name, value string) func(string) string {
	return func(s string) string { return strings.ReplaceAll(s, value, "[secret:"+name+"]") }
}

// TestOutboundSpansShowTheDefinedURL: the outbound transport's spans, as
// an OTLP collector receives them, carry the URL the request's context
// shows (a secret by name), never the URL as sent: a path holding a
// secret's value, a whole URL that is a secret, and — with no shown URL —
// the URL sent to with the known values redacted. A call that fails
// (connection refused) records a status without the value, and its error
// still reports what failed. Loopback only.
func TestOutboundSpansShowTheDefinedURL(t *testing.T) {
	rx := otlptest.Start(t)
	ctx := context.Background()
	tr, err := TracingFromEnv(ctx)
	if err != nil || tr == nil {
		t.Fatalf("tracing from the environment: %v %v", tr, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downAddr := strings.TrimPrefix(down.URL, "http://")
	down.Close() // nothing listens there any more: connection refused
	client := &http.Client{Transport: tr.Transport(&http.Transport{})}

	const pathValue, hookValue = "pv-3f9c61d0a2", "hv-b7e2048c5d"
	get := func(ctx context.Context, u string) error {
		ctx, span := tr.Tracer("test").Start(ctx, "step")
		defer span.End()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		return nil
	}
	cases := []struct {
		name, url, shown string
		redact           func(string) string
		want             string // url.full
	}{
		{"a path holding a secret", srv.URL + "/hooks/p/" + pathValue + "/x?n=1", srv.URL + "/hooks/p/[secret:PATH_S]/x?n=1",
			redactor("PATH_S", pathValue), srv.URL + "/hooks/p/[secret:PATH_S]/x?n=1"},
		{"a URL that is a secret", srv.URL + "/slack/" + hookValue, "[secret:SLACK_HOOK]",
			redactor("SLACK_HOOK", srv.URL+"/slack/"+hookValue), "[secret:SLACK_HOOK]"},
		{"no shown URL, a known value", srv.URL + "/q?token=" + pathValue, "",
			redactor("PATH_S", pathValue), srv.URL + "/q?token=[secret:PATH_S]"},
	}
	for _, c := range cases {
		if err := get(WithShownURL(ctx, c.shown, c.redact), c.url); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	// The refused address stands for a secret value here, so that the
	// dial error the span's status quotes has one to hide.
	refused := get(WithShownURL(ctx, "http://[secret:DOWN]/hook", redactor("DOWN", downAddr)), "http://"+downAddr+"/hook")
	if refused == nil || !errors.Is(refused, syscall.ECONNREFUSED) {
		t.Fatalf("the call to a closed port: %v, want connection refused through the chain", refused)
	}
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	got := rx.Bytes()
	for _, v := range []string{pathValue, hookValue, downAddr} {
		if bytes.Contains(got, []byte(v)) {
			t.Errorf("the collector received the value %q", v)
		}
	}
	urls, statuses := rx.URLs()
	for _, c := range cases {
		if !contains(urls, c.want) {
			t.Errorf("%s: no span with url.full %q; got %q", c.name, c.want, urls)
		}
	}
	if !contains(urls, "http://[secret:DOWN]/hook") {
		t.Errorf("the refused call: no span with its shown URL; got %q", urls)
	}
	refusedStatus := false
	for _, s := range statuses {
		refusedStatus = refusedStatus || strings.Contains(s, "connection refused") && strings.Contains(s, "[secret:DOWN]")
	}
	if !refusedStatus {
		t.Errorf("no span's status tells the refusal, redacted: %q", statuses)
	}
}

// TestErrorTextShowsTheDefinedURL: the text of net/http's failure, which
// quotes the URL sent to, names the shown URL and no value.
func TestErrorTextShowsTheDefinedURL(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	// url.URL.String escapes the space but not the slash: a form that
	// none of the value's escapings a redactor knows (as is, path-,
	// query- or JSON-escaped) matches.
	const value = "tok/en 1"
	u := down.URL + "/hooks/" + strings.ReplaceAll(value, " ", "%20") + "/x"
	_, err := http.Get(u)
	if err == nil {
		t.Fatal("a closed port answered")
	}
	ctx := WithShownURL(context.Background(), down.URL+"/hooks/[secret:V]/x", redactor("V", value))
	text := ErrorText(ctx, err)
	if strings.Contains(text, "tok/en") || !strings.Contains(text, "[secret:V]") || !strings.Contains(text, "connection refused") {
		t.Errorf("error text %q", text)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
