package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleReadonlyRootfs(t *testing.T) {
	runRule(t, ruleReadonlyRootfs, []ruleCase{
		{name: "writable", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "root.readonly", Tightened)
			if !s.Root.Readonly {
				t.Fatal("root still writable")
			}
		}},
		{name: "no root", spec: func(s *rspec.Spec) { s.Root = nil },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, "root", Refused) }},
		{name: "profile off", ctx: func(c *Context) { c.Profile.ReadonlyRootfs = false },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "root.readonly", Kept)
				if s.Root.Readonly {
					t.Fatal("changed although not enforced")
				}
			}},
	})
}
