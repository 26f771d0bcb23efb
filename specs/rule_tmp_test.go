package specs

import (
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleTmp(t *testing.T) {
	wantTmp := func(size string) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) {
			t.Helper()
			var tmps []rspec.Mount
			for _, m := range s.Mounts {
				if cleanAbs(m.Destination) == "/tmp" {
					tmps = append(tmps, m)
				}
			}
			if len(tmps) != 1 {
				t.Fatalf("%d mounts at /tmp", len(tmps))
			}
			want := []string{"rw", "noexec", "nosuid", "nodev", "size=" + size, "mode=1777", "uid=65534", "gid=65534"}
			if m := tmps[0]; m.Type != "tmpfs" || !slices.Equal(m.Options, want) {
				t.Fatalf("/tmp = %s %v, want tmpfs %v", m.Type, m.Options, want)
			}
		}
	}
	both := func(action Action, size string) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "mounts[/tmp]", action)
			wantTmp(size)(t, s, ds)
		}
	}
	runRule(t, ruleTmp, []ruleCase{
		{name: "no /tmp", want: both(Added, "16m")},
		{name: "caller bind at /tmp", spec: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/tmp", Type: "bind", Source: "/tmp", Options: []string{"rbind", "rw"}})
		}, want: both(Tightened, "16m")},
		{name: "caller exec tmpfs, bigger", spec: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/tmp/", Type: "tmpfs", Source: "tmpfs", Options: []string{"exec", "size=1g"}})
		}, want: both(Tightened, "16m")},
		{name: "caller tmpfs smaller keeps size", spec: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=4m"}})
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantTmp("4m")(t, s, ds)
		}},
		{name: "two /tmp mounts", spec: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs"},
				rspec.Mount{Destination: "//tmp", Type: "bind", Source: "/var/tmp", Options: []string{"bind"}})
		}, want: both(Tightened, "16m")},
	})
}
