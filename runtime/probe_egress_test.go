package runtime

import (
	"slices"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/specs"
)

func TestProbeEgressArgs(t *testing.T) {
	prof := func(mode specs.Mode, egress ...string) *specs.Profile {
		return &specs.Profile{Name: "p", Mode: mode, Egress: egress}
	}
	for _, tc := range []struct {
		name   string
		p      *specs.Profile
		target string
		want   []string
		err    string
	}{
		{"no egress", prof(specs.Enforce), "", nil, ""},
		{"no egress with a target", prof(specs.Enforce), "pypi.org:443", nil, "has no egress broker"},
		{"audit mode starts no broker", prof(specs.Audit, "pypi.org:443"), "", nil, ""},
		{"first name", prof(specs.Enforce, "*.pythonhosted.org:443", "pypi.org:443"), "",
			[]string{"-egress-allow", "pypi.org:443", "-egress-deny", probeEgressDenied}, ""},
		{"listed address for the direct attempt", prof(specs.Enforce, "allowed.test:80", "10.213.5.2:80"), "",
			[]string{"-egress-allow", "allowed.test:80", "-egress-deny", probeEgressDenied, "-egress-direct", "10.213.5.2:80"}, ""},
		{"target under a wildcard", prof(specs.Enforce, "*.pythonhosted.org:443"), "files.pythonhosted.org:443",
			[]string{"-egress-allow", "files.pythonhosted.org:443", "-egress-deny", probeEgressDenied}, ""},
		{"only wildcards", prof(specs.Enforce, "*.pythonhosted.org:443"), "", nil, "only wildcards"},
		{"target not listed", prof(specs.Enforce, "pypi.org:443"), "pypi.org:80", nil, "not in profile p's egress list"},
		{"the denied name listed", prof(specs.Enforce, "pypi.org:443", "*.bulkhead.invalid:80"), "", nil, "expects to be refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probeEgressArgs(tc.p, tc.target)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
