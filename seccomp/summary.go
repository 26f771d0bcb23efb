package seccomp

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Summary counts distinct syscall names for `bulkhead seccomp show`:
// allowed are those some rule lets run (SCMP_ACT_ALLOW or SCMP_ACT_LOG),
// with or without argument conditions; denied are those that only rules
// with other actions (errno, kill, trap, trace) name. Syscalls named by no
// rule get the default action and are in neither count, which for a
// default-deny profile such as Default is most of the kernel, including
// every name in Denied.
func Summary(p *rspec.LinuxSeccomp) (allowed, denied int) {
	if p == nil {
		return 0, 0
	}
	isAllowed := map[string]bool{}
	for _, r := range p.Syscalls {
		lets := r.Action == rspec.ActAllow || r.Action == rspec.ActLog
		for _, n := range r.Names {
			isAllowed[n] = isAllowed[n] || lets
		}
	}
	for _, a := range isAllowed {
		if a {
			allowed++
		} else {
			denied++
		}
	}
	return allowed, denied
}
