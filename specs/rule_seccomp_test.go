package specs

import (
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
