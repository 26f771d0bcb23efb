package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleNoNewPrivileges(t *testing.T) {
	runRule(t, ruleNoNewPrivileges, []ruleCase{
		{name: "false", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "process.noNewPrivileges", Tightened)
			if !s.Process.NoNewPrivileges {
				t.Fatal("NNP still false")
			}
		}},
		{name: "true kept", spec: func(s *rspec.Spec) { s.Process.NoNewPrivileges = true },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "process.noNewPrivileges", Kept)
			}},
	})
}
