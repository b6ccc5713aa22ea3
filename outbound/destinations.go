package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// MaxDestinations bounds the entries of one allow-list of destinations.
const MaxDestinations = 32

// Destination is one entry of an allow-list of where something (a
// secret) may be sent: a host, or a URL prefix.
//
// A host ("api.example.com", "api.example.com:8443", "127.0.0.1:9000",
// "[::1]:9000") permits http and https URLs on that host; without a port,
// only on the scheme's default port (80, 443). A URL prefix
// ("https://hooks.example.com/services/") permits URLs of that scheme,
// host and port whose path is the prefix's path or lies below it (a
// prefix "/a" permits "/a" and "/a/b", not "/ab"), and never a path with a
// "." or ".." segment, which a receiver could resolve out of the prefix.
// Hosts are compared as written, case-insensitively: a name is not
// resolved, so a name permits what its DNS answers and an IP only itself.
type Destination struct {
	scheme string // "" = http or https
	host   string // lower case, no trailing dot, IPv6 without brackets
	port   string // "" = the scheme's default port
	path   string // escaped; "" = any path
}

// ParseDestination reads one entry (see Destination).
func ParseDestination(s string) (Destination, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 2048 {
		return Destination{}, errors.New("a destination is a host or a URL prefix of at most 2048 characters")
	}
	if strings.Contains(s, "://") {
		return parsePrefix(s)
	}
	return parseHost(s)
}

func parsePrefix(s string) (Destination, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return Destination{}, fmt.Errorf("%q is not an http or https URL prefix with a host", s)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return Destination{}, fmt.Errorf("URL prefix %q must not hold user information, a query or a fragment", s)
	}
	if hasDotSegment(u.Path) {
		return Destination{}, fmt.Errorf("URL prefix %q must not hold a . or .. segment", s)
	}
	host, err := checkHost(u.Hostname())
	if err != nil {
		return Destination{}, err
	}
	d := Destination{scheme: u.Scheme, host: host, port: u.Port(), path: u.EscapedPath()}
	if d.port == defaultPort(d.scheme) {
		d.port = ""
	}
	if d.path == "/" {
		d.path = ""
	}
	return d, nil
}

func parseHost(s string) (Destination, error) {
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return Destination{}, fmt.Errorf("destination %q: port %q is not a port number", s, p)
		}
	}
	host, err := checkHost(host)
	if err != nil {
		return Destination{}, err
	}
	return Destination{host: host, port: port}, nil
}

// checkHost normalises a host name or IP address.
func checkHost(h string) (string, error) {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if ip, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return ip.Unmap().String(), nil
	}
	if h == "" || len(h) > 253 || strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789-._") != "" {
		return "", fmt.Errorf("%q is not a host name or an IP address", h)
	}
	return h, nil
}

// String is the entry in its normal form (what is stored and shown).
func (d Destination) String() string {
	hostport := d.host
	if strings.Contains(d.host, ":") {
		hostport = "[" + d.host + "]"
	}
	if d.port != "" {
		hostport += ":" + d.port
	}
	if d.scheme == "" {
		return hostport
	}
	p := d.path
	if p == "" {
		p = "/"
	}
	return d.scheme + "://" + hostport + p
}

func defaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// permitsOrigin reports whether u's scheme, host and port are d's.
func (d Destination) permitsOrigin(u *url.URL) bool {
	if u.Scheme != "http" && u.Scheme != "https" || (d.scheme != "" && u.Scheme != d.scheme) {
		return false
	}
	host, err := checkHost(u.Hostname())
	if err != nil || host != d.host {
		return false
	}
	port := u.Port()
	if port == defaultPort(u.Scheme) {
		port = ""
	}
	return port == d.port
}

// permitsPath reports whether an escaped path lies in d's prefix. When
// open, more path may follow what is known (a template's literal start),
// so only a prefix already complete in it counts.
func (d Destination) permitsPath(escaped, decoded string, open bool) bool {
	if d.path == "" {
		return true
	}
	if hasDotSegment(decoded) {
		return false
	}
	if !open && escaped == d.path {
		return true
	}
	p := d.path
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return strings.HasPrefix(escaped, p)
}

// hasDotSegment reports whether a (decoded) path has a "." or ".."
// segment.
func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// Destinations is an allow-list; an empty one permits nothing.
type Destinations []Destination

// ParseDestinations reads a list of entries (at most MaxDestinations).
func ParseDestinations(list []string) (Destinations, error) {
	if len(list) > MaxDestinations {
		return nil, fmt.Errorf("at most %d destinations", MaxDestinations)
	}
	out := make(Destinations, 0, len(list))
	for _, s := range list {
		d, err := ParseDestination(s)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Strings are the entries in their normal form, duplicates dropped.
func (ds Destinations) Strings() []string {
	out := make([]string, 0, len(ds))
	seen := map[string]bool{}
	for _, d := range ds {
		if s := d.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Permits reports whether a request to u may be made.
func (ds Destinations) Permits(u *url.URL) bool {
	for _, d := range ds {
		if d.permitsOrigin(u) && d.permitsPath(u.EscapedPath(), u.Path, false) {
			return true
		}
	}
	return false
}

// PermitsTemplate reports whether every URL a template may render to is
// permitted, judging by its literal start (up to the first "{{"), which
// must hold the whole scheme and host: a definition-time check. What the
// templates add is checked again when the request is made.
func (ds Destinations) PermitsTemplate(raw string) bool {
	lit, open := raw, false
	if i := strings.Index(raw, "{{"); i >= 0 {
		lit, open = raw[:i], true
	}
	if j := strings.IndexAny(lit, "?#"); j >= 0 {
		lit, open = lit[:j], false // the path is complete
	}
	u, err := url.Parse(lit)
	if err != nil || u.Host == "" {
		return false
	}
	if open && !authorityEnds(lit) {
		return false // the host itself would continue in a template
	}
	for _, d := range ds {
		if d.permitsOrigin(u) && d.permitsPath(u.EscapedPath(), u.Path, open) {
			return true
		}
	}
	return false
}

// authorityEnds reports whether raw has a path after its host.
func authorityEnds(raw string) bool {
	i := strings.Index(raw, "://")
	return i >= 0 && strings.Contains(raw[i+3:], "/")
}

// DestinationOf is the narrowest URL-prefix destination that permits the
// URL template raw by its literal start: the origin and the path up to
// its last complete segment before any template or query (false when raw
// has no literal origin).
func DestinationOf(raw string) (Destination, bool) {
	lit := raw
	if i := strings.IndexAny(lit, "?#"); i >= 0 {
		lit = lit[:i]
	}
	if i := strings.Index(lit, "{{"); i >= 0 {
		if !authorityEnds(lit[:i]) {
			return Destination{}, false
		}
		lit = lit[:strings.LastIndex(lit[:i], "/")+1]
	}
	u, err := url.Parse(lit)
	if err != nil || u.Host == "" {
		return Destination{}, false
	}
	u.Path, u.RawPath = cleanPrefix(u.Path), ""
	d, err := parsePrefix(u.String())
	if err != nil {
		return Destination{}, false
	}
	return d, true
}

// cleanPrefix cuts a path before its first dot segment.
func cleanPrefix(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "." || s == ".." {
			return strings.Join(segs[:i], "/") + "/"
		}
	}
	return p
}

// ErrDestination is matched (errors.Is) by every refusal of a request
// whose URL is outside the destinations its context restricts it to.
var ErrDestination = errors.New("outbound request refused: outside the allowed destinations")

// DestinationError is such a refusal. Its text names what was restricted
// (e.g. "secret CRM_TOKEN"), never the URL, which may hold a secret.
type DestinationError struct{ What string }

func (e *DestinationError) Error() string {
	return fmt.Sprintf("%s may not be sent to this URL: it is outside the allowed destinations", e.What)
}

// Is makes errors.Is(err, ErrDestination) true.
func (e *DestinationError) Is(target error) bool { return target == ErrDestination }

type restrictKey struct{}

type restriction struct {
	what  string
	dests Destinations
}

// RestrictTo returns ctx under which a client of NewClient sends a request
// only when dests permits its URL; what names the restriction in the
// refusal. Restrictions add up: every one must permit the URL. The check
// is made on each request as the transport is about to send it, after
// its URL is final (redirects are not followed; one that were would be
// checked again).
func RestrictTo(ctx context.Context, what string, dests Destinations) context.Context {
	rs, _ := ctx.Value(restrictKey{}).([]restriction)
	rs = append(append([]restriction(nil), rs...), restriction{what, dests})
	return context.WithValue(ctx, restrictKey{}, rs)
}

// restricted is the transport that enforces RestrictTo.
type restricted struct{ base http.RoundTripper }

func (t restricted) RoundTrip(req *http.Request) (*http.Response, error) {
	rs, _ := req.Context().Value(restrictKey{}).([]restriction)
	for _, r := range rs {
		if !r.dests.Permits(req.URL) {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, &DestinationError{What: r.what}
		}
	}
	return t.base.RoundTrip(req)
}
