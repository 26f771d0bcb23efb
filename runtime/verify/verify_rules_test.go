package verify

import (
	"slices"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// withoutRule takes the named rule out of specs.Rules for the test: a
// policy whose rule for a control is broken.
func withoutRule(t *testing.T, name string) {
	t.Helper()
	saved := specs.Rules
	i := slices.IndexFunc(saved, func(r specs.Rule) bool { return r.Name == name })
	if i < 0 {
		t.Fatalf("no rule %q", name)
	}
	specs.Rules = slices.Delete(slices.Clone(saved), i, i+1)
	t.Cleanup(func() { specs.Rules = saved })
}

// hostileCaller is a caller's spec that asks for everything the profile
// takes away: root with capabilities, privilege escalation, no seccomp, a
// writable root, no limits and the host's network.
func hostileCaller(s *rspec.Spec) {
	s.Process.NoNewPrivileges = false
	s.Root.Readonly = false
	s.Linux.Seccomp = nil
	s.Linux.Resources = &rspec.LinuxResources{}
	s.Linux.Namespaces = slices.DeleteFunc(s.Linux.Namespaces, func(ns rspec.LinuxNamespace) bool {
		return ns.Type == rspec.NetworkNamespace
	})
}

// TestVerifyWithoutRule: with the rule of one control removed, the spec
// the rules write no longer asks for that control, and the backend gets
// it so; verification still fails naming the control, because it expects
// what the profile guarantees, not what the rules wrote. create refuses
// such a spec even before, on the invariants.
func TestVerifyWithoutRule(t *testing.T) {
	needRoot(t, "runc")
	cases := []struct{ rule, control string }{
		{"capabilities", "capabilities"},
		{"no_new_privileges", "no_new_privs"},
		{"user", "uid"},
		{"readonly_rootfs", "read-only root"},
		{"seccomp", "seccomp"},
		{"network", "network namespace"},
		{"pids", "pids"},
		{"memory", "memory"},
		{"cpu", "cpu"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			withoutRule(t, c.rule)
			p := specs.DefaultProfile()
			caller := specOf(hostileCaller)
			handed, _, err := specs.Apply(&specs.Context{Profile: &p, Bundle: t.TempDir()}, caller)
			if err != nil {
				t.Fatalf("apply without %s: %v", c.rule, err)
			}
			if err := specs.CheckInvariants(&p, handed); err == nil {
				t.Errorf("the invariants hold without rule %s", c.rule)
			}
			pid := createContainer(t, "runc", nil, func(s *rspec.Spec) {
				cg := s.Linux.CgroupsPath
				*s = *specs.Clone(handed)
				s.Linux.CgroupsPath = cg
			})
			e, err := Expect(&p, handed, "runc")
			if err != nil {
				t.Fatal(err)
			}
			r, err := Container(pid, e)
			if err != nil {
				t.Fatal(err)
			}
			failed := controls(r.Failed())
			t.Logf("without rule %s: failed %s", c.rule, failed)
			if !slices.Contains(strings.Split(failed, ","), c.control) {
				t.Errorf("without rule %s verification did not fail %s; failed: %q", c.rule, c.control, failed)
			}
		})
	}
}
