package seccomp

import (
	"fmt"
	"reflect"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Narrower checks, independently of how p was made, that p allows no
// system call, and no argument of one, that policy does not: the proof
// Combine's result must pass before it replaces the policy's filter, and
// the one verification asks of a handed filter before it expects it in
// the kernel. Combine's case analysis classifies a caller's rules and
// then writes others; a slip between the two (such as keeping an allowing
// rule that sits next to a denial) must not reach a container, and under
// runsc nothing on the host would see it.
//
// p must keep the policy's default action (a denial), its default errno,
// architectures and flags, and have no notifier. Then, per system call:
//   - the policy's own rules for it, unchanged; or
//   - rules that all deny (what the default would do too); or
//   - where the policy allows the call without conditions: rules that
//     each allow or deny, under any conditions.
//
// Any other action is refused: trace and notify hand the decision to
// something outside the filter, and a log action the policy does not
// have would let the caller fill the host's audit log.
func Narrower(p, policy *rspec.LinuxSeccomp) error {
	switch {
	case !denies(policy.DefaultAction):
		return fmt.Errorf("the policy's default action %s does not deny", policy.DefaultAction)
	case p.DefaultAction != policy.DefaultAction || errnoOfDefault(p) != errnoOfDefault(policy):
		return fmt.Errorf("default action %s is not the policy's %s", p.DefaultAction, policy.DefaultAction)
	case !slices.Equal(p.Architectures, policy.Architectures):
		return fmt.Errorf("architectures %v are not the policy's %v", p.Architectures, policy.Architectures)
	case !slices.Equal(p.Flags, policy.Flags):
		return fmt.Errorf("flags %v are not the policy's %v", p.Flags, policy.Flags)
	case p.ListenerPath != "" || p.ListenerMetadata != "":
		return fmt.Errorf("a user-space notifier (%q) decides system calls outside the kernel", p.ListenerPath)
	}
	pol := byName(policy.Syscalls)
	for name, rules := range byName(p.Syscalls) {
		switch {
		case reflect.DeepEqual(rules, pol[name]):
		case all(rules, func(r rspec.LinuxSyscall) bool { return denies(r.Action) }):
		case allowsAlways(pol[name]) && all(rules, func(r rspec.LinuxSyscall) bool { return denies(r.Action) || r.Action == rspec.ActAllow }):
		default:
			return fmt.Errorf("%s: rules %+v go beyond the policy's %+v", name, rules, pol[name])
		}
	}
	return nil
}

func all(rules []rspec.LinuxSyscall, ok func(rspec.LinuxSyscall) bool) bool {
	for _, r := range rules {
		if !ok(r) {
			return false
		}
	}
	return true
}

func errnoOfDefault(p *rspec.LinuxSeccomp) uint {
	return errnoOf(rspec.LinuxSyscall{Action: p.DefaultAction, ErrnoRet: p.DefaultErrnoRet})
}
