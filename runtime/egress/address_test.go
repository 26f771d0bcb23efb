package egress

import (
	"net/netip"
	"testing"
)

// Only public unicast addresses pass; every form that embeds or stands for
// another address is judged by where it leads or refused.
func TestRefusedAddress(t *testing.T) {
	own := []netip.Addr{netip.MustParseAddr("203.0.114.7")}
	for _, a := range []string{
		"127.0.0.1", "127.1.2.3", "0.0.0.0", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1",
		"169.254.169.254", "224.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.2.1",
		"::1", "::", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "fe80::1", "fe80::1%eth0",
		"fd00::1", "ff02::1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::7f00:1",
		"2002:7f00:1::", "2002:a9fe:a9fe::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:db8::1",
		"100::1", "203.0.114.7", "::ffff:203.0.114.7",
	} {
		if why := refusedAddress(netip.MustParseAddr(a), own); why == "" {
			t.Errorf("%s passed, want refused", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "1.1.1.1", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::5db8:d822", "::ffff:93.184.216.34"} {
		if why := refusedAddress(netip.MustParseAddr(a), own); why != "" {
			t.Errorf("%s refused (%s), want passed", a, why)
		}
	}
}
