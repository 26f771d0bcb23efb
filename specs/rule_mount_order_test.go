package specs

import (
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func destinations(ms []rspec.Mount) []string {
	var d []string
	for _, m := range ms {
		d = append(d, m.Destination)
	}
	return d
}

func TestRuleMountOrder(t *testing.T) {
	runRule(t, ruleMountOrder, []ruleCase{
		{name: "parents first, same depth keeps the caller's order", spec: func(s *rspec.Spec) {
			s.Mounts = []rspec.Mount{
				{Destination: "/tmp/data", Type: "bind", Source: "/srv/a"},
				{Destination: "/b", Type: "tmpfs", Source: "tmpfs"},
				{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs"},
				{Destination: "tmp/data/", Type: "bind", Source: "/srv/b"},
				{Destination: "/a", Type: "tmpfs", Source: "tmpfs"},
			}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "mounts", Tightened)
			want := []string{"/b", "/tmp", "/a", "/tmp/data", "tmp/data/"}
			if got := destinations(s.Mounts); !slices.Equal(got, want) {
				t.Fatalf("order %v, want %v", got, want)
			}
			if s.Mounts[3].Source != "/srv/a" || s.Mounts[4].Source != "/srv/b" {
				t.Fatalf("two mounts at one destination swapped: %v", s.Mounts[3:])
			}
		}},
		{name: "already ordered", spec: func(s *rspec.Spec) {
			s.Mounts = []rspec.Mount{{Destination: "/"}, {Destination: "/dev"}, {Destination: "/tmp"}, {Destination: "/dev/pts"}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			if len(ds) != 0 {
				t.Fatalf("decisions for an ordered list: %s", dump(ds))
			}
		}},
	})
}

// TestApplyKeepsDeeperCallerMount: the /tmp tmpfs the policy adds comes
// before a caller's bind below /tmp, which runc would otherwise hide (a pod
// with a hostPath volume at /tmp/<something>).
func TestApplyKeepsDeeperCallerMount(t *testing.T) {
	s := hostileSpec()
	s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/tmp/foo", Type: "bind", Source: "/srv/data", Options: []string{"rbind", "rw"}})
	out, ds, err := Apply(testContext(), s)
	if err != nil {
		t.Fatalf("Apply: %v\n%s", err, dump(ds))
	}
	tmp, foo := -1, -1
	for i, m := range out.Mounts {
		switch m.Destination {
		case "/tmp":
			tmp = i
		case "/tmp/foo":
			foo = i
		}
	}
	if tmp < 0 || foo < 0 || tmp > foo {
		t.Fatalf("/tmp at %d, /tmp/foo at %d in %v: the tmpfs would hide the bind", tmp, foo, destinations(out.Mounts))
	}
	for i := 1; i < len(out.Mounts); i++ {
		if mountDepth(out.Mounts[i].Destination) < mountDepth(out.Mounts[i-1].Destination) {
			t.Fatalf("%s after %s", out.Mounts[i].Destination, out.Mounts[i-1].Destination)
		}
	}
}
