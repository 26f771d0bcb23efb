package specs

import (
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func addMount(m rspec.Mount) func(s *rspec.Spec) {
	return func(s *rspec.Spec) { s.Mounts = append(s.Mounts, m) }
}

func TestRuleMounts(t *testing.T) {
	refused := func(field string) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, field, Refused) }
	}
	runRule(t, ruleMounts, []ruleCase{
		{name: "host disk", spec: addMount(rspec.Mount{Destination: "/mnt", Type: "ext4", Source: "/dev/sda1"}), want: refused("mounts[/mnt]")},
		{name: "fuse", spec: addMount(rspec.Mount{Destination: "/mnt", Type: "fuse.sshfs", Source: "host:/"}), want: refused("mounts[/mnt]")},
		{name: "overlay", spec: addMount(rspec.Mount{Destination: "/mnt", Type: "overlay", Source: "overlay", Options: []string{"lowerdir=/"}}), want: refused("mounts[/mnt]")},
		{name: "second proc elsewhere", spec: addMount(rspec.Mount{Destination: "/p", Type: "proc", Source: "proc"}), want: refused("mounts[/p]")},
		{name: "sysfs elsewhere", spec: addMount(rspec.Mount{Destination: "/s", Type: "sysfs", Source: "sysfs"}), want: refused("mounts[/s]")},
		{name: "tmpfs over /proc/sys", spec: addMount(rspec.Mount{Destination: "/proc/sys", Type: "tmpfs", Source: "tmpfs"}), want: refused("mounts[/proc/sys]")},
		{name: "bind over /proc/self/attr", spec: addMount(rspec.Mount{Destination: "/proc/self/attr", Type: "bind", Source: "/srv/x"}), want: refused("mounts[/proc/self/attr]")},
		{name: "bind at /dev", spec: addMount(rspec.Mount{Destination: "/dev", Type: "bind", Source: "/srv/dev"}), want: refused("mounts[/dev]")},
		{name: "unknown option", spec: addMount(rspec.Mount{Destination: "/data", Type: "bind", Source: "/srv/x", Options: []string{"rbind", "shared"}}), want: refused("mounts[/data]")},
		{name: "idmap option", spec: addMount(rspec.Mount{Destination: "/data", Type: "bind", Source: "/srv/x", Options: []string{"bind", "idmap"}}), want: refused("mounts[/data]")},
		{name: "shared rootfs propagation", spec: func(s *rspec.Spec) { ensureLinux(s).RootfsPropagation = "rshared" }, want: refused("linux.rootfsPropagation")},
		{name: "rbind becomes bind", spec: addMount(rspec.Mount{Destination: "/data", Type: "bind", Source: "/srv/x", Options: []string{"rbind", "ro"}}),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "mounts[/data]", Tightened)
				m := s.Mounts[len(s.Mounts)-1]
				if slices.Contains(m.Options, "rbind") || !slices.Contains(m.Options, "bind") {
					t.Fatalf("options %v", m.Options)
				}
			}},
		{name: "tmpfs exec and huge", spec: addMount(rspec.Mount{Destination: "/scratch", Type: "tmpfs", Source: "tmpfs", Options: []string{"exec", "suid", "dev", "size=1g"}}),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "mounts[tmpfs]", Refused) // 1g is past tmpfs_total
				m := s.Mounts[len(s.Mounts)-1]
				for _, o := range []string{"noexec", "nosuid", "nodev"} {
					if !slices.Contains(m.Options, o) {
						t.Errorf("options %v lack %s", m.Options, o)
					}
				}
				for _, o := range execOptions {
					if slices.Contains(m.Options, o) {
						t.Errorf("options %v keep %s", m.Options, o)
					}
				}
			}},
		{name: "tmpfs without size gets one", spec: addMount(rspec.Mount{Destination: "/run", Type: "tmpfs", Source: "tmpfs"}),
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "mounts[/run]", Tightened)
				if m := s.Mounts[len(s.Mounts)-1]; !slices.Contains(m.Options, "size=16m") {
					t.Fatalf("options %v", m.Options)
				}
			}},
		{name: "no /dev gets a fresh tmpfs", spec: func(s *rspec.Spec) {
			var kept []rspec.Mount
			for _, m := range s.Mounts {
				if m.Destination != "/dev" {
					kept = append(kept, m)
				}
			}
			s.Mounts = kept
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "mounts[/dev]", Added)
			if s.Mounts[0].Destination != "/dev" || s.Mounts[0].Type != "tmpfs" {
				t.Fatalf("mounts %+v", s.Mounts)
			}
		}},
	})
}
