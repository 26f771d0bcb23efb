package seccomp

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Errno values the profile returns. Spelt out rather than taken from
// golang.org/x/sys/unix because the profile is data for any architecture and
// these numbers are the same on all of ours.
const (
	errnoEPERM  = 1
	errnoENOSYS = 38
)

// Address families the socket rule refuses (include/linux/socket.h).
const (
	afALG   = 38 // kernel crypto API: a large, bug-prone attack surface
	afVSOCK = 40 // host<->guest channel: must not reach a hypervisor agent
)

// socketFamilies are the address families a job may open sockets of:
// AF_UNIX, AF_INET, AF_INET6 (include/linux/socket.h).
var socketFamilies = []uint64{1, 2, 10}

// afNetlink is the netlink family, whose protocols are each a kernel
// subsystem of its own. None is allowed: on runc the replies a netlink
// socket queues were charged to no memory cgroup (measured on cgroup v1)
// and have no host-wide cap, so a job that asked and never read held 8 MiB of the
// host's unreclaimable memory per socket, over a thousand sockets per
// process (a 256 MiB job pinned 641 MiB from 80). Routing (getifaddrs, ip)
// shows nothing in a loopback-only namespace, and glibc's getaddrinfo
// takes both address families as configured when it cannot ask
// (AI_ADDRCONFIG). The host's device events, audit, xfrm, netfilter and
// the generic families are kernel code a job has no use for.
const afNetlink = 16

// cloneNamespaceFlags are the clone(2) flags that create namespaces:
// CLONE_NEWNS|CLONE_NEWCGROUP|CLONE_NEWUTS|CLONE_NEWIPC|CLONE_NEWUSER|
// CLONE_NEWPID|CLONE_NEWNET, as in moby's clone rule (value 2114060288).
const cloneNamespaceFlags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 |
	0x10000000 | 0x20000000 | 0x40000000

// Denied lists the syscalls bulkhead refuses on top of Docker's default
// profile. None of them is allowed by any rule of Default, so the default
// action answers them with EPERM. Exported so that tests and the boundary
// probe can assert that each of them fails.
var Denied = []string{
	// Reading or writing another process's memory (Docker allows these on
	// kernels >= 4.8, relying on the ptrace access checks alone).
	"ptrace", "process_vm_readv", "process_vm_writev",
	// io_uring bypasses seccomp for the operations it submits and has been
	// a steady source of kernel privilege escalations (older Docker
	// profiles allow it).
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// userfaultfd makes kernel races easy to win.
	"userfaultfd",
	// The kernel keyring is not namespaced.
	"keyctl", "add_key", "request_key",
	// Kernel programmability and introspection.
	"bpf", "perf_event_open",
	// Namespaces: the container's namespaces are fixed by the runtime.
	"unshare", "setns",
	// Mount API, old and new, and changing the root.
	"mount", "umount", "umount2", "mount_setattr", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "pivot_root", "chroot",
	// Replacing the kernel or loading modules.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	// File handles bypass path-based checks (the "shocker" escape);
	// Docker allows name_to_handle_at unconditionally.
	"open_by_handle_at", "name_to_handle_at",
	// Host-wide accounting, swap and power state.
	"acct", "swapon", "swapoff", "reboot",
}

// Default returns the built-in profile. It is built afresh on every call,
// so callers may modify the result, and it is not validated: ForProfile("")
// validates it, and the package tests check that it always passes.
func Default() *rspec.LinuxSeccomp {
	eperm := uint(errnoEPERM)
	p := &rspec.LinuxSeccomp{
		DefaultAction:   rspec.ActErrno,
		DefaultErrnoRet: &eperm,
		// moby default.json archMap: the entries for SCMP_ARCH_X86_64 and
		// SCMP_ARCH_AARCH64 with their sub-architectures, so 32-bit and
		// x32 binaries get the same filter instead of an open door.
		Architectures: []rspec.Arch{
			rspec.ArchX86_64, rspec.ArchX86, rspec.ArchX32,
			rspec.ArchAARCH64, rspec.ArchARM,
		},
	}
	add := func(r rspec.LinuxSyscall) { p.Syscalls = append(p.Syscalls, r) }

	// moby default.json, first rule: the unconditional allowlist.
	add(allow(append([]string(nil), defaultAllowed...)...))

	// moby default.json's socket rule allows every family but AF_VSOCK.
	// Here only the families a job uses are allowed: AF_UNIX, AF_INET and
	// AF_INET6. Any other family is kernel code a job has no use for in a
	// loopback-only namespace, and a socket() of a family whose module is
	// not loaded loads it (ax25, netrom, rose, appletalk, rds, tipc, can:
	// each a history of privilege escalations); AF_ALG and AF_VSOCK too,
	// and netlink (afNetlink). One rule per family, each on the low 32 bits
	// of arg0: runc ORs several conditions on one argument as separate
	// rules, and the kernel reads the family as an int after seccomp has
	// seen all 64 bits (0x1_00000026 is AF_ALG).
	for _, family := range socketFamilies {
		add(allowIf("socket", rspec.LinuxSeccompArg{
			Index: 0, Value: 0xffffffff, ValueTwo: family, Op: rspec.OpMaskedEqual,
		}))
	}
	// socketpair creates its sockets as socket does, module and all:
	// AF_UNIX, the one family whose pairs a job uses.
	add(allowIf("socketpair", rspec.LinuxSeccompArg{
		Index: 0, Value: 0xffffffff, ValueTwo: 1, Op: rspec.OpMaskedEqual,
	}))

	// fcntl, which moby's allowlist allows outright, for the commands
	// reviewed but F_SETLEASE (1024). Under runc a bound host file is the
	// host's file: a lease the job takes on one it owns (a workspace file)
	// makes every host writer's open wait up to lease-break-time, and a
	// delegation (F_SETDELEG, 1040, Linux 6.19) does the same; any command
	// not listed here, that one included, is refused until it is reviewed.
	// As with socket, the rules are on the low 32 bits of the command (the
	// kernel reads an unsigned int).
	for _, m := range []struct{ mask, value uint64 }{
		{0xfffffff0, 0},    // F_DUPFD ... F_GETOWN_EX (0-15; 12-14 are the 32-bit lock commands)
		{0xfffffffe, 16},   // F_GETOWN_EX, F_GETOWNER_UIDS
		{0xfffffffe, 36},   // F_OFD_GETLK, F_OFD_SETLK
		{0xffffffff, 38},   // F_OFD_SETLKW
		{0xffffffff, 1025}, // F_GETLEASE
		{0xfffffffe, 1026}, // F_NOTIFY, F_DUPFD_QUERY
		{0xfffffffc, 1028}, // F_CREATED_QUERY, F_CANCELLK, F_DUPFD_CLOEXEC, F_SETPIPE_SZ
		{0xfffffffc, 1032}, // F_GETPIPE_SZ, F_ADD_SEALS, F_GET_SEALS, F_GET_RW_HINT
		{0xfffffffe, 1036}, // F_SET_RW_HINT, F_GET_FILE_RW_HINT
		{0xffffffff, 1038}, // F_SET_FILE_RW_HINT
	} {
		for _, name := range []string{"fcntl", "fcntl64"} {
			add(allowIf(name, rspec.LinuxSeccompArg{
				Index: 1, Value: m.mask, ValueTwo: m.value, Op: rspec.OpMaskedEqual,
			}))
		}
	}

	// moby default.json, the personality rules: only the harmless personas
	// PER_LINUX, PER_LINUX32, UNAME26, UNAME26|PER_LINUX32 and the query
	// 0xffffffff. Exact equality on all 64 bits cannot be widened by
	// truncation, unlike the socket case.
	for _, persona := range []uint64{0x0, 0x8, 0x20000, 0x20008, 0xffffffff} {
		add(allowIf("personality", rspec.LinuxSeccompArg{
			Index: 0, Value: persona, Op: rspec.OpEqualTo,
		}))
	}

	// moby default.json, arch-scoped rules for arm/arm64, amd64/x32 and
	// amd64/x32/x86. libseccomp adds each only where the syscall exists (see
	// the package comment); arch_prctl therefore also applies to 32-bit x86,
	// which Docker leaves out and which only offers CPUID faulting there.
	// Docker's arm group also lists sync_file_range2, which libseccomp
	// knows on none of our architectures (arm calls it
	// arm_sync_file_range), so its rule would be a silent no-op.
	add(allow("arm_fadvise64_64", "arm_sync_file_range",
		"breakpoint", "cacheflush", "set_tls"))
	add(allow("arch_prctl"))
	add(allow("modify_ldt"))

	// moby default.json, the clone rule Docker applies when CAP_SYS_ADMIN is
	// missing (excludes.caps): threads and processes, never new namespaces.
	// The s390 variant (flags in arg1) is left out with the architecture.
	add(allowIf("clone", rspec.LinuxSeccompArg{
		Index: 0, Value: cloneNamespaceFlags, ValueTwo: 0, Op: rspec.OpMaskedEqual,
	}))

	// moby default.json, clone3 without CAP_SYS_ADMIN: seccomp cannot look
	// into clone3's struct argument, so answer ENOSYS and let glibc fall
	// back to clone, where the rule above sees the flags.
	enosys := uint(errnoENOSYS)
	add(rspec.LinuxSyscall{Names: []string{"clone3"}, Action: rspec.ActErrno, ErrnoRet: &enosys})

	// Not carried over from moby default.json: every rule under
	// includes.caps (CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_SYS_BOOT,
	// CAP_SYS_CHROOT, CAP_SYS_MODULE, CAP_SYS_PACCT, CAP_SYS_RAWIO,
	// CAP_SYS_TIME, CAP_SYS_TTY_CONFIG, CAP_SYS_NICE, CAP_SYSLOG, CAP_BPF,
	// CAP_PERFMON, CAP_DAC_READ_SEARCH), because bulkhead drops every
	// capability; the minKernel 4.8 ptrace rule, and io_uring_* and
	// name_to_handle_at from the allowlist, which are in Denied; and the
	// ppc64le, s390 and riscv64 rules, which are for other architectures.
	return p
}

func allow(names ...string) rspec.LinuxSyscall {
	return rspec.LinuxSyscall{Names: names, Action: rspec.ActAllow}
}

func allowIf(name string, args ...rspec.LinuxSeccompArg) rspec.LinuxSyscall {
	return rspec.LinuxSyscall{Names: []string{name}, Action: rspec.ActAllow, Args: args}
}
