// Package seccomp provides bulkhead's default-deny seccomp profile and
// validates and compiles profiles with libseccomp before hand-over.
//
// The built-in profile (Default) is kept as Go values rather than embedded
// moby JSON, so that every group of rules can carry a comment saying where it
// comes from: Docker's default profile (moby profiles/seccomp/default.json at
// commit 00f3d189e420d485e42d15fe494f96d272284e0e) evaluated for a container
// with no capabilities, minus the syscalls in Denied.
//
// Operators may replace it with a file in moby's format (LoadMoby). Either
// way the profile goes through Validate before a container gets it: every
// syscall name must be known to libseccomp on x86_64, aarch64 and every
// architecture the profile lists (runc silently drops unknown names, which
// would turn a typo into a missing rule), and the whole profile must compile
// to BPF. Validate only proves that the profile loads; the kernel enforces
// it once the backend installs it.
//
// Architecture-specific syscalls: an OCI profile has no per-architecture
// rules, so a rule applies on every listed architecture. libseccomp resolves
// a name that an architecture lacks (arch_prctl on aarch64, set_tls on
// x86_64) to a negative pseudo-syscall number and adds no rule for it there,
// which scopes such names to the architectures that have them. Validate
// therefore accepts a name that is a pseudo-syscall on some listed
// architectures but refuses one that is a real syscall on none of them.
package seccomp

import (
	"fmt"
	"os"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
)

// ForProfile returns the seccomp profile a container gets: the built-in
// default when path is empty, otherwise the operator's moby-format file,
// with only the native 64-bit ABIs unless compat (see NativeABIsOnly), and
// without memfd_create unless execWrites, the profile's grant to run what
// the job writes (see NoMemfd). The result has been validated and compiled
// with libseccomp (the compile is remembered in DefaultCacheDir; see
// validateCached).
func ForProfile(path string, compat, execWrites bool) (*rspec.LinuxSeccomp, error) {
	p, _, err := ForProfileCompiled(path, compat, execWrites)
	return p, err
}

// ForProfileCompiled is ForProfile that also returns what libseccomp
// generates for the profile (see Compiled), in the same single pass.
func ForProfileCompiled(path string, compat, execWrites bool) (*rspec.LinuxSeccomp, Compiled, error) {
	var data []byte
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, Compiled{}, fmt.Errorf("seccomp profile: %w", err)
		}
	}
	key := profileKey{path: path, content: string(data), compat: compat, execWrites: execWrites}
	if p, c, ok := profiles.get(key); ok {
		return p, c, nil
	}
	p, c, err := forProfileCompiled(path, data, compat, execWrites)
	if err == nil {
		profiles.put(key, p, c)
	}
	return p, c, err
}

// forProfileCompiled is ForProfileCompiled of the profile file's content
// data (nil for the built-in profile), without the memo.
func forProfileCompiled(path string, data []byte, compat, execWrites bool) (*rspec.LinuxSeccomp, Compiled, error) {
	var p *rspec.LinuxSeccomp
	if path == "" {
		p = Default()
	} else {
		var err error
		p, err = LoadMoby(data)
		if err != nil {
			return nil, Compiled{}, fmt.Errorf("seccomp profile %s: %w", path, err)
		}
		if letsThrough(p.DefaultAction) {
			// The boundary's filter is default-deny: one that lets every
			// call it does not name through promises nothing of the calls
			// a kernel adds, and no caller's filter could narrow it.
			return nil, Compiled{}, fmt.Errorf("seccomp profile %s: defaultAction %s lets every call the profile does not name through; the policy's filter is default-deny: give it SCMP_ACT_ERRNO and allow the calls the jobs need", path, p.DefaultAction)
		}
	}
	if compat {
		CompatABIsOnly(p)
	} else {
		NativeABIsOnly(p)
	}
	if !execWrites {
		NoMemfd(p)
	}
	if err := NoRefusedFlags(p); err != nil {
		return nil, Compiled{}, fmt.Errorf("seccomp profile %s: %w", path, err)
	}
	NoPtrace(p)
	c, err := compiledCached(p, cacheDir)
	if err != nil {
		if path == "" {
			return nil, Compiled{}, fmt.Errorf("built-in seccomp profile: %w", err)
		}
		return nil, Compiled{}, fmt.Errorf("seccomp profile %s: %w", path, err)
	}
	return p, c, nil
}

// nativeABIs are the 64-bit system call ABIs of the hosts bulkhead runs
// on. A filter lists every ABI it judges; a call made through any other
// (int 0x80 on x86_64, x32, arm32 on arm64) gets the filter's bad-arch
// action and is killed, so socketcall and ipc, whose arguments sit in
// memory the filter cannot read, cannot carry a refused socket family.
var nativeABIs = []rspec.Arch{rspec.ArchX86_64, rspec.ArchAARCH64}

// compatABIs are what compat_syscalls keeps beside the native ABIs: x32
// and arm32, whose socket calls are direct, so the filter judges their
// family as on the 64-bit ABI. Not i386: libseccomp turns each rule on
// socket or socketpair into socketcall(SYS_SOCKET) or
// socketcall(SYS_SOCKETPAIR) on i386, its other conditions dropped, since
// socketcall's arguments sit in memory, so one rule allowing AF_UNIX
// would open every family through socketcall (netlink, AF_VSOCK,
// AF_ALG).
var compatABIs = append([]rspec.Arch{rspec.ArchX32, rspec.ArchARM}, nativeABIs...)

// NativeABIsOnly drops every other architecture from p, and the names
// that exist only on those dropped (cacheflush, set_tls: arm32 only),
// which no kept architecture could ever match. A name libseccomp knows on
// no architecture at all stays, for validation to report. A profile that
// lists no architecture already applies to the native ABI alone.
func NativeABIsOnly(p *rspec.LinuxSeccomp) { abisOnly(p, nativeABIs) }

// ABIsKept are the system call ABIs a filter may list: the native ones,
// and compatABIs with compat_syscalls.
func ABIsKept(compat bool) []rspec.Arch {
	if compat {
		return compatABIs
	}
	return nativeABIs
}

// CompatABIsOnly is NativeABIsOnly keeping compatABIs too.
func CompatABIsOnly(p *rspec.LinuxSeccomp) { abisOnly(p, compatABIs) }

func abisOnly(p *rspec.LinuxSeccomp, abis []rspec.Arch) {
	if len(p.Architectures) == 0 {
		return
	}
	var keep []rspec.Arch
	var kept, dropped []libseccomp.ScmpArch
	for _, a := range p.Architectures {
		if slices.Contains(abis, a) {
			keep = append(keep, a)
			kept = append(kept, specArches[a])
		} else if s, ok := specArches[a]; ok {
			dropped = append(dropped, s)
		}
	}
	p.Architectures = keep
	var rules []rspec.LinuxSyscall
	for _, r := range p.Syscalls {
		var names []string
		for _, name := range r.Names {
			if existsOn(name, kept) || !existsOn(name, dropped) {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			r.Names = names
			rules = append(rules, r)
		}
	}
	p.Syscalls = rules
}

func existsOn(name string, arches []libseccomp.ScmpArch) bool {
	for _, a := range arches {
		if nr, err := libseccomp.GetSyscallFromNameByArch(name, a); err == nil && nr >= 0 {
			return true
		}
	}
	return false
}

// NoMemfd makes memfd_create answer ENOSYS, as on a kernel without it, for
// a profile that does not let the job run what it writes. A memfd is
// written memory that execve runs through /proc/self/fd on every mount's
// noexec (measured: a program copied to the noexec /tmp ran from a memfd
// on runc and runsc). Programs that use memfds for shared memory fall back
// to shm_open, in the noexec /dev/shm, when the call is missing. Whatever
// rule of p allowed the call loses it, so the answer is the same for the
// built-in profile and an operator's. memfd_secret goes with it: its
// memory cannot be executed, but "no memfd" is the profile's word.
func NoMemfd(p *rspec.LinuxSeccomp) {
	var rules []rspec.LinuxSyscall
	for _, r := range p.Syscalls {
		r.Names = slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { return slices.Contains(memfdCalls, n) })
		if len(r.Names) > 0 {
			rules = append(rules, r)
		}
	}
	enosys := uint(errnoENOSYS)
	p.Syscalls = append(rules, rspec.LinuxSyscall{Names: slices.Clone(memfdCalls), Action: rspec.ActErrno, ErrnoRet: &enosys})
}

// NoRefusedFlags keeps each call of refusedFlags without the flag
// refused there. hugetlb pages are charged to no memory cgroup, only to
// the hugetlb controller, which a host may not have (this one has none
// mounted): a job with a 256 MiB limit held every huge page the host had
// reserved beside it. A job that asks gets EPERM, and programs that try
// huge pages fall back to ordinary ones; so does one that asks for a
// seccomp listener. A rule that lets the call through (allow, log) keeps its own
// conditions and gets the flag's; one that already judges the flags'
// argument cannot take another condition on it (runc ORs conditions on
// one argument), and is refused rather than left to pass the flag or
// dropped so that every mmap fails.
func NoRefusedFlags(p *rspec.LinuxSeccomp) error {
	var rules, judged []rspec.LinuxSyscall
	for i, r := range p.Syscalls {
		if !letsThrough(r.Action) {
			rules = append(rules, r)
			continue
		}
		var keep []string
		for _, name := range r.Names {
			flag, ok := refusedFlags[name]
			if !ok {
				keep = append(keep, name)
				continue
			}
			if slices.ContainsFunc(r.Args, func(a rspec.LinuxSeccompArg) bool { return a.Index == flag.index }) {
				return fmt.Errorf("syscalls[%d] (%s): a condition on argument %d, where bulkhead refuses the flag %#x (runc would OR the two); judge another argument, or none", i, name, flag.index, flag.mask)
			}
			j := r
			j.Names = []string{name}
			j.Args = append(slices.Clone(r.Args), rspec.LinuxSeccompArg{Index: flag.index, Value: flag.mask, ValueTwo: 0, Op: rspec.OpMaskedEqual})
			judged = append(judged, j)
		}
		if len(keep) > 0 {
			r.Names = keep
			rules = append(rules, r)
		}
	}
	p.Syscalls = append(rules, judged...)
	return nil
}

// letsThrough tells whether an action lets the call run.
func letsThrough(a rspec.LinuxSeccompAction) bool {
	return a == rspec.ActAllow || a == rspec.ActLog
}

// refusedFlags are the calls whose flags bulkhead refuses, with the
// argument that holds them: the huge pages of MAP_HUGETLB (0x40000) of
// mmap and mmap2, SHM_HUGETLB (04000) of shmget, MFD_HUGETLB (4) of
// memfd_create; and SECCOMP_FILTER_FLAG_NEW_LISTENER (8) of seccomp, a
// user notification: its action outranks a trace, so a job that made
// itself the supervisor of its own calls let each one the profile traces
// run (unshare of a user namespace under a profile that traces by
// default), and a newer gVisor, which knows notifications, would let it
// run every call runsc gets as a trace rule.
var refusedFlags = map[string]struct {
	index uint
	mask  uint64
}{
	"mmap":         {3, 0x40000},
	"mmap2":        {3, 0x40000},
	"shmget":       {2, 0o4000},
	"memfd_create": {1, 4},
	"seccomp":      {1, 8},
}

// NoPtrace refuses ptrace in every profile, an operator's too. A call
// the filter traces (SCMP_ACT_TRACE) fails with ENOSYS only while nothing
// traces the caller: the translation for runsc hands it every ENOSYS rule
// as a trace rule (runsc ignores errnoRet), and a profile may trace by
// default. A job allowed ptrace traced its own child and let each traced
// call run (memfd_create, unshare of a user namespace, netlink). Whatever
// rule let ptrace through loses it.
func NoPtrace(p *rspec.LinuxSeccomp) {
	var rules []rspec.LinuxSyscall
	for _, r := range p.Syscalls {
		if letsThrough(r.Action) || r.Action == rspec.ActTrace || r.Action == rspec.ActNotify {
			r.Names = slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { return n == "ptrace" })
		}
		if len(r.Names) > 0 {
			rules = append(rules, r)
		}
	}
	eperm := uint(errnoEPERM)
	p.Syscalls = append(rules, rspec.LinuxSyscall{Names: []string{"ptrace"}, Action: rspec.ActErrno, ErrnoRet: &eperm})
}

// memfdCalls are the calls that make a descriptor of anonymous memory.
var memfdCalls = []string{"memfd_create", "memfd_secret"}
