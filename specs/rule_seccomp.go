package specs

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/seccomp"
)

// seccompForProfile and seccompValidate are variables so that tests do
// not depend on the seccomp package's profile and libseccomp.
var (
	seccompForProfile = seccomp.ForProfile
	seccompValidate   = func(p *rspec.LinuxSeccomp) error { _, err := seccomp.CompiledFor(p); return err }
)

// ruleSeccomp gives the container the policy's filter, narrowed by the
// caller's own where the caller's denies more (seccomp.Combine): runc
// installs one filter, so the two are merged, and a system call runs only
// if both allow it. The caller's filter never widens the policy's.
func ruleSeccomp(c *Context, s *rspec.Spec) []Decision {
	const rule, field = "seccomp", "linux.seccomp"
	l := ensureLinux(s)
	name := c.Profile.Seccomp
	if name == "" {
		name = "built-in default-deny profile"
	}
	before := "none"
	caller := l.Seccomp
	if caller != nil {
		before = fmt.Sprintf("caller's (default %s, %d rules)", caller.DefaultAction, len(caller.Syscalls))
		// Without a default action of its own the caller's filter says
		// nothing of the calls it does not name: read as a denial it
		// would leave the process no call, and the backend would fail.
		if err := seccomp.CheckAction(caller.DefaultAction, caller.DefaultErrnoRet); err != nil {
			return []Decision{{Rule: rule, Field: field + ".defaultAction", Action: Refused, Before: before, Layer: LayerNone,
				Why: fmt.Sprintf("the caller's filter has no default action bulkhead can read (%v); the runtime-spec requires one: give it, or remove linux.seccomp", err)}}
		}
	}
	if path := c.Profile.Seccomp; path != "" {
		// The file is the filter every container of the profile gets: a
		// user who could change it, or put another in its place, would
		// choose it.
		_, why, err := RootFile(path)
		switch {
		case !filepath.IsAbs(path):
			why = "a relative path, read from wherever bulkhead runs"
		case err != nil:
			why = err.Error()
		case why != "":
			why += " can be changed by others than root"
		}
		if why != "" {
			return []Decision{{Rule: rule, Field: field, Action: Refused, Before: before, Layer: LayerNone,
				Why: fmt.Sprintf("seccomp profile %s cannot be used: %s; give an absolute path to a file only root may change", path, why)}}
		}
	}
	prof, err := seccompForProfile(c.Profile.Seccomp, c.Profile.CompatSyscalls, c.Profile.ExecutesWrites())
	if err != nil || prof == nil {
		why := fmt.Sprintf("seccomp profile %s cannot be used: %v; fix or replace the file named by the profile's seccomp key", name, err)
		return []Decision{{Rule: rule, Field: field, Action: Refused, Before: before, Layer: LayerNone, Why: why}}
	}
	abis := Decision{Rule: rule, Field: "linux.seccomp.architectures", Action: Tightened, After: fmt.Sprint(prof.Architectures),
		Layer: LayerSeccomp, Why: "only the native 64-bit system call ABIs: on runc 32-bit and x32 calls are killed, since their socketcall and ipc hide arguments from the filter (compat_syscalls keeps them); gVisor runs int 0x80 as the 64-bit call under the same filter"}
	if c.Profile.CompatSyscalls {
		abis.Why = "compat_syscalls: the native ABIs, x32 and arm32, each under the same filter; not i386, whose socketcall would open every socket family (libseccomp makes each socket rule an unconditional socketcall there)"
	}
	l.Seccomp = prof
	after := fmt.Sprintf("%s (default %s, %d rules)", name, prof.DefaultAction, len(prof.Syscalls))
	why := "no filter of the caller's: the policy's default-deny filter"
	if caller != nil {
		why = "the caller's filter allows everything the policy's allows; the policy's default-deny filter"
		combined, narrowed, err := seccomp.Combine(prof, caller)
		switch {
		case errors.Is(err, seccomp.ErrPolicyAllows):
			why = "the policy's filter allows by default, so the caller's cannot be kept inside it; the caller's filter is replaced by the policy's"
		case err != nil:
			// Fail closed: a combination that cannot be proven within the
			// policy's filter never reaches the backend.
			return []Decision{abis, {Rule: rule, Field: field, Action: Refused, Before: before, Layer: LayerNone,
				Why: fmt.Sprintf("the caller's filter cannot be combined with the policy's (%v); remove the caller's rules for that system call", err)}}
		case len(narrowed) > 0:
			if err := seccompValidate(combined); err != nil {
				return []Decision{abis, {Rule: rule, Field: field, Action: Refused, Before: before, Layer: LayerNone,
					Why: fmt.Sprintf("the caller's filter combined with the policy's does not compile (%v); remove the rules it names", err)}}
			}
			l.Seccomp = combined
			after = fmt.Sprintf("%s narrowed by the caller's (default %s, %d rules)", name, combined.DefaultAction, len(combined.Syscalls))
			why = fmt.Sprintf("a call runs only if both the policy's and the caller's filter allow it: the caller's denies %s, which the policy's allows", strings.Join(narrowed, ","))
		}
	}
	return []Decision{abis, {Rule: rule, Field: field, Action: Tightened, Before: before, After: after,
		Layer: LayerSeccomp, Why: why}}
}
