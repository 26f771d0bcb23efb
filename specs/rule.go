package specs

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Context is what a rule may know besides the spec: the profile it
// enforces and facts about the host and the bundle.
type Context struct {
	Profile *Profile
	// Bundle is the absolute path of the bundle; root.path and cwd resolve
	// against it.
	Bundle string
	// JoinableNamespace reports whether a namespace path belongs to a
	// container bulkhead itself created under a policy at least as strict
	// (a pod's sandbox). Nil means no path may be joined.
	JoinableNamespace func(kind rspec.LinuxNamespaceType, path string) bool
	// Original is the caller's config.json as given. When nil, rules that
	// need the bytes read Bundle/config.json.
	Original []byte
}

func (c *Context) joinable(kind rspec.LinuxNamespaceType, path string) bool {
	return c.JoinableNamespace != nil && c.JoinableNamespace(kind, path)
}

// Rule enforces one control on a spec. Apply changes s in place so that
// the control holds and returns what it decided; a field it cannot make
// safe is reported as a Refused decision, never silently dropped.
// Rules clamp, never raise: a caller's stricter value is kept.
type Rule struct {
	Name  string
	Apply func(c *Context, s *rspec.Spec) []Decision
}

// Rules is the order in which the controls are applied. unknown_fields
// comes first: the typed spec the others see has lost those fields. The
// order matters
// only where one control reads what another wrote: seccomp is computed
// after the capabilities are dropped, host_mounts sees the /tmp tmpfs and
// not the caller's /tmp bind, sysctl sees the final network namespace.
var Rules = []Rule{
	{"unknown_fields", ruleUnknownFields},
	{"capabilities", ruleCapabilities},
	{"no_new_privileges", ruleNoNewPrivileges},
	{"user", ruleUser},
	{"readonly_rootfs", ruleReadonlyRootfs},
	{"tmp", ruleTmp},
	{"host_mounts", ruleHostMounts},
	{"workspace", ruleWorkspace},
	{"masked_paths", ruleMaskedPaths},
	{"devices", ruleDevices},
	{"network", ruleNetwork},
	{"namespaces", ruleNamespaces},
	{"seccomp", ruleSeccomp},
	{"pids", rulePids},
	{"memory", ruleMemory},
	{"cpu", ruleCPU},
	{"environment", ruleEnvironment},
	{"cwd", ruleCwd},
	{"sysctl", ruleSysctl},
	{"hooks", ruleHooks},
	{"rlimits", ruleRlimits},
	{"oom_score_adj", ruleOOMScoreAdj},
}

// Apply applies every rule to a copy of s and returns the rewritten spec
// and all decisions. It returns a *RefusalError when any rule refused. In
// audit mode the caller hands over the original spec instead.
func Apply(c *Context, s *rspec.Spec) (*rspec.Spec, []Decision, error) {
	out := Clone(s)
	var all []Decision
	for _, r := range Rules {
		all = append(all, r.Apply(c, out)...)
	}
	if refused(all) {
		return nil, all, &RefusalError{Profile: c.Profile.Name, Decisions: all}
	}
	return out, all, nil
}

func refused(ds []Decision) bool {
	for _, d := range ds {
		if d.Action == Refused {
			return true
		}
	}
	return false
}
