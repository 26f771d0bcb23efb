package specs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/seccomp"
)

func TestRuleSeccomp(t *testing.T) {
	runRule(t, ruleSeccomp, []ruleCase{
		{name: "none", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			d := wantDecision(t, ds, "linux.seccomp", Tightened)
			if d.Before != "none" || s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != rspec.ActErrno {
				t.Fatalf("seccomp %+v after %+v", s.Linux.Seccomp, d)
			}
		}},
		{name: "caller's allow-all replaced", spec: func(s *rspec.Spec) {
			s.Linux.Seccomp = &rspec.LinuxSeccomp{DefaultAction: rspec.ActAllow}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "linux.seccomp", Tightened)
			if s.Linux.Seccomp.DefaultAction != rspec.ActErrno {
				t.Fatal("caller's filter kept")
			}
		}},
		{name: "caller's narrower filter kept inside the policy's", spec: func(s *rspec.Spec) {
			s.Linux.Seccomp = &rspec.LinuxSeccomp{DefaultAction: rspec.ActAllow,
				Syscalls: []rspec.LinuxSyscall{{Names: []string{"write", "chmod"}, Action: rspec.ActErrno}}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			d := wantDecision(t, ds, "linux.seccomp", Tightened)
			if !strings.Contains(d.Why, "denies write") {
				t.Fatalf("decision does not name the narrowed call: %+v", d)
			}
			p := s.Linux.Seccomp
			if p.DefaultAction != rspec.ActErrno {
				t.Fatalf("default %s: the caller's allow-all default was kept", p.DefaultAction)
			}
			var allowed []string
			for _, r := range p.Syscalls {
				if r.Action == rspec.ActAllow {
					allowed = append(allowed, r.Names...)
				}
			}
			if strings.Join(allowed, ",") != "read,exit_group" {
				t.Fatalf("allowed %v, want read and exit_group: write is the caller's denial, chmod the policy's", allowed)
			}
		}},
		{name: "caller's filter without a default action refused", spec: func(s *rspec.Spec) {
			s.Linux.Seccomp = &rspec.LinuxSeccomp{}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			d := wantDecision(t, ds, "linux.seccomp.defaultAction", Refused)
			if !strings.Contains(d.Why, "missing") {
				t.Fatalf("refusal does not say the default action is missing: %s", d.Why)
			}
		}},
		{name: "caller's filter with an unknown default action refused", spec: func(s *rspec.Spec) {
			s.Linux.Seccomp = &rspec.LinuxSeccomp{DefaultAction: "SCMP_ACT_MAYBE"}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "linux.seccomp.defaultAction", Refused)
		}},
		{name: "missing profile file", ctx: func(c *Context) { c.Profile.Seccomp = "/nonexistent/profile.json" },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				d := wantDecision(t, ds, "linux.seccomp", Refused)
				if !strings.Contains(d.Why, "/nonexistent/profile.json") {
					t.Fatalf("refusal does not name the file: %s", d.Why)
				}
			}},
	})
}

// TestRuleSeccompReal runs the rule with the seccomp package's profile.
func TestRuleSeccompReal(t *testing.T) {
	saved := seccompForProfile
	defer func() { seccompForProfile = saved }()
	seccompForProfile = seccomp.ForProfile
	s := hostileSpec()
	ds := ruleSeccomp(testContext(), s)
	wantDecision(t, ds, "linux.seccomp", Tightened)
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction == rspec.ActAllow {
		t.Fatalf("built-in profile %+v is not default-deny", s.Linux.Seccomp)
	}
}

// The profile's seccomp file is every container's filter: one a user
// could change or replace, or a relative path, is refused.
func TestRuleSeccompFileRootsAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the profile's directory")
	}
	dir := t.TempDir()
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "profile.json")
	if err := os.WriteFile(file, []byte(`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{file: "uid 65534", "profile.json": "relative path", dir + "/x/../profile.json": `".."`} {
		c := testContext()
		c.Profile.Seccomp = path
		s := &rspec.Spec{Process: &rspec.Process{}}
		ds := ruleSeccomp(c, s)
		d := ds[len(ds)-1]
		if d.Action != Refused || !strings.Contains(d.Why, want) {
			t.Errorf("seccomp %s: %+v, want refused naming %q", path, d, want)
		}
	}
}

// TestInvariantSeccompABIs: a handed filter may list the native ABIs, and
// with compat_syscalls x32 and arm32, never i386.
func TestInvariantSeccompABIs(t *testing.T) {
	for _, tc := range []struct {
		compat bool
		arch   rspec.Arch
		ok     bool
	}{
		{false, rspec.ArchX86_64, true}, {false, rspec.ArchX32, false}, {false, rspec.ArchX86, false},
		{true, rspec.ArchX86_64, true}, {true, rspec.ArchX32, true}, {true, rspec.ArchARM, true}, {true, rspec.ArchX86, false},
	} {
		p := testProfile()
		p.CompatSyscalls = tc.compat
		s := hostileSpec()
		s.Linux.Seccomp = &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, Architectures: []rspec.Arch{tc.arch}}
		err := CheckInvariants(p, s)
		refused := err != nil && strings.Contains(err.Error(), "linux.seccomp.architectures: "+string(tc.arch))
		if refused == tc.ok {
			t.Errorf("compat %v, %s: invariants say %v", tc.compat, tc.arch, err)
		}
	}
}
