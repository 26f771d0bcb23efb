package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleMaskedPaths(t *testing.T) {
	runRule(t, ruleMaskedPaths, []ruleCase{
		{name: "empty lists, rw sysfs and cgroup", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "linux.maskedPaths", Added)
			wantDecision(t, ds, "linux.readonlyPaths", Added)
			wantDecision(t, ds, "mounts[/sys]", Tightened)
			wantDecision(t, ds, "mounts[/sys/fs/cgroup]", Tightened)
			for _, p := range DefaultMaskedPaths {
				if !hasOpt(s.Linux.MaskedPaths, p) {
					t.Fatalf("%s not masked", p)
				}
			}
			for _, p := range DefaultReadonlyPaths {
				if !hasOpt(s.Linux.ReadonlyPaths, p) {
					t.Fatalf("%s not read-only", p)
				}
			}
			for _, m := range s.Mounts[1:] {
				if !lastOpt(m.Options, "ro", "rw") {
					t.Fatalf("%s still writable: %v", m.Destination, m.Options)
				}
			}
		}},
		{name: "caller's extra kept", spec: func(s *rspec.Spec) {
			s.Linux.MaskedPaths = []string{"/proc/kcore", "/custom"}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			if !hasOpt(s.Linux.MaskedPaths, "/custom") || len(s.Linux.MaskedPaths) != len(DefaultMaskedPaths)+1 {
				t.Fatalf("masked %v", s.Linux.MaskedPaths)
			}
		}},
	})
}
