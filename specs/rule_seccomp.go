package specs

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/seccomp"
)

// seccompForProfile is a variable so that tests do not depend on the
// seccomp package's profile.
var seccompForProfile = seccomp.ForProfile

// ruleSeccomp replaces the caller's filter rather than merging it: runc
// installs one filter, and the policy's must be the one that holds. A
// caller's narrower filter is therefore not kept (see DESIGN.md).
func ruleSeccomp(c *Context, s *rspec.Spec) []Decision {
	const rule, field = "seccomp", "linux.seccomp"
	l := ensureLinux(s)
	name := c.Profile.Seccomp
	if name == "" {
		name = "built-in default-deny profile"
	}
	before := "none"
	if l.Seccomp != nil {
		before = fmt.Sprintf("caller's (default %s, %d rules)", l.Seccomp.DefaultAction, len(l.Seccomp.Syscalls))
	}
	prof, err := seccompForProfile(c.Profile.Seccomp, c.Profile.CompatSyscalls, c.Profile.ExecutesWrites())
	if err != nil || prof == nil {
		why := fmt.Sprintf("seccomp profile %s cannot be used: %v; fix or replace the file named by the profile's seccomp key", name, err)
		return []Decision{{Rule: rule, Field: field, Action: Refused, Before: before, Layer: LayerNone, Why: why}}
	}
	l.Seccomp = prof
	abis := Decision{Rule: rule, Field: "linux.seccomp.architectures", Action: Tightened, After: fmt.Sprint(prof.Architectures),
		Layer: LayerSeccomp, Why: "only the native 64-bit system call ABIs: 32-bit and x32 calls are killed, since their socketcall and ipc hide arguments from the filter (compat_syscalls keeps them)"}
	if c.Profile.CompatSyscalls {
		abis.Action, abis.Why = Kept, "compat_syscalls: the profile keeps the 32-bit and x32 ABIs, each under the same filter"
	}
	return []Decision{abis, {Rule: rule, Field: field, Action: Tightened, Before: before,
		After: fmt.Sprintf("%s (default %s, %d rules)", name, prof.DefaultAction, len(prof.Syscalls)),
		Layer: LayerSeccomp, Why: "the caller's filter, or none, is replaced by the policy's default-deny filter"}}
}
