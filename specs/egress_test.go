package specs

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseEgress(t *testing.T) {
	good := map[string]string{
		"registry.npmjs.org:443": "registry.npmjs.org:443",
		"PyPI.org.:443":          "pypi.org:443",
		"*.example.org:443":      "*.example.org:443",
		"10.0.0.5:8080":          "10.0.0.5:8080",
		"[fd00::1]:443":          "[fd00::1]:443",
		"[::ffff:10.0.0.5]:80":   "10.0.0.5:80",
		"a-b.c:1":                "a-b.c:1",
	}
	for in, want := range good {
		es, err := ParseEgress([]string{in})
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := es[0].String(); got != want {
			t.Errorf("%q parsed as %q, want %q", in, got, want)
		}
	}
	bad := []string{
		"example.org", "example.org:", "example.org:0", "example.org:65536", "example.org:+443",
		"example.org:0443", "*:443", "*.org:443", "a.*.org:443", "*example.org:443", "**.example.org:443",
		"exa_mple.org:443", "-a.org:443", "a-.org:443", "a..org:443", "1.2.3.04:443", "[fe80::1%eth0]:443",
		"http://example.org:443", "example.org:443/path", " example.org:443", "",
	}
	for _, in := range bad {
		if _, err := ParseEgress([]string{in}); err == nil {
			t.Errorf("%q accepted", in)
		} else if !strings.HasPrefix(err.Error(), "egress ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %q does not name the key on one line", in, err)
		}
	}
}

func TestEgressMatch(t *testing.T) {
	es, err := ParseEgress([]string{"pypi.org:443", "*.example.org:443", "10.0.0.5:80"})
	if err != nil {
		t.Fatal(err)
	}
	allowed := func(host string, port uint16) bool {
		for _, e := range es {
			if e.MatchName(host, port) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		host string
		port uint16
		want bool
	}{
		{"pypi.org", 443, true}, {"pypi.org", 80, false}, {"files.pypi.org", 443, false},
		{"a.example.org", 443, true}, {"a.b.example.org", 443, true}, {"example.org", 443, false},
		{"badexample.org", 443, false}, {"10.0.0.5", 80, false},
	} {
		if got := allowed(c.host, c.port); got != c.want {
			t.Errorf("%s:%d allowed %v, want %v", c.host, c.port, got, c.want)
		}
	}
	if !es[2].MatchAddr(netip.MustParseAddr("::ffff:10.0.0.5"), 80) || es[2].MatchAddr(netip.MustParseAddr("10.0.0.5"), 443) {
		t.Error("address entry matches the wrong address or port")
	}
}

func TestProfileEgressValidation(t *testing.T) {
	p := DefaultProfile()
	p.Egress = []string{"pypi.org:443"}
	if err := p.Validate(); err != nil {
		t.Fatalf("egress on the default profile: %v", err)
	}
	p.Network = NetworkCaller
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "egress needs network") {
		t.Fatalf("egress with network caller: %v, want a refusal", err)
	}
	p = DefaultProfile()
	p.Egress = []string{"pypi.org"}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), `profile default: egress "pypi.org"`) {
		t.Fatalf("entry without a port: %v, want a refusal naming the key and the entry", err)
	}
	p = DefaultProfile()
	p.EgressConnections = 0
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "egress_connections") {
		t.Fatalf("egress_connections 0: %v", err)
	}
	p = DefaultProfile()
	p.EgressBytes = "lots"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "egress_bytes") {
		t.Fatalf("egress_bytes lots: %v", err)
	}
}

// The broker's user is never root and never an id the job may run as:
// the job could otherwise signal or trace the process parsing its HTTP.
func TestEgressBrokerUser(t *testing.T) {
	p := DefaultProfile()
	if uid, gid, err := p.EgressBrokerIDs(); err != nil || uid != 65532 || gid != 65532 {
		t.Fatalf("default egress_broker_user: %d:%d, %v; want 65532:65532", uid, gid, err)
	}
	for _, c := range []struct {
		user, uids, gids string
		want             string
	}{
		{"0:65532", "", "", "neither 0"},
		{"65532:0", "", "", "neither 0"},
		{"65532", "", "", "want uid:gid"},
		{"1-2:3", "", "", "want uid:gid"},
		{"65534:65532", "", "", "uid 65534 is one the job may run as"},
		{"65532:65534", "", "", "gid 65534 is one the job may run as"},
		{"5000:65532", "1000-60000", "", "uid 5000 is one the job may run as"},
		{"65532:5000", "", "1000-60000", "gid 5000 is one the job may run as"},
	} {
		p := DefaultProfile()
		p.EgressBrokerUser = c.user
		if c.uids != "" {
			p.AllowedUIDs = []string{c.uids}
		}
		if c.gids != "" {
			p.AllowedGIDs = []string{c.gids}
		}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("egress_broker_user %q (uids %q, gids %q): %v, want %q", c.user, c.uids, c.gids, err, c.want)
		}
	}
}
