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
	prof, err := seccompForProfile(c.Profile.Seccomp)
	if err != nil || prof == nil {
		why := fmt.Sprintf("seccomp profile %s cannot be used: %v; fix or replace the file named by the profile's seccomp key", name, err)
		return []Decision{{Rule: rule, Field: field, Action: Refused, Before: before, Layer: LayerNone, Why: why}}
	}
	l.Seccomp = prof
	var ds []Decision
	if !c.Profile.CompatSyscalls {
		ds = append(ds, nativeABIsOnly(prof))
	}
	return append(ds, Decision{Rule: rule, Field: field, Action: Tightened, Before: before,
		After: fmt.Sprintf("%s (default %s, %d rules)", name, prof.DefaultAction, len(prof.Syscalls)),
		Layer: LayerSeccomp, Why: "the caller's filter, or none, is replaced by the policy's default-deny filter"})
}

// nativeABIs are the 64-bit system call ABIs of the hosts bulkhead runs
// on. A filter lists every ABI it judges; a call made through any other
// (int 0x80 on x86_64, x32, arm32 on arm64) gets the filter's bad-arch
// action and is killed, so socketcall and ipc, whose arguments sit in
// memory the filter cannot read, cannot carry a refused socket family.
var nativeABIs = []rspec.Arch{rspec.ArchX86_64, rspec.ArchAARCH64}

func nativeABIsOnly(p *rspec.LinuxSeccomp) Decision {
	before := fmt.Sprint(p.Architectures)
	var keep []rspec.Arch
	for _, a := range p.Architectures {
		for _, n := range nativeABIs {
			if a == n {
				keep = append(keep, a)
			}
		}
	}
	p.Architectures = keep
	return Decision{Rule: "seccomp", Field: "linux.seccomp.architectures", Action: Tightened, Before: before,
		After: fmt.Sprint(keep), Layer: LayerSeccomp,
		Why: "32-bit and x32 system calls are killed: their socketcall and ipc hide arguments from the filter (set compat_syscalls to keep them)"}
}
