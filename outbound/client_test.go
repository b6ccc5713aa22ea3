package outbound_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ontoflow/ontoflow/outbound"
)

// These tests send traffic to loopback only (127.0.0.1, ::1, localhost and
// a name the test's own resolver maps to 127.0.0.1).

// receiver is an HTTP server on a loopback address that counts the
// connections that reached it.
type receiver struct {
	*httptest.Server
	conns atomic.Int64
	hits  atomic.Int64
}

func newReceiver(t *testing.T, network, addr string, h http.HandlerFunc) *receiver {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	r := &receiver{}
	if h == nil {
		h = func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") }
	}
	r.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		h(w, req)
	})}}
	r.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}
	r.Start()
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) port() string {
	_, p, _ := net.SplitHostPort(r.Listener.Addr().String())
	return p
}

// loopbackResolver answers every name with 127.0.0.1, as a DNS record
// rebound to an internal address would.
type loopbackResolver struct{ asked atomic.Int64 }

func (l *loopbackResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	l.asked.Add(1)
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func get(c *http.Client, u string) (*http.Response, error) {
	res, err := c.Get(u)
	if err == nil {
		defer res.Body.Close()
		io.ReadAll(res.Body)
	}
	return res, err
}

func mustAllow(t *testing.T, s string) *outbound.Allowlist {
	t.Helper()
	a, err := outbound.ParseAllowlist(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestRefusedByDefault(t *testing.T) {
	v4 := newReceiver(t, "tcp4", "127.0.0.1:0", nil)
	res := &loopbackResolver{}
	c := outbound.NewClient(outbound.Options{Resolver: res})
	urls := []string{
		"http://127.0.0.1:" + v4.port() + "/",
		"http://127.1.2.3:" + v4.port() + "/", // elsewhere in 127.0.0.0/8
		"http://[::ffff:127.0.0.1]:" + v4.port() + "/",
		"http://rebound.test:" + v4.port() + "/", // a name resolving to 127.0.0.1
		"https://rebound.test:" + v4.port() + "/",
	}
	for _, u := range urls {
		_, err := get(c, u)
		if !errors.Is(err, outbound.ErrBlocked) {
			t.Errorf("%s: %v, want a refusal", u, err)
		}
	}
	if res.asked.Load() != 2 {
		t.Errorf("the test resolver was asked %d times, want 2", res.asked.Load())
	}
	// localhost through the system resolver.
	sys := outbound.NewClient(outbound.Options{})
	if _, err := get(sys, "http://localhost:"+v4.port()+"/"); !errors.Is(err, outbound.ErrBlocked) {
		t.Errorf("localhost: %v, want a refusal", err)
	}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ln.Close()
		v6 := newReceiver(t, "tcp6", "[::1]:0", nil)
		if _, err := get(c, "http://[::1]:"+v6.port()+"/"); !errors.Is(err, outbound.ErrBlocked) {
			t.Errorf("[::1]: %v, want a refusal", err)
		}
		if v6.conns.Load() != 0 {
			t.Errorf("%d connections reached the ::1 receiver", v6.conns.Load())
		}
	} else {
		t.Logf("no IPv6 loopback on this machine (%v): the ::1 case did not run", err)
	}
	if v4.conns.Load() != 0 || v4.hits.Load() != 0 {
		t.Fatalf("%d connections and %d requests reached the receiver; want none", v4.conns.Load(), v4.hits.Load())
	}
	// The refusal names the rule, not just "failed".
	_, err := get(c, "http://127.0.0.1:"+v4.port()+"/")
	if !strings.Contains(err.Error(), "127.0.0.0/8") || !strings.Contains(err.Error(), "--outbound-allow") {
		t.Errorf("refusal text: %v", err)
	}
	var be *outbound.BlockedError
	if !errors.As(err, &be) || be.Addr != "127.0.0.1:"+v4.port() {
		t.Errorf("BlockedError: %#v", be)
	}
}

func TestAllowlist(t *testing.T) {
	a := newReceiver(t, "tcp4", "127.0.0.1:0", nil)
	b := newReceiver(t, "tcp4", "127.0.0.1:0", nil)
	res := &loopbackResolver{}
	cases := []struct {
		allow   string
		url     string
		allowed bool
	}{
		{"127.0.0.1/32", "http://127.0.0.1:" + a.port() + "/", true},
		{"127.0.0.0/8", "http://127.0.0.1:" + b.port() + "/", true},
		{"127.0.0.1", "http://127.0.0.1:" + a.port() + "/", true},
		{"127.0.0.1:" + a.port(), "http://127.0.0.1:" + a.port() + "/", true},
		{"127.0.0.1:" + a.port(), "http://127.0.0.1:" + b.port() + "/", false}, // the other port
		{"127.0.0.2/32", "http://127.0.0.1:" + a.port() + "/", false},
		{"rebound.test:" + a.port(), "http://rebound.test:" + a.port() + "/", true},
		{"REBOUND.test.:" + a.port(), "http://rebound.test:" + a.port() + "/", true},
		{"rebound.test:" + a.port(), "http://rebound.test:" + b.port() + "/", false},
		{"rebound.test:" + a.port(), "http://127.0.0.1:" + a.port() + "/", false}, // by name only
		{"other.test:" + a.port(), "http://rebound.test:" + a.port() + "/", false},
		{"127.0.0.1/32", "http://rebound.test:" + a.port() + "/", true}, // the address is what counts
		{"127.0.0.1/32", "http://[::ffff:127.0.0.1]:" + a.port() + "/", true},
	}
	for _, c := range cases {
		cl := outbound.NewClient(outbound.Options{Allow: mustAllow(t, c.allow), Resolver: res})
		before := a.hits.Load() + b.hits.Load()
		resp, err := get(cl, c.url)
		hit := a.hits.Load()+b.hits.Load() > before
		if c.allowed && (err != nil || resp.StatusCode != 200 || !hit) {
			t.Errorf("allow %s, %s: %v; want it to reach the receiver", c.allow, c.url, err)
		}
		if !c.allowed && (!errors.Is(err, outbound.ErrBlocked) || hit) {
			t.Errorf("allow %s, %s: %v (hit %v); want a refusal", c.allow, c.url, err, hit)
		}
	}
}

func TestParseAllowlist(t *testing.T) {
	a, err := outbound.ParseAllowlist(" 127.0.0.1/32, [::1]:9000 ,hooks.internal:8443,,")
	if err != nil || a.String() != "127.0.0.1/32,[::1]:9000,hooks.internal:8443" {
		t.Fatalf("%v %q", err, a)
	}
	for _, bad := range []string{"nonsense", "host.only", "h:0", "h:70000", "h:x", "127.0.0.1/33", ":80", "a b:80"} {
		if _, err := outbound.ParseAllowlist(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	var target atomic.Int64
	r := newReceiver(t, "tcp4", "127.0.0.1:0", func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/elsewhere" {
			target.Add(1)
			return
		}
		http.Redirect(w, req, "/elsewhere", http.StatusFound)
	})
	c := outbound.NewClient(outbound.Options{Allow: mustAllow(t, "127.0.0.1/32")})
	res, err := get(c, r.URL+"/start")
	if err != nil || res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/elsewhere" {
		t.Fatalf("redirect: %v %v", res, err)
	}
	if target.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	r := newReceiver(t, "tcp4", "127.0.0.1:0", func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	})
	defer close(release)
	c := outbound.NewClient(outbound.Options{Allow: mustAllow(t, "127.0.0.1/32"), Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := get(c, r.URL)
	var ue *url.Error
	if err == nil || !errors.As(err, &ue) || !ue.Timeout() || time.Since(start) > 5*time.Second {
		t.Fatalf("slow receiver: %v after %v", err, time.Since(start))
	}
}

func TestReadBody(t *testing.T) {
	b, trunc, err := outbound.ReadBody(strings.NewReader("0123456789"), 4)
	if err != nil || string(b) != "0123" || !trunc {
		t.Fatalf("%q %v %v", b, trunc, err)
	}
	b, trunc, err = outbound.ReadBody(strings.NewReader("0123"), 4)
	if err != nil || string(b) != "0123" || trunc {
		t.Fatalf("%q %v %v", b, trunc, err)
	}
	big := strings.Repeat("x", outbound.DefaultMaxBodyBytes+10)
	b, trunc, _ = outbound.ReadBody(strings.NewReader(big), 0)
	if len(b) != outbound.DefaultMaxBodyBytes || !trunc {
		t.Fatalf("default cap: %d %v", len(b), trunc)
	}
}

func TestCheckURL(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080/x?y=1", "https://localhost/"} {
		if _, err := outbound.CheckURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"ftp://localhost/", "file:///etc/passwd", "http:///nohost", "http://user:pw@localhost/", "localhost:80", "://"} {
		_, err := outbound.CheckURL(bad)
		if err == nil {
			t.Errorf("%s: accepted", bad)
		} else if strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: the error repeats the URL: %v", bad, err)
		}
	}
}
