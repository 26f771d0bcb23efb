package egress

import (
	"fmt"
	"net/netip"
	"syscall"
	"unsafe"
)

// A name may lead only to a public unicast address: the broker is the
// job's way to the destinations the operator named, not to the host, its
// network or its cloud. What is not known to be public is refused, so an
// address form no rule below names (a tunnel, a translation prefix, a range
// assigned later) is refused rather than passed through.

// globalUnicast6 is the IPv6 global unicast space; everything outside it
// (ULA, link-local, multicast, the v4-compatible and NAT64 forms, the
// discard prefix) is refused unless the embedded address is judged.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// specialPrefixes lie inside the public spaces but do not reach the host
// the job named: private and shared ranges, protocol assignments, tunnels
// that embed another address (6to4, Teredo), documentation and benchmark
// ranges (IANA's special-purpose address registries).
var specialPrefixes = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (this-network) address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (cloud metadata lives there)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol address (Teredo and others)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address (it embeds another)"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
}

// nat64 embeds an IPv4 address in its last 32 bits: the embedded one is
// where the connection ends up, and is judged instead.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// refusedAddress says why a is no destination a name may lead to, "" when
// it may be one. own are what the host takes for itself (hostLocal).
func refusedAddress(a netip.Addr, own []netip.Prefix) string {
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		if why := refusedAddress(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), own); why != "" {
			return why + " behind NAT64"
		}
		return ""
	}
	if !a.IsValid() || (a.Is6() && !globalUnicast6.Contains(a)) {
		return "not a public unicast address"
	}
	for _, r := range specialPrefixes {
		if r.prefix.Contains(a) {
			return r.why
		}
	}
	for _, o := range own {
		if o.Contains(a) {
			return "an address of the host itself"
		}
	}
	return ""
}

// hostLocal is every address the host's kernel delivers to itself, read
// at each connection (an address may come up after the broker started):
// the local, broadcast and anycast routes of all its routing tables. The
// interfaces' addresses are not all of them: a `local` route (what cloud
// guest agents add for a load balancer's address) and every address of a
// prefix on lo are the host's too, and a service listening on 0.0.0.0
// answers on each.
func hostLocal() ([]netip.Prefix, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETROUTE, syscall.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	var out []netip.Prefix
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWROUTE || len(m.Data) < syscall.SizeofRtMsg {
			continue
		}
		rt := (*syscall.RtMsg)(unsafe.Pointer(&m.Data[0]))
		if rt.Type != syscall.RTN_LOCAL && rt.Type != syscall.RTN_BROADCAST && rt.Type != syscall.RTN_ANYCAST {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return nil, fmt.Errorf("routes: %w", err)
		}
		// A route without a destination is one for every address of its
		// family (`ip route add local 0.0.0.0/0 dev lo`).
		dst := netip.IPv4Unspecified()
		if rt.Family == syscall.AF_INET6 {
			dst = netip.IPv6Unspecified()
		}
		for _, a := range attrs {
			if a.Attr.Type == syscall.RTA_DST {
				ip, ok := netip.AddrFromSlice(a.Value)
				if !ok {
					return nil, fmt.Errorf("routes: a destination of %d bytes", len(a.Value))
				}
				dst = ip
			}
		}
		p, err := dst.Prefix(int(rt.Dst_len))
		if err != nil {
			return nil, fmt.Errorf("routes: %s/%d: %w", dst, rt.Dst_len, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		// Every host has at least its loopback route: none read is a
		// table not read, and judging against nothing would pass all.
		return nil, fmt.Errorf("routes: no local route in the kernel's tables")
	}
	return out, nil
}
