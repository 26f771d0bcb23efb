package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestRuleWorkspaceOnce: a workspace bound twice under two spellings of
// its path is refused at the second; its kept changes would name one
// place twice, and the second layer would hide the first.
func TestRuleWorkspaceOnce(t *testing.T) {
	runRule(t, ruleWorkspace, []ruleCase{
		{name: "two spellings of /workspace", spec: func(s *rspec.Spec) {
			for _, dst := range []string{"/workspace", "/workspace/."} {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: dst, Type: "bind", Source: "/srv/w", Options: []string{"bind", "ro"}})
			}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "mounts[/workspace]", Tightened)
			wantDecision(t, ds, "mounts[/workspace/.]", Refused)
		}},
	})
}
