// Package outbound makes the HTTP calls that leave Ontoflow (webhooks,
// Slack, Teams, later functions' fetch) safe to point at addresses chosen
// by users: every connection's address is checked when it is dialled, so
// a name that resolves (or re-resolves) to an internal address is refused
// before a packet is sent; redirects are not followed; bodies are read up
// to a cap. Operators open chosen internal targets with an Allowlist.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// Defaults of Options.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultDialTimeout  = 10 * time.Second
	DefaultMaxBodyBytes = 64 << 10
)

// ErrBlocked is matched (errors.Is) by every refusal of the guard; the
// error's text names the address and the rule.
var ErrBlocked = errors.New("outbound connection refused by the SSRF guard")

// BlockedError is a refused connection: Addr is the IP:port that would
// have been dialled.
type BlockedError struct {
	Addr   string
	Reason error
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%v: %v (open it with --outbound-allow)", ErrBlocked, e.Reason)
}

// Is makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

func (e *BlockedError) Unwrap() error { return e.Reason }

// Resolver looks up a host's addresses; *net.Resolver is one. Tests use
// their own to resolve a name to a loopback address.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure NewClient; zero values take the defaults.
type Options struct {
	// Allow opens internal targets (nil: none).
	Allow *Allowlist
	// Timeout bounds a whole request, body included (0 = DefaultTimeout);
	// a shorter deadline on the request's context wins.
	Timeout time.Duration
	// DialTimeout bounds one connection attempt (0 = DefaultDialTimeout).
	DialTimeout time.Duration
	// Resolver resolves host names (nil = net.DefaultResolver).
	Resolver Resolver
}

// Guard checks the addresses connections are about to be made to.
type Guard struct {
	allow    *Allowlist
	guardian *ssrf.Guardian
}

// NewGuard returns the guard NewClient uses: deny loopback, private
// (RFC 1918), link-local, CGNAT, multicast, unspecified, reserved and
// documentation ranges, IPv6 outside global unicast (ULA, link-local,
// loopback, IPv4-mapped, NAT64) and IANA special-purpose prefixes; any
// port; allow what allow lists.
func NewGuard(allow *Allowlist) *Guard {
	return &Guard{allow: allow, guardian: ssrf.New(ssrf.WithAnyPort())}
}

type byNameKey struct{}

// control is the dialer's Control hook: it runs after the address is
// resolved and before connect(2), on the address actually dialled.
func (g *Guard) control(ctx context.Context, network, address string, c syscall.RawConn) error {
	if ok, _ := ctx.Value(byNameKey{}).(bool); ok {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err == nil && g.allow.permitsAddr(ap) {
		return nil
	}
	if err := g.guardian.Safe(network, address, c); err != nil {
		return &BlockedError{Addr: address, Reason: err}
	}
	return nil
}

// CheckAddr applies the guard to an IP:port without dialling (for
// callers that connect by other means).
func (g *Guard) CheckAddr(ap netip.AddrPort) error {
	network := "tcp4"
	if ap.Addr().Is6() {
		network = "tcp6"
	}
	return g.control(context.Background(), network, ap.String(), nil)
}

// dialer dials host names itself, one resolved address after another, so
// that an allowlisted name can be told to the Control hook and tests can
// resolve names their own way; every address still passes control.
type dialer struct {
	guard    *Guard
	resolver Resolver
	d        net.Dialer
}

func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if d.guard.allow.permitsHost(host, port) {
		ctx = context.WithValue(ctx, byNameKey{}, true)
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", port, err)
	}
	ips, err := d.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	var first error
	for _, ip := range ips {
		c, err := d.d.DialContext(ctx, network, netip.AddrPortFrom(ip, uint16(pn)).String())
		if err == nil {
			return c, nil
		}
		if first == nil || (errors.Is(first, ErrBlocked) && !errors.Is(err, ErrBlocked)) {
			first = err // report a real failure over a refusal
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

func (d *dialer) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	ips, err := d.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	for i, ip := range ips {
		// An IPv4 answer may come back in its IPv6-mapped form; dial it
		// as IPv4 (Go does the same), where the IPv4 rules apply.
		ips[i] = ip.Unmap()
	}
	return ips, nil
}

// NewClient returns an HTTP client for calls to addresses users chose:
// guarded dialling, no proxy from the environment (a proxy would be
// dialled instead of the target, and the guard would check the wrong
// address), redirects answered rather than followed, bounded timeouts,
// and the destinations a request's context restricts it to (RestrictTo)
// enforced on every request it sends.
func NewClient(opts Options) *http.Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	var res Resolver = net.DefaultResolver
	if opts.Resolver != nil {
		res = opts.Resolver
	}
	g := NewGuard(opts.Allow)
	d := &dialer{guard: g, resolver: res, d: net.Dialer{
		Timeout:        opts.DialTimeout,
		KeepAlive:      30 * time.Second,
		ControlContext: g.control,
	}}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   opts.DialTimeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: restricted{tr},
		Timeout:   opts.Timeout,
		// A redirect is the receiver's answer: a 3xx target was never
		// vetted by whoever configured the call, and following it would
		// resend the request (and its headers) somewhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ReadBody reads at most max bytes of r (max <= 0: DefaultMaxBodyBytes)
// and tells whether there was more, which is left unread.
func ReadBody(r io.Reader, max int64) (b []byte, truncated bool, err error) {
	if max <= 0 {
		max = DefaultMaxBodyBytes
	}
	b, err = io.ReadAll(io.LimitReader(r, max+1))
	if int64(len(b)) > max {
		return b[:max], true, err
	}
	return b, false, err
}

// Drain reads and discards up to 64 KiB of the rest of a response body
// and closes it, so its connection can be reused without reading an
// unbounded body.
func Drain(body io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	body.Close()
}

// CheckURL parses a URL a call is configured with: http or https, a
// host, no user information (credentials belong in headers, from
// secrets).
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme %q: only http and https are allowed", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("the URL has no host")
	}
	if u.User != nil {
		return nil, fmt.Errorf("user information in the URL is not allowed; use a header")
	}
	return u, nil
}
