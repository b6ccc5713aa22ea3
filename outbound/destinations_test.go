package outbound_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ontoflow/ontoflow/outbound"
)

func mustDests(t *testing.T, list ...string) outbound.Destinations {
	t.Helper()
	ds, err := outbound.ParseDestinations(list)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestParseDestination(t *testing.T) {
	normal := map[string]string{
		"API.Example.com.":                     "api.example.com",
		"api.example.com:8443":                 "api.example.com:8443",
		"127.0.0.1:9000":                       "127.0.0.1:9000",
		"[::1]:9000":                           "[::1]:9000",
		"::1":                                  "[::1]",
		"https://Hooks.Example.com/services/":  "https://hooks.example.com/services/",
		"https://hooks.example.com:443/a":      "https://hooks.example.com/a",
		"http://hooks.example.com":             "http://hooks.example.com/",
		"http://127.0.0.1:8080/x%2Fy/":         "http://127.0.0.1:8080/x%2Fy/",
		"https://[::ffff:127.0.0.1]:9000/hook": "https://127.0.0.1:9000/hook",
	}
	for in, want := range normal {
		d, err := outbound.ParseDestination(in)
		if err != nil || d.String() != want {
			t.Errorf("%q: %q %v, want %q", in, d.String(), err, want)
		}
	}
	for _, bad := range []string{"", "ftp://x/", "https:///path", "https://u:p@h/", "https://h/?q=1", "https://h/#f",
		"https://h/a/../b", "h:0", "h:99999", "a b", "h/path", strings.Repeat("a", 2049)} {
		if _, err := outbound.ParseDestination(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := outbound.ParseDestinations(make([]string, outbound.MaxDestinations+1)); err == nil {
		t.Error("too many destinations accepted")
	}
}

func TestDestinationsPermit(t *testing.T) {
	ds := mustDests(t, "api.example.com", "127.0.0.1:9000", "https://hooks.example.com/services", "http://127.0.0.2:8080/in/")
	cases := map[string]bool{
		"https://api.example.com/anything?q=1":      true,
		"http://API.example.com./x":                 true,
		"https://api.example.com:443/x":             true,
		"https://api.example.com:8443/x":            false, // a host without a port: the default port only
		"https://api.example.com.evil.test/":        false,
		"https://evil.test/api.example.com":         false,
		"http://127.0.0.1:9000/x":                   true,
		"http://127.0.0.1:9001/x":                   false,
		"http://localhost:9000/x":                   false, // names are compared as written
		"https://hooks.example.com/services":        true,
		"https://hooks.example.com/services/T1/B2":  true,
		"https://hooks.example.com/servicesX":       false,
		"http://hooks.example.com/services/x":       false, // a prefix fixes the scheme
		"https://hooks.example.com/services/../x":   false,
		"https://hooks.example.com/services/%2e%2e": false,
		"https://hooks.example.com/other":           false,
		"http://127.0.0.2:8080/in/x":                true,
		"http://127.0.0.2:8080/in":                  false,
		"http://127.0.0.2:8080/inx":                 false,
		"http://127.0.0.2:8080/in%2F..%2Fadmin":     false,
		"ftp://api.example.com/":                    false,
	}
	for raw, want := range cases {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := ds.Permits(u); got != want {
			t.Errorf("Permits(%s) = %v, want %v", raw, got, want)
		}
	}
	if (outbound.Destinations{}).Permits(&url.URL{Scheme: "https", Host: "api.example.com"}) {
		t.Error("an empty list permits")
	}
}

func TestDestinationsPermitTemplate(t *testing.T) {
	ds := mustDests(t, "https://hooks.example.com/services/", "https://crm.example.com/api", "api.example.com")
	cases := map[string]bool{
		"https://hooks.example.com/services/{{ parameters.x }}":       true,
		"https://hooks.example.com/serv{{ parameters.x }}":            false,
		"https://hooks.example.com/services/a?x={{ parameters.x }}":   true,
		"https://crm.example.com/api":                                 true,
		"https://crm.example.com/api{{ parameters.x }}":               false, // "/apix" would follow
		"https://crm.example.com/api?q={{ parameters.x }}":            true,
		"https://crm.example.com/api/{{ secrets.PATH }}":              true,
		"https://api.example.com/{{ parameters.x }}":                  true,
		"https://api.example.com:8443/{{ parameters.x }}":             false,
		"https://evil.test/?u=https://hooks.example.com/services/":    false,
		"https://hooks.example.com/services/../{{ parameters.x }}":    false,
		"https://hooks.example.com.evil.test/services/":               false,
		"https://{{ parameters.host }}/services/":                     false,
		"https://hooks.example.com{{ parameters.x }}/services/":       false,
		"https://hooks.example.com/services/%{{ parameters.x }}":      false, // does not parse
		"http://hooks.example.com/services/":                          false,
		"https://crm.example.com/api/x#{{ parameters.x }}":            true,
		"https://crm.example.com/apix":                                false,
		"https://crm.example.com/api/x/{{ parameters.a }}/{{ b }}/..": true, // the rest is checked when sent
	}
	for raw, want := range cases {
		if got := ds.PermitsTemplate(raw); got != want {
			t.Errorf("PermitsTemplate(%s) = %v, want %v", raw, got, want)
		}
	}
}

func TestDestinationOf(t *testing.T) {
	cases := map[string]string{
		"https://crm.example.com/api/tickets/{{ parameters.id }}": "https://crm.example.com/api/tickets/",
		"https://crm.example.com/api/v{{ parameters.v }}/x":       "https://crm.example.com/api/",
		"https://hooks.example.com/crm":                           "https://hooks.example.com/crm",
		"https://hooks.example.com/crm?token={{ secrets.T }}":     "https://hooks.example.com/crm",
		"http://127.0.0.1:9000/hook/{{ secrets.PATH }}":           "http://127.0.0.1:9000/hook/",
		"http://127.0.0.1:9000":                                   "http://127.0.0.1:9000/",
		"https://h.example.com/a/../b/{{ parameters.x }}":         "https://h.example.com/a/",
	}
	for raw, want := range cases {
		d, ok := outbound.DestinationOf(raw)
		if !ok || d.String() != want {
			t.Errorf("DestinationOf(%s) = %q %v, want %q", raw, d.String(), ok, want)
			continue
		}
		if !(outbound.Destinations{d}).PermitsTemplate(raw) && !strings.Contains(raw, "..") {
			t.Errorf("DestinationOf(%s) = %s does not permit it", raw, d)
		}
	}
	if _, ok := outbound.DestinationOf("https://{{ parameters.h }}/x"); ok {
		t.Error("a template host gave a destination")
	}
}

// TestRestrictTo: a request whose context restricts it to destinations
// is refused by the client, before any connection, when its URL is
// outside them; one inside is sent. Loopback only.
func TestRestrictTo(t *testing.T) {
	in := newReceiver(t, "tcp4", "127.0.0.1:0", nil)
	out := newReceiver(t, "tcp4", "127.0.0.1:0", nil)
	c := outbound.NewClient(outbound.Options{Allow: mustAllow(t, "127.0.0.1/32")})
	ctx := outbound.RestrictTo(context.Background(), "the secret TOKEN", mustDests(t, "127.0.0.1:"+in.port()))
	send := func(ctx context.Context, u string) error {
		req, err := newGet(ctx, u+"/path?token=s3cr3t")
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Do(req)
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	if err := send(ctx, in.URL); err != nil {
		t.Fatalf("inside: %v", err)
	}
	err := send(ctx, out.URL)
	var de *outbound.DestinationError
	if !errors.Is(err, outbound.ErrDestination) || !errors.As(err, &de) || de.What != "the secret TOKEN" {
		t.Fatalf("outside: %v", err)
	}
	if strings.Contains(de.Error(), "s3cr3t") || strings.Contains(de.Error(), out.port()) {
		t.Errorf("the refusal shows the URL: %v", de)
	}
	// Restrictions add up: both must permit.
	both := outbound.RestrictTo(ctx, "the secret OTHER", mustDests(t, "127.0.0.1:"+out.port()))
	if err := send(both, in.URL); !errors.Is(err, outbound.ErrDestination) {
		t.Errorf("two restrictions, one refusing: %v", err)
	}
	// Without a restriction nothing changes.
	if err := send(context.Background(), out.URL); err != nil {
		t.Errorf("unrestricted: %v", err)
	}
	if in.hits.Load() != 1 || out.hits.Load() != 1 || out.conns.Load() != 1 {
		t.Errorf("hits in %d, out %d (connections %d): a refused request reached its receiver", in.hits.Load(), out.hits.Load(), out.conns.Load())
	}
}

func newGet(ctx context.Context, u string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
}
