package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// A page size is a file name both backends write the limit to as root: only
// the host's own sizes pass, at create and at update.
func TestHugepageLimitsOnlyHostSizes(t *testing.T) {
	sizes := hostHugepageSizes()
	if len(sizes) == 0 {
		t.Skip("this kernel has no huge page sizes (" + hugepagesDir + " is empty)")
	}
	var host string
	for s := range sizes {
		host = s
	}
	for _, tc := range []struct {
		size    string
		refused bool
	}{
		{host, false},
		{"../../pids/x/pids.max", true},
		{"2MB/../../x", true},
		{"3MB", true},
		{"", true},
	} {
		r := &rspec.LinuxResources{HugepageLimits: []rspec.LinuxHugepageLimit{{Pagesize: tc.size, Limit: 0}}}
		prof := DefaultProfile()
		ds, err := ClampResources(&prof, r)
		if got := err != nil && refused(ds); got != tc.refused {
			t.Errorf("update with page size %q: refused %v, want %v (%v)", tc.size, got, tc.refused, ds)
		}
		s := &rspec.Spec{Linux: &rspec.Linux{Resources: r}}
		if got := refused(ruleHugetlb(nil, s)); got != tc.refused {
			t.Errorf("create with page size %q: refused %v, want %v", tc.size, got, tc.refused)
		}
	}
}
