package outbound

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Allowlist is the operator's list of internal targets the guard lets
// through (--outbound-allow): address prefixes (any port), IP:port pairs,
// and host name:port pairs (that name as written in the URL, on that
// port, whatever address it resolves to: the operator trusts its DNS).
type Allowlist struct {
	prefixes  []netip.Prefix
	addrPorts []netip.AddrPort
	hostPorts map[string]bool // "name:port", lower case
	text      []string
}

// ParseAllowlist reads a comma-separated list of entries: a CIDR
// ("127.0.0.1/32", "fd00::/8"), an IP:port ("127.0.0.1:9000",
// "[::1]:9000") or a host:port ("hooks.internal:8443"). A bare IP is
// taken as its single-address prefix. Empty is an empty list.
func ParseAllowlist(s string) (*Allowlist, error) {
	a := &Allowlist{hostPorts: map[string]bool{}}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if err := a.add(e); err != nil {
			return nil, fmt.Errorf("--outbound-allow entry %q: %w", e, err)
		}
		a.text = append(a.text, e)
	}
	return a, nil
}

func (a *Allowlist) add(e string) error {
	if p, err := netip.ParsePrefix(e); err == nil {
		a.prefixes = append(a.prefixes, p.Masked())
		return nil
	}
	if ip, err := netip.ParseAddr(e); err == nil {
		a.prefixes = append(a.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
		return nil
	}
	host, port, err := net.SplitHostPort(e)
	if err != nil {
		return fmt.Errorf("not a CIDR, an IP, an IP:port or a host:port")
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return fmt.Errorf("port %q is not a port number", port)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		a.addrPorts = append(a.addrPorts, netip.AddrPortFrom(ip, uint16(n)))
		return nil
	}
	if host == "" || strings.ContainsAny(host, "/@ ") {
		return fmt.Errorf("host %q is not a host name", host)
	}
	a.hostPorts[hostKey(host, port)] = true
	return nil
}

func hostKey(host, port string) string {
	return strings.ToLower(strings.TrimSuffix(host, ".")) + ":" + port
}

// String is the list as given, normalised to "a,b,c".
func (a *Allowlist) String() string {
	if a == nil {
		return ""
	}
	return strings.Join(a.text, ",")
}

// permitsAddr reports whether the address actually dialled is allowlisted.
func (a *Allowlist) permitsAddr(ap netip.AddrPort) bool {
	if a == nil {
		return false
	}
	for _, p := range a.prefixes {
		if p.Contains(ap.Addr()) {
			return true
		}
	}
	for _, x := range a.addrPorts {
		if x == ap {
			return true
		}
	}
	return false
}

// permitsHost reports whether the host name and port of the URL are
// allowlisted by name.
func (a *Allowlist) permitsHost(host, port string) bool {
	return a != nil && len(a.hostPorts) > 0 && a.hostPorts[hostKey(host, port)]
}
