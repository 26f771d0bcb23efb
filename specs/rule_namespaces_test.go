package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleNamespaces(t *testing.T) {
	runRule(t, ruleNamespaces, []ruleCase{
		{name: "none asked", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			for _, ty := range requiredNamespaces {
				wantDecision(t, ds, "linux.namespaces["+string(ty)+"]", Added)
				if i := namespaceIndex(s.Linux, ty); i < 0 || s.Linux.Namespaces[i].Path != "" {
					t.Fatalf("%s not new", ty)
				}
			}
		}},
		{name: "host pid namespace", spec: func(s *rspec.Spec) {
			s.Linux.Namespaces = []rspec.LinuxNamespace{{Type: rspec.PIDNamespace, Path: "/proc/1/ns/pid"}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			d := wantDecision(t, ds, "linux.namespaces[pid]", Refused)
			if d.Before != "/proc/1/ns/pid" {
				t.Fatalf("refusal does not name the path: %+v", d)
			}
		}},
		{name: "pod ipc kept", ctx: func(c *Context) {
			c.JoinableNamespace = func(k rspec.LinuxNamespaceType, p string) bool { return p == "/proc/4242/ns/ipc" }
		}, spec: func(s *rspec.Spec) {
			s.Linux.Namespaces = []rspec.LinuxNamespace{{Type: rspec.IPCNamespace, Path: "/proc/4242/ns/ipc"}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "linux.namespaces[ipc]", Kept)
		}},
		{name: "user and time refused", spec: func(s *rspec.Spec) {
			s.Linux.Namespaces = []rspec.LinuxNamespace{{Type: rspec.UserNamespace}, {Type: rspec.TimeNamespace}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "linux.namespaces[user]", Refused)
			wantDecision(t, ds, "linux.namespaces[time]", Refused)
		}},
	})
}
