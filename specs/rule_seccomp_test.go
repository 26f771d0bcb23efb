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
