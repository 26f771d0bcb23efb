package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleCapabilities(t *testing.T) {
	runRule(t, ruleCapabilities, []ruleCase{
		{name: "all sets full", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			for _, set := range []string{"bounding", "effective", "inheritable", "permitted", "ambient"} {
				wantDecision(t, ds, "process.capabilities."+set, Tightened)
			}
			wantNoCaps(t, s)
		}},
		{name: "absent means all to runc", spec: func(s *rspec.Spec) { s.Process.Capabilities = nil },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.capabilities", Added)
				wantNoCaps(t, s)
			}},
		{name: "already empty kept", spec: func(s *rspec.Spec) { s.Process.Capabilities = &rspec.LinuxCapabilities{} },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.capabilities.bounding", Kept)
				wantNoCaps(t, s)
			}},
		{name: "no process", spec: func(s *rspec.Spec) { s.Process = nil },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) { wantNoCaps(t, s) }},
	})
}

func wantNoCaps(t *testing.T, s *rspec.Spec) {
	t.Helper()
	c := s.Process.Capabilities
	if c == nil {
		t.Fatal("capabilities nil: runc would keep them")
	}
	if len(c.Bounding)+len(c.Effective)+len(c.Inheritable)+len(c.Permitted)+len(c.Ambient) != 0 {
		t.Fatalf("capabilities left: %+v", c)
	}
	// Round trip: what runc reads must still be a non-nil, empty object.
	data, _ := Marshal(s)
	back, err := Decode(data)
	if err != nil || back.Process.Capabilities == nil {
		t.Fatalf("capabilities do not survive the rewrite: %v", err)
	}
}
