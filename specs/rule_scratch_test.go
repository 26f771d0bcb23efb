package specs

import (
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleScratch(t *testing.T) {
	withScratch := func(c *Context) { c.Profile.ScratchSize = "128m" }
	wantScratch := func(action Action) func(t *testing.T, s *rspec.Spec, ds []Decision) {
		return func(t *testing.T, s *rspec.Spec, ds []Decision) {
			t.Helper()
			wantDecision(t, ds, "mounts["+ScratchDir+"]", action)
			ms := mountsAt(s, ScratchDir)
			if len(ms) != 1 {
				t.Fatalf("%d mounts at %s", len(ms), ScratchDir)
			}
			m := ms[0]
			if m.Type != "tmpfs" || !slices.Contains(m.Options, "exec") || !slices.Contains(m.Options, "nosuid") ||
				!slices.Contains(m.Options, "nodev") || !slices.Contains(m.Options, "size=128m") || slices.Contains(m.Options, "noexec") {
				t.Fatalf("%s = %s %v, want tmpfs exec,nosuid,nodev,size=128m", ScratchDir, m.Type, m.Options)
			}
		}
	}
	runRule(t, ruleScratch, []ruleCase{
		{name: "default profile: no scratch", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			if len(ds) != 0 || len(mountsAt(s, ScratchDir)) != 0 {
				t.Fatalf("scratch without scratch_size: %v", ds)
			}
		}},
		{name: "scratch added, TMPDIR and GOTMPDIR there", ctx: withScratch, spec: func(s *rspec.Spec) {
			s.Process.Env = []string{"PATH=/bin"}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantScratch(Added)(t, s, ds)
			for _, name := range []string{"TMPDIR", "GOTMPDIR"} {
				wantDecision(t, ds, "process.env["+name+"]", Added)
				if got := envOf(s, name); !slices.Equal(got, []string{ScratchDir}) {
					t.Errorf("%s = %v, want [%s]", name, got, ScratchDir)
				}
			}
		}},
		{name: "caller's TMPDIR kept", ctx: withScratch, spec: func(s *rspec.Spec) {
			s.Process.Env = []string{"TMPDIR=/tmp"}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantScratch(Added)(t, s, ds)
			if got := envOf(s, "TMPDIR"); !slices.Equal(got, []string{"/tmp"}) {
				t.Errorf("TMPDIR = %v, want the caller's /tmp", got)
			}
		}},
		{name: "caller's suid tmpfs at the scratch replaced", ctx: withScratch, spec: func(s *rspec.Spec) {
			s.Mounts = append(s.Mounts, rspec.Mount{Destination: ScratchDir, Type: "tmpfs", Source: "tmpfs", Options: []string{"suid", "dev", "size=4g"}})
		}, want: wantScratch(Tightened)},
	})
}

// TestScratchOnlyInJobProfiles: through the whole rule chain, the default
// profile hands over no executable tmpfs, and a profile with a scratch
// hands over exactly one, which the invariants accept; the sizes of the
// profile's tmpfs mounts add up against tmpfs_total.
func TestScratchOnlyInJobProfiles(t *testing.T) {
	for _, tc := range []struct {
		name     string
		profile  func(p *Profile)
		wantExec int
		refused  bool
	}{
		{"default", func(p *Profile) {}, 0, false},
		{"job", func(p *Profile) { p.HomeSize, p.ScratchSize, p.TmpfsTotal = "64m", "64m", "256m" }, 1, false},
		{"job over tmpfs_total", func(p *Profile) { p.HomeSize, p.ScratchSize, p.TmpfsTotal = "128m", "128m", "256m" }, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testContext()
			tc.profile(c.Profile)
			out, ds, err := Apply(c, hostileSpec())
			if tc.refused {
				if err == nil {
					t.Fatalf("tmpfs mounts over tmpfs_total accepted: %v", ds)
				}
				wantDecision(t, ds, "mounts[tmpfs]", Refused)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			exec := 0
			for _, m := range out.Mounts {
				if m.Type == "tmpfs" && !slices.Contains(m.Options, "noexec") {
					exec++
					if cleanAbs(m.Destination) != ScratchDir {
						t.Errorf("executable tmpfs at %s", m.Destination)
					}
				}
			}
			if exec != tc.wantExec {
				t.Errorf("%d executable tmpfs mounts, want %d", exec, tc.wantExec)
			}
			if err := CheckInvariantsContext(c, out); err != nil {
				t.Errorf("invariants: %v", err)
			}
		})
	}
}
