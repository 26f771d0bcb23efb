package egress

import (
	"fmt"
	"os"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// brokerSyscalls are what the broker does once it serves: the Go runtime
// (memory, threads, signals to itself, timers), sockets it already has or
// dials, name resolution (reading /etc/hosts and friends, a DNS socket,
// netlink for the host's own addresses) and writing to descriptors it
// holds. No execve, no namespaces, no mounts, no ptrace, no ids, no
// signals to any other process. Names unknown on the native architecture
// (poll on arm64) are skipped. clone and socket are allowed with
// conditions only (InstallFilter).
var brokerSyscalls = []string{
	// memory and threads
	"brk", "mmap", "munmap", "mprotect", "madvise", "mremap", "mincore", "membarrier",
	"futex", "set_robust_list", "rseq", "sched_yield", "sched_getaffinity",
	"gettid", "getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "exit", "exit_group",
	"prlimit64", "getrlimit", "uname", "getrandom", "restart_syscall",
	// signals and time
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
	"nanosleep", "clock_gettime", "clock_nanosleep", "clock_getres", "gettimeofday",
	"setitimer", "timer_create", "timer_settime", "timer_delete",
	// descriptors
	"read", "write", "readv", "writev", "pread64", "close", "fcntl", "dup", "dup3",
	"fstat", "newfstatat", "statx", "lseek", "getdents64", "readlinkat", "flock",
	"epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd2", "pipe2",
	"poll", "ppoll", "pselect6",
	// sockets
	"connect", "accept4", "bind", "listen", "shutdown",
	"getsockopt", "setsockopt", "getsockname", "getpeername",
	"sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg",
}

// openFlagsWriting are the open(2) flags that would write or create a
// file: the broker only reads files (resolver configuration).
const openFlagsWriting = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC | unix.O_APPEND

// cloneNewNamespaces are clone(2)'s flags that make a namespace. A new
// user namespace would give a taken-over broker every capability in it,
// and with them a network namespace's netfilter and the kernel code
// behind it; the runtime's threads ask for none.
const cloneNewNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// socketFamilies are what the broker opens: TCP and UDP (dials, DNS), unix
// (a resolver's), and netlink's routing family (the host's own
// addresses). Not AF_ALG, AF_PACKET, AF_VSOCK or netlink's other families,
// each more kernel code a taken-over broker could reach.
var socketFamilies = []struct{ family, protocol int }{
	{unix.AF_INET, -1}, {unix.AF_INET6, -1}, {unix.AF_UNIX, -1}, {unix.AF_NETLINK, unix.NETLINK_ROUTE},
}

// InstallFilter puts the broker under a seccomp filter on every thread
// (TSYNC) that answers EPERM to any system call it does not need.
func InstallFilter() error {
	f, err := libseccomp.NewFilter(libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM)))
	if err != nil {
		return fmt.Errorf("egress broker: seccomp: %w", err)
	}
	// libseccomp-golang asks for TSYNC on every filter it makes.
	defer f.Release()
	for _, name := range brokerSyscalls {
		nr, err := libseccomp.GetSyscallFromName(name)
		if err != nil {
			continue
		}
		if err := f.AddRule(nr, libseccomp.ActAllow); err != nil {
			return fmt.Errorf("egress broker: seccomp: %s: %w", name, err)
		}
	}
	// Reading only: the flags argument has no writing bit.
	readOnly, err := libseccomp.MakeCondition(2, libseccomp.CompareMaskedEqual, openFlagsWriting, 0)
	if err != nil {
		return err
	}
	if err := addConditional(f, "openat", readOnly); err != nil {
		return err
	}
	noNamespace, err := libseccomp.MakeCondition(0, libseccomp.CompareMaskedEqual, cloneNewNamespaces, 0)
	if err != nil {
		return err
	}
	if err := addConditional(f, "clone", noNamespace); err != nil {
		return err
	}
	// clone3 passes its flags in memory a filter cannot read: ENOSYS, so
	// that a caller falls back to clone.
	if nr, err := libseccomp.GetSyscallFromName("clone3"); err == nil {
		if err := f.AddRule(nr, libseccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
			return fmt.Errorf("egress broker: seccomp: clone3: %w", err)
		}
	}
	for _, fam := range socketFamilies {
		family, err := libseccomp.MakeCondition(0, libseccomp.CompareEqual, uint64(fam.family))
		if err != nil {
			return err
		}
		conds := []libseccomp.ScmpCondition{family}
		if fam.protocol >= 0 {
			protocol, err := libseccomp.MakeCondition(2, libseccomp.CompareEqual, uint64(fam.protocol))
			if err != nil {
				return err
			}
			conds = append(conds, protocol)
		}
		if err := addConditional(f, "socket", conds...); err != nil {
			return err
		}
	}
	// Signals to itself only: the runtime preempts its own threads with
	// tgkill(getpid(), tid, ...) and raises with kill(getpid(), ...).
	self, err := libseccomp.MakeCondition(0, libseccomp.CompareEqual, uint64(os.Getpid()))
	if err != nil {
		return err
	}
	for _, name := range []string{"kill", "tgkill"} {
		if err := addConditional(f, name, self); err != nil {
			return err
		}
	}
	if err := f.Load(); err != nil {
		return fmt.Errorf("egress broker: seccomp: load: %w", err)
	}
	return nil
}

// addConditional allows name where every one of conds holds; rules for the
// same name add up (any one allows).
func addConditional(f *libseccomp.ScmpFilter, name string, conds ...libseccomp.ScmpCondition) error {
	nr, err := libseccomp.GetSyscallFromName(name)
	if err != nil {
		return fmt.Errorf("egress broker: seccomp: %s: %w", name, err)
	}
	if err := f.AddRuleConditional(nr, libseccomp.ActAllow, conds); err != nil {
		return fmt.Errorf("egress broker: seccomp: %s: %w", name, err)
	}
	return nil
}
