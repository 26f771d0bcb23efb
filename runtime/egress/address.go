package egress

import (
	"net"
	"net/netip"
)

// refusedPrefixes are the ranges no name may lead to unless the operator
// lists the address itself: they reach the host, its network or its cloud
// rather than the destination the job asked for by name.
var refusedPrefixes = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (this-network) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (cloud metadata lives there)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fc00::/7"), "a private (ULA) address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// nat64 embeds an IPv4 address in its last 32 bits: the embedded one is
// where the connection ends up.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// refusedAddress says why a is no destination a name may lead to, "" when
// it may be one. own are the host's addresses.
func refusedAddress(a netip.Addr, own []netip.Addr) string {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		if why := refusedAddress(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), own); why != "" {
			return why + " behind NAT64"
		}
	}
	for _, r := range refusedPrefixes {
		if r.prefix.Contains(a) {
			return r.why
		}
	}
	for _, o := range own {
		if o == a {
			return "an address of the host itself"
		}
	}
	return ""
}

// hostAddresses are the addresses of the host's interfaces, read at each
// connection: an interface may come up after the broker started.
func hostAddresses() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}
