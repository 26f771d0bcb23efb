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
		{name: "docker setkey removed, others refused", spec: docker, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "hooks.prestart[0]", Removed)
			wantDecision(t, ds, "hooks.prestart[1]", Refused)
			wantDecision(t, ds, "hooks.createRuntime[0]", Refused)
		}},
		{name: "operator's hook allowed", spec: docker, ctx: func(c *Context) {
			c.Profile.HooksAllowed = []string{"/usr/bin/nvidia-container-runtime-hook", "/usr/bin/libnetwork-setkey"}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "hooks.prestart[1]", Kept)
			wantDecision(t, ds, "hooks.createRuntime[0]", Kept)
			if len(s.Hooks.Prestart) != 1 || len(s.Hooks.CreateRuntime) != 1 {
				t.Fatalf("hooks %+v", s.Hooks)
			}
		}},
		{name: "caller network: setkey of a process that is not dockerd refused", spec: docker,
			ctx:  func(c *Context) { c.Profile.Network = NetworkCaller },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) { wantDecision(t, ds, "hooks.prestart[0]", Refused) }},
		{name: "every kind of hook refused", spec: func(s *rspec.Spec) {
			h := rspec.Hook{Path: "/bin/sh", Args: []string{"sh", "-c", "id > /tmp/pwned"}}
			s.Hooks = &rspec.Hooks{Prestart: []rspec.Hook{h}, CreateRuntime: []rspec.Hook{h}, CreateContainer: []rspec.Hook{h},
				StartContainer: []rspec.Hook{h}, Poststart: []rspec.Hook{h}, Poststop: []rspec.Hook{h}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			for _, f := range []string{"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"} {
				wantDecision(t, ds, "hooks."+f+"[0]", Refused)
			}
		}},
	})
}
