package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleDevices(t *testing.T) {
	privileged := func(s *rspec.Spec) {
		s.Linux.Devices = []rspec.LinuxDevice{
			{Path: "/dev/null", Type: "c", Major: 1, Minor: 3},
			{Path: "/dev/mem", Type: "c", Major: 1, Minor: 1},
			{Path: "/dev/sda", Type: "b", Major: 8, Minor: 0},
			{Path: "/dev/kmsg", Type: "c", Major: 1, Minor: 11},
			// A harmless name on a dangerous node.
			{Path: "/dev/zero", Type: "b", Major: 8, Minor: 0},
		}
		s.Linux.Resources = &rspec.LinuxResources{Devices: []rspec.LinuxDeviceCgroup{
			{Allow: true, Access: "rwm"},
			{Allow: true, Type: "b", Major: i64(8), Minor: i64(0), Access: "rwm"},
			{Allow: true, Type: "c", Major: i64(1), Minor: i64(3), Access: "rwm"},
			{Allow: false, Type: "c", Major: i64(5), Minor: i64(0), Access: "rwm"},
		}}
	}
	runRule(t, ruleDevices, []ruleCase{
		{name: "privileged", spec: privileged, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "linux.devices[/dev/mem]", Removed)
			wantDecision(t, ds, "linux.devices[/dev/sda]", Removed)
			wantDecision(t, ds, "linux.resources.devices[0]", Removed)
			wantDecision(t, ds, "linux.resources.devices[1]", Removed)
			if len(s.Linux.Devices) != 1 || s.Linux.Devices[0].Path != "/dev/null" {
				t.Fatalf("devices %+v", s.Linux.Devices)
			}
			r := s.Linux.Resources.Devices
			if r[0].Allow || r[0].Access != "rwm" || r[0].Major != nil {
				t.Fatalf("first rule %+v, want deny all", r[0])
			}
			for _, d := range r {
				if d.Allow && !inAllowlist(d) {
					t.Fatalf("allowed %s", cgroupRuleString(d))
				}
			}
			if last := r[len(r)-1]; last.Allow || *last.Major != 5 {
				t.Fatalf("caller's deny of tty not kept last: %+v", last)
			}
		}},
		{name: "nothing asked", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			r := s.Linux.Resources.Devices
			if len(r) != 1+len(allowedDevices)+1 || r[0].Allow {
				t.Fatalf("device cgroup %+v", r)
			}
		}},
	})
}
