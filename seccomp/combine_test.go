package seccomp

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// critest's localhost profiles: allow everything but a few calls.
const (
	blockChmod    = `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["chmod", "fchmodat"], "action": "SCMP_ACT_ERRNO"}]}`
	blockHostName = `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["sethostname"], "action": "SCMP_ACT_ERRNO"}]}`
)

func callerProfile(t *testing.T, data string) *rspec.LinuxSeccomp {
	t.Helper()
	var p rspec.LinuxSeccomp
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func policy() *rspec.LinuxSeccomp {
	p := Default()
	NativeABIsOnly(p)
	return p
}

func TestCombineKeepsCallersDenials(t *testing.T) {
	pol := policy()
	out, differ, err := Combine(pol, callerProfile(t, blockChmod))
	if err != nil {
		t.Fatalf("Combine refused the built-in policy: %v", err)
	}
	if !slices.Equal(differ, []string{"chmod", "fchmodat"}) {
		t.Fatalf("differ %v", differ)
	}
	for _, name := range []string{"chmod", "fchmodat"} {
		if !allows(pol, name) {
			t.Fatalf("test premise: the policy allows %s", name)
		}
		if allows(out, name) {
			t.Errorf("%s allowed: the caller denies it", name)
		}
	}
	// What the policy denies stays denied though the caller allows all.
	for _, name := range append([]string{"sethostname"}, Denied...) {
		if allows(out, name) {
			t.Errorf("%s allowed: the policy denies it", name)
		}
	}
	for _, name := range []string{"read", "write", "fchmod", "openat"} {
		if !allows(out, name) {
			t.Errorf("%s denied: both allow it", name)
		}
	}
	if out.DefaultAction != pol.DefaultAction || !slices.Equal(out.Architectures, pol.Architectures) {
		t.Errorf("default %s arches %v: not the policy's", out.DefaultAction, out.Architectures)
	}
	if _, err := CompiledFor(out); err != nil {
		t.Fatalf("the combined filter does not compile: %v", err)
	}
}

func TestCombineCases(t *testing.T) {
	pol := policy()
	enosys := uint(errnoENOSYS)
	caller := &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, Syscalls: []rspec.LinuxSyscall{
		// Allowed by both: kept.
		{Names: []string{"read", "write", "exit_group", "sethostname"}, Action: rspec.ActAllow},
		// Denied with the caller's errno.
		{Names: []string{"getpid"}, Action: rspec.ActErrno, ErrnoRet: &enosys},
		// The caller's conditions on a call the policy allows outright.
		{Names: []string{"kill"}, Action: rspec.ActAllow, Args: []rspec.LinuxSeccompArg{{Index: 1, Value: 0, Op: rspec.OpEqualTo}}},
		// Conditions on both sides that differ: denied.
		{Names: []string{"socket"}, Action: rspec.ActAllow, Args: []rspec.LinuxSeccompArg{{Index: 0, Value: 38, Op: rspec.OpEqualTo}}},
		// A denial after a conditional allow: the denial's own errno.
		{Names: []string{"getuid"}, Action: rspec.ActAllow, Args: []rspec.LinuxSeccompArg{{Index: 0, Value: 0, Op: rspec.OpEqualTo}}},
		{Names: []string{"getuid"}, Action: rspec.ActErrno, ErrnoRet: &enosys},
		// A traced call is no allowed call.
		{Names: []string{"close"}, Action: rspec.ActTrace},
	}}
	out, _, err := Combine(pol, caller)
	if err != nil {
		t.Fatalf("Combine refused: %v", err)
	}
	for name, want := range map[string]bool{"read": true, "write": true, "exit_group": true, "sethostname": false,
		"getpid": false, "openat": false, "socket": false, "close": false} {
		if got := allows(out, name); got != want {
			t.Errorf("%s allowed %v, want %v", name, got, want)
		}
	}
	if r := rulesFor(out, "getpid"); len(r) != 1 || r[0].Action != rspec.ActErrno || *r[0].ErrnoRet != errnoENOSYS {
		t.Errorf("getpid rules %+v, want the caller's ENOSYS", r)
	}
	if r := rulesFor(out, "getuid"); len(r) != 1 || r[0].Action != rspec.ActErrno || *r[0].ErrnoRet != errnoENOSYS {
		t.Errorf("getuid rules %+v, want the caller's ENOSYS", r)
	}
	if allows(out, "kill", 1, 9) || !allows(out, "kill", 1, 0) {
		t.Error("kill: not the caller's condition")
	}
	if allows(out, "socket", 38) {
		t.Error("socket(AF_ALG) allowed: the policy denies it")
	}
	if _, err := CompiledFor(out); err != nil {
		t.Fatalf("the combined filter does not compile: %v", err)
	}
}

// TestWithinPolicy is what verification relies on: a combined filter is
// recognised as within the policy, and one that allows a single call more
// is not.
func TestWithinPolicy(t *testing.T) {
	pol := policy()
	if !WithinPolicy(pol, pol) {
		t.Fatal("the policy itself is not within the policy")
	}
	for _, data := range []string{blockChmod, blockHostName} {
		out, _, _ := Combine(pol, callerProfile(t, data))
		if !WithinPolicy(out, pol) {
			t.Errorf("Combine's own result for %s is not within the policy", data)
		}
	}
	if WithinPolicy(callerProfile(t, blockChmod), pol) {
		t.Error("the caller's allow-all profile is within the policy")
	}
	widen := map[string]func(p *rspec.LinuxSeccomp){
		"allows ptrace": func(p *rspec.LinuxSeccomp) {
			p.Syscalls = append(p.Syscalls, rspec.LinuxSyscall{Names: []string{"ptrace"}, Action: rspec.ActAllow})
		},
		"socket without conditions": func(p *rspec.LinuxSeccomp) {
			p.Syscalls = append(p.Syscalls, rspec.LinuxSyscall{Names: []string{"socket"}, Action: rspec.ActAllow})
		},
		"default allow": func(p *rspec.LinuxSeccomp) { p.DefaultAction = rspec.ActAllow },
		"32-bit ABI":    func(p *rspec.LinuxSeccomp) { p.Architectures = append(p.Architectures, rspec.ArchX86) },
		"log flag":      func(p *rspec.LinuxSeccomp) { p.Flags = append(p.Flags, rspec.LinuxSeccompFlagLog) },
		"clone3 allowed": func(p *rspec.LinuxSeccomp) {
			for i := range p.Syscalls {
				if slices.Contains(p.Syscalls[i].Names, "clone3") {
					p.Syscalls[i] = rspec.LinuxSyscall{Names: []string{"clone3"}, Action: rspec.ActAllow}
				}
			}
		},
	}
	for name, change := range widen {
		out, _, _ := Combine(pol, callerProfile(t, blockChmod))
		change(out)
		if WithinPolicy(out, pol) {
			t.Errorf("%s: accepted as within the policy", name)
		}
	}
}

func TestCombineNeedsDenyingPolicy(t *testing.T) {
	if _, _, err := Combine(&rspec.LinuxSeccomp{DefaultAction: rspec.ActAllow}, policy()); !errors.Is(err, ErrPolicyAllows) {
		t.Error("a policy that allows by default combined")
	}
}

// TestCombineAllowNextToDenial: a caller's rules for a call that hold an
// unconditional allow before an unconditional denial are a denial; the
// allow must not be what is kept. Kept, it lifted the policy's conditions
// on clone (namespace flags), socket (AF_ALG) and personality under runsc,
// where no host verification sees the filter.
func TestCombineAllowNextToDenial(t *testing.T) {
	pol := policy()
	names := []string{"clone", "personality", "socket"}
	for _, order := range [][]rspec.LinuxSeccompAction{
		{rspec.ActAllow, rspec.ActErrno}, {rspec.ActLog, rspec.ActKillProcess}, {rspec.ActErrno, rspec.ActAllow},
	} {
		caller := &rspec.LinuxSeccomp{DefaultAction: rspec.ActAllow}
		for _, a := range order {
			caller.Syscalls = append(caller.Syscalls, rspec.LinuxSyscall{Names: names, Action: a})
		}
		out, _, err := Combine(pol, caller)
		if err != nil {
			t.Fatalf("%v: %v", order, err)
		}
		for name, args := range map[string][]uint64{
			"clone":       {cloneNamespaceFlags | 17},
			"socket":      {afALG},
			"personality": {0x0400000},
		} {
			if allows(out, name, args...) {
				t.Errorf("%v: %s%v allowed; the policy denies it", order, name, args)
			}
		}
	}
}

// TestCombineNeverWidens: whatever rules a caller lists for a call, and
// whatever its default, the combined filter allows no call, with no
// arguments, that the policy's denies. The callers are every list of up
// to two rules drawn from each action with and without a condition, for
// calls the policy allows outright, under conditions, and never.
func TestCombineNeverWidens(t *testing.T) {
	pol := policy()
	probes := map[string][][]uint64{
		"clone":       {{0}, {17}, {cloneNamespaceFlags | 17}, {0x10000000 | 17}},
		"socket":      {{1}, {afALG}, {afVSOCK}, {0x1_00000026}, {46}},
		"personality": {{0}, {0x8}, {0x0400000}},
		"kill":        {{1, 0}, {1, 9}},
		"clone3":      {{0}},
		"ptrace":      {{0}},
		"mount":       {{0}},
	}
	cond := []rspec.LinuxSeccompArg{{Index: 0, Value: 0, Op: rspec.OpGreaterEqual}}
	var alphabet []rspec.LinuxSyscall
	for _, a := range []rspec.LinuxSeccompAction{rspec.ActAllow, rspec.ActLog, rspec.ActErrno, rspec.ActKill,
		rspec.ActKillProcess, rspec.ActKillThread, rspec.ActTrap, rspec.ActTrace, rspec.ActNotify} {
		alphabet = append(alphabet, rspec.LinuxSyscall{Action: a}, rspec.LinuxSyscall{Action: a, Args: cond})
	}
	lists := [][]rspec.LinuxSyscall{nil}
	for _, a := range alphabet {
		lists = append(lists, []rspec.LinuxSyscall{a})
		for _, b := range alphabet {
			lists = append(lists, []rspec.LinuxSyscall{a, b})
		}
	}
	for _, def := range []rspec.LinuxSeccompAction{rspec.ActAllow, rspec.ActLog, rspec.ActErrno, rspec.ActTrace} {
		for name, argsets := range probes {
			for _, rules := range lists {
				caller := &rspec.LinuxSeccomp{DefaultAction: def}
				for _, r := range rules {
					r.Names = []string{name}
					caller.Syscalls = append(caller.Syscalls, r)
				}
				out, _, err := Combine(pol, caller)
				if err != nil {
					continue // refused: nothing runs
				}
				for _, args := range argsets {
					if allows(out, name, args...) && !allows(pol, name, args...) {
						t.Fatalf("default %s, rules %+v: %s%v allowed; the policy denies it", def, rules, name, args)
					}
				}
			}
		}
	}
}

// TestCombineNoCallerLogging: a caller's SCMP_ACT_LOG keeps its
// conditions but becomes a plain allow: every logged call is an audit
// record on the host, and the container's caller does not choose what
// fills the host's log.
func TestCombineNoCallerLogging(t *testing.T) {
	pol := policy()
	caller := &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, Syscalls: []rspec.LinuxSyscall{
		{Names: []string{"write"}, Action: rspec.ActLog, Args: []rspec.LinuxSeccompArg{{Index: 0, Value: 0, Op: rspec.OpGreaterEqual}}},
		{Names: []string{"getpid"}, Action: rspec.ActLog},
	}}
	out, _, err := Combine(pol, caller)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Syscalls {
		if r.Action == rspec.ActLog {
			t.Errorf("%v: the caller's log action kept", r.Names)
		}
	}
	if !allows(out, "write", 1) {
		t.Error("write denied: both allow it under the caller's condition")
	}
	for i := range out.Syscalls {
		if slices.Equal(out.Syscalls[i].Names, []string{"write"}) {
			out.Syscalls[i].Action = rspec.ActLog
		}
	}
	if err := Narrower(out, pol); err == nil {
		t.Error("Narrower accepts a log action the policy does not have")
	}
}

// TestCombineBoundsCallerRules: a caller's filter with thousands of
// conditional rules on one call is refused by Combine, before libseccomp
// spends minutes compiling what the kernel would refuse anyway; one at
// the ceiling is combined and compiles.
func TestCombineBoundsCallerRules(t *testing.T) {
	pol := policy()
	caller := func(n int) *rspec.LinuxSeccomp {
		p := &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno}
		for i := 0; i < n; i++ {
			p.Syscalls = append(p.Syscalls, rspec.LinuxSyscall{Names: []string{"read"}, Action: rspec.ActAllow,
				Args: []rspec.LinuxSeccompArg{{Index: 0, Value: uint64(i), Op: rspec.OpEqualTo}}})
		}
		return p
	}
	if _, _, err := Combine(pol, caller(20000)); err == nil {
		t.Fatal("20000 conditional rules combined")
	}
	out, _, err := Combine(pol, caller(MaxCallerConditions))
	if err != nil {
		t.Fatalf("%d rules refused: %v", MaxCallerConditions, err)
	}
	if _, err := CompiledFor(out); err != nil {
		t.Fatalf("the ceiling does not compile: %v", err)
	}
}
