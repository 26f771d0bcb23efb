package seccomp

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Combine returns a filter that allows a system call only where both the
// policy's filter and the caller's allow it: the caller's narrower profile
// is kept inside the policy's, never widening it. runc installs a single
// filter, so the two are merged into one profile rather than stacked.
//
// The result is the policy's filter (its default action, architectures,
// flags) with, for each system call the policy allows:
//   - the caller allows it without conditions: the policy's rules;
//   - the caller denies it without conditions: the caller's denying action
//     (its errno, kill or trap), or the policy's own when the policy denies
//     it as well;
//   - the caller allows it only under conditions and denies it otherwise,
//     and the policy allows it without conditions: the caller's rules,
//     with its log actions made plain allows (withoutLogging);
//   - anything else (conditions on both sides that differ, conditional
//     denials, trace or notify actions): denied with the policy's default
//     action. Intersecting argument conditions is not attempted; denying is
//     what both sides accept.
//
// A denial that is the policy's default action is written as no rule, so
// Combine(policy, Combine(policy, caller)) is Combine(policy, caller):
// WithinPolicy relies on that. What differs from the policy is listed in
// the returned names, sorted, for the decision record.
//
// A policy whose default action allows has no denial to fall back on
// (ErrPolicyAllows): the caller's filter cannot be kept inside it. The
// result is returned only when Narrower proves it within the policy.
func Combine(policy, caller *rspec.LinuxSeccomp) (_ *rspec.LinuxSeccomp, differ []string, err error) {
	if !denies(policy.DefaultAction) {
		return nil, nil, ErrPolicyAllows
	}
	pol := byName(policy.Syscalls)
	call := byName(caller.Syscalls)
	def := rspec.LinuxSyscall{Action: policy.DefaultAction, ErrnoRet: policy.DefaultErrnoRet}
	callerDefault := rspec.LinuxSyscall{Action: caller.DefaultAction, ErrnoRet: caller.DefaultErrnoRet}

	out := &rspec.LinuxSeccomp{
		DefaultAction:   policy.DefaultAction,
		DefaultErrnoRet: policy.DefaultErrnoRet,
		Architectures:   slices.Clone(policy.Architectures),
		Flags:           slices.Clone(policy.Flags),
	}
	changed := map[string][]rspec.LinuxSyscall{}
	kept := 0 // the caller's conditional rules in the result
	for _, name := range sortedKeys(pol) {
		p := pol[name]
		c, mentioned := call[name]
		if !mentioned {
			c = []rspec.LinuxSyscall{callerDefault}
		}
		var rules []rspec.LinuxSyscall
		switch {
		case reflect.DeepEqual(c, p) || allowsAlways(c):
			continue
		case deniesAlways(p):
			continue
		case deniesAlways(c):
			d := firstDenial(c)
			rules = []rspec.LinuxSyscall{{Action: d.Action, ErrnoRet: d.ErrnoRet}}
		case allowsAlways(p) && allowsOnlyIf(c) && denies(callerDefault.Action):
			rules = withoutLogging(c)
			if kept += len(c); kept > MaxCallerConditions {
				return nil, nil, fmt.Errorf("the caller's filter keeps more than %d rules with conditions; at most %d fit a filter the kernel loads in time", MaxCallerConditions, MaxCallerConditions)
			}
		default:
			rules = []rspec.LinuxSyscall{def}
		}
		if len(rules) == 1 && len(rules[0].Args) == 0 && sameAction(rules[0], def) {
			rules = nil
		}
		changed[name] = rules
	}
	for _, r := range policy.Syscalls {
		var names []string
		for _, n := range r.Names {
			if _, ok := changed[n]; !ok {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			r.Names = names
			r.Args = slices.Clone(r.Args)
			out.Syscalls = append(out.Syscalls, r)
		}
	}
	for _, name := range sortedKeys(changed) {
		differ = append(differ, name)
		for _, r := range changed[name] {
			r.Names = []string{name}
			r.Args = slices.Clone(r.Args)
			out.Syscalls = append(out.Syscalls, r)
		}
	}
	if err := Narrower(out, policy); err != nil {
		return nil, nil, fmt.Errorf("the combined filter is not within the policy's: %w", err)
	}
	return out, differ, nil
}

// MaxCallerConditions bounds the caller's conditional rules that Combine
// keeps. libseccomp's compile time grows with the square of the rules on
// one call (4,000 rules: 4.5 s; 20,000: 140 s, as root and outside any
// cgroup, before the filter is refused for exceeding the kernel's 4,096
// BPF instructions), so a caller's config.json must not choose how long
// create computes. Real profiles keep a handful.
const MaxCallerConditions = 512

// ErrPolicyAllows: the policy's filter allows by default, so no caller's
// filter can be combined inside it.
var ErrPolicyAllows = errors.New("the policy's filter allows by default")

// WithinPolicy reports whether p is a filter Combine could have made from
// policy: combining it with the policy again changes nothing. Such a
// filter allows no system call the policy denies.
func WithinPolicy(p, policy *rspec.LinuxSeccomp) bool {
	again, _, err := Combine(policy, p)
	return err == nil && Narrower(p, policy) == nil && p.DefaultAction == policy.DefaultAction &&
		reflect.DeepEqual(p.DefaultErrnoRet, policy.DefaultErrnoRet) &&
		slices.Equal(p.Architectures, policy.Architectures) &&
		slices.Equal(p.Flags, policy.Flags) &&
		p.ListenerPath == "" && p.ListenerMetadata == "" &&
		reflect.DeepEqual(byName(p.Syscalls), byName(again.Syscalls))
}

// byName lists each system call's rules in profile order, one name each.
func byName(rules []rspec.LinuxSyscall) map[string][]rspec.LinuxSyscall {
	m := map[string][]rspec.LinuxSyscall{}
	for _, r := range rules {
		for _, n := range r.Names {
			one := rspec.LinuxSyscall{Action: r.Action, ErrnoRet: r.ErrnoRet, Args: r.Args}
			if len(one.Args) == 0 {
				one.Args = nil
			}
			m[n] = append(m[n], one)
		}
	}
	return m
}

func sortedKeys(m map[string][]rspec.LinuxSyscall) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// allowing: the call goes through (SCMP_ACT_LOG only adds a log line).
func allowing(a rspec.LinuxSeccompAction) bool {
	return a == rspec.ActAllow || a == rspec.ActLog
}

// denies: the call fails or the task dies; trace and notify hand the
// decision to another process and are neither.
func denies(a rspec.LinuxSeccompAction) bool {
	switch a {
	case rspec.ActErrno, rspec.ActKill, rspec.ActKillThread, rspec.ActKillProcess, rspec.ActTrap:
		return true
	}
	return false
}

func allowsAlways(rules []rspec.LinuxSyscall) bool {
	for _, r := range rules {
		if len(r.Args) > 0 || !allowing(r.Action) {
			return false
		}
	}
	return len(rules) > 0
}

// deniesAlways: one unconditional rule denies, whatever else is listed.
func deniesAlways(rules []rspec.LinuxSyscall) bool {
	_, ok := unconditionalDenial(rules)
	return ok
}

// firstDenial is the unconditional denying rule deniesAlways found: its
// action is the one to keep, whatever the rules before it allow.
func firstDenial(rules []rspec.LinuxSyscall) rspec.LinuxSyscall {
	r, _ := unconditionalDenial(rules)
	return r
}

func unconditionalDenial(rules []rspec.LinuxSyscall) (rspec.LinuxSyscall, bool) {
	for _, r := range rules {
		if len(r.Args) == 0 && denies(r.Action) {
			return r, true
		}
	}
	return rspec.LinuxSyscall{}, false
}

// allowsOnlyIf: every rule allows, each under conditions.
func allowsOnlyIf(rules []rspec.LinuxSyscall) bool {
	for _, r := range rules {
		if len(r.Args) == 0 || !allowing(r.Action) {
			return false
		}
	}
	return len(rules) > 0
}

// withoutLogging turns the caller's SCMP_ACT_LOG into SCMP_ACT_ALLOW: a
// log action writes an audit record on the host for every call, so an
// untrusted caller would choose what fills the host's audit log. Which
// calls are logged is the policy's decision, never the caller's.
func withoutLogging(rules []rspec.LinuxSyscall) []rspec.LinuxSyscall {
	out := slices.Clone(rules)
	for i := range out {
		if out[i].Action == rspec.ActLog {
			out[i].Action = rspec.ActAllow
		}
	}
	return out
}

// sameAction compares two actions as runc applies them: ERRNO and TRACE
// without errnoRet return EPERM.
func sameAction(a, b rspec.LinuxSyscall) bool {
	return a.Action == b.Action && errnoOf(a) == errnoOf(b)
}

func errnoOf(r rspec.LinuxSyscall) uint {
	if r.ErrnoRet != nil {
		return *r.ErrnoRet
	}
	if r.Action == rspec.ActErrno || r.Action == rspec.ActTrace {
		return errnoEPERM
	}
	return 0
}
