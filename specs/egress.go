package specs

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// EgressProxyAddr is where the egress broker listens inside the
// container's own network namespace. Every container has a namespace of
// its own, so one fixed address serves all of them and the rules can name
// it in the environment before the container exists.
const EgressProxyAddr = "127.0.0.1:3128"

// EgressEntry is one destination of a profile's egress list: a name
// ("registry.npmjs.org"), every name below a domain ("*.example.org",
// never the domain itself) or an address the operator names literally,
// each with one port.
type EgressEntry struct {
	// Host is the lower-case name, the domain after "*." for a
	// wildcard, or empty for an address.
	Host     string
	Wildcard bool
	// Addr is the literal address; zero for a name.
	Addr netip.Addr
	Port uint16
}

func (e EgressEntry) String() string {
	switch {
	case e.Addr.IsValid():
		return net.JoinHostPort(e.Addr.String(), strconv.Itoa(int(e.Port)))
	case e.Wildcard:
		return "*." + e.Host + ":" + strconv.Itoa(int(e.Port))
	}
	return e.Host + ":" + strconv.Itoa(int(e.Port))
}

// ParseEgress parses a profile's egress list. Every entry needs a port: a
// name alone would open every service its addresses run.
func ParseEgress(entries []string) ([]EgressEntry, error) {
	out := make([]EgressEntry, 0, len(entries))
	for _, s := range entries {
		e, err := parseEgressEntry(s)
		if err != nil {
			return nil, fmt.Errorf("egress %q: %w", s, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseEgressEntry(s string) (EgressEntry, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return EgressEntry{}, fmt.Errorf("want host:port, *.domain:port or address:port")
	}
	port, err := ParsePort(portStr)
	if err != nil {
		return EgressEntry{}, err
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return EgressEntry{}, fmt.Errorf("an address with a zone names an interface, not a destination")
		}
		return EgressEntry{Addr: a.Unmap(), Port: port}, nil
	}
	e := EgressEntry{Port: port}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		e.Wildcard, host = true, rest
		// "*.com" would open a whole top-level domain.
		if !strings.Contains(host, ".") {
			return EgressEntry{}, fmt.Errorf("a wildcard needs a domain of at least two labels")
		}
	}
	name, ok := NormalizeHostName(host)
	if !ok {
		return EgressEntry{}, fmt.Errorf("%q is no host name (letters, digits, '-' and '.'; a wildcard only as the first label \"*.\")", host)
	}
	e.Host = name
	return e, nil
}

// ParsePort parses a decimal TCP port, 1 to 65535.
func ParsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != s {
		return 0, fmt.Errorf("port %q: want 1 to 65535", s)
	}
	return uint16(n), nil
}

// NormalizeHostName lower-cases a DNS host name without its root dot and
// tells whether it is one: labels of letters, digits and inner hyphens,
// 1 to 63 characters each, at most 253 in all. Anything else (an
// underscore, a percent sign, a space) is no name the broker resolves.
func NormalizeHostName(h string) (string, bool) {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" || len(h) > 253 {
		return "", false
	}
	for _, label := range strings.Split(h, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for _, r := range label {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				return "", false
			}
		}
	}
	// An all-numeric last label would read as an address to some
	// resolvers ("1.2.3.4" spelled "01.2.3.4").
	last := h[strings.LastIndexByte(h, '.')+1:]
	if strings.Trim(last, "0123456789") == "" {
		return "", false
	}
	return h, true
}

// MatchName tells whether the entry allows the normalized name host on
// port.
func (e EgressEntry) MatchName(host string, port uint16) bool {
	if e.Port != port || e.Addr.IsValid() {
		return false
	}
	if e.Wildcard {
		return strings.HasSuffix(host, "."+e.Host)
	}
	return host == e.Host
}

// MatchAddr tells whether the entry names the address a on port.
func (e EgressEntry) MatchAddr(a netip.Addr, port uint16) bool {
	return e.Port == port && e.Addr.IsValid() && e.Addr == a.Unmap()
}
