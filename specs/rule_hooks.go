package specs

import (
	"fmt"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ruleHooks removes dockerd's libnetwork-setkey hook when the profile
// wants no network: it configures the container's network namespace from
// the host, giving it eth0 and a route even in a fresh namespace. Other
// hooks are the engine's or the administrator's (the workload cannot set
// them) and run on the host; they are kept and recorded.
func ruleHooks(c *Context, s *rspec.Spec) []Decision {
	if s.Hooks == nil {
		return nil
	}
	h := s.Hooks
	var ds []Decision
	for _, kind := range []struct {
		name  string
		hooks *[]rspec.Hook
	}{
		//lint:ignore SA1019 engines still send prestart hooks (Docker's libnetwork-setkey); they must be policed
		{"prestart", &h.Prestart}, {"createRuntime", &h.CreateRuntime}, {"createContainer", &h.CreateContainer},
		{"startContainer", &h.StartContainer}, {"poststart", &h.Poststart}, {"poststop", &h.Poststop},
	} {
		var kept []rspec.Hook
		for i, hk := range *kind.hooks {
			field := fmt.Sprintf("hooks.%s[%d]", kind.name, i)
			if c.Profile.Network == NetworkNone && mentions(hk, "libnetwork-setkey") {
				ds = append(ds, Decision{Rule: "hooks", Field: field, Action: Removed, Before: hk.Path + " libnetwork-setkey",
					Layer: LayerNetns, Why: "dockerd's hook would configure the sandbox's network namespace (eth0, routes)"})
				continue
			}
			kept = append(kept, hk)
			ds = append(ds, Decision{Rule: "hooks", Field: field, Action: Kept, Before: hk.Path, After: hk.Path,
				Layer: LayerNone, Why: "an engine's hook, run on the host; not policed"})
		}
		*kind.hooks = kept
	}
	return ds
}

func mentions(h rspec.Hook, word string) bool {
	if strings.Contains(h.Path, word) {
		return true
	}
	for _, a := range h.Args {
		if strings.Contains(a, word) {
			return true
		}
	}
	return false
}
