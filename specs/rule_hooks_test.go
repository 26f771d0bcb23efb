//lint:file-ignore SA1019 Docker sends prestart hooks; the tests use what it sends

package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleHooks(t *testing.T) {
	docker := func(s *rspec.Spec) {
		s.Hooks = &rspec.Hooks{
			Prestart: []rspec.Hook{
				{Path: "/proc/1234/exe", Args: []string{"libnetwork-setkey", "-exec-root=/var/run/docker", "abc", "def"}},
				{Path: "/usr/bin/nvidia-container-runtime-hook", Args: []string{"nvidia-container-runtime-hook", "prestart"}},
			},
			CreateRuntime: []rspec.Hook{{Path: "/usr/bin/libnetwork-setkey"}},
		}
	}
	runRule(t, ruleHooks, []ruleCase{
		{name: "docker setkey removed", spec: docker, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "hooks.prestart[0]", Removed)
			wantDecision(t, ds, "hooks.prestart[1]", Kept)
			wantDecision(t, ds, "hooks.createRuntime[0]", Removed)
			if len(s.Hooks.Prestart) != 1 || len(s.Hooks.CreateRuntime) != 0 {
				t.Fatalf("hooks %+v", s.Hooks)
			}
		}},
		{name: "caller network keeps it", spec: docker, ctx: func(c *Context) { c.Profile.Network = NetworkCaller },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				if len(s.Hooks.Prestart) != 2 {
					t.Fatal("setkey removed although the network is the caller's")
				}
			}},
	})
}
