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
// (poll on arm64) are skipped. clone, socket, setsockopt and prlimit64
// are allowed with conditions only (InstallFilter).
var brokerSyscalls = []string{
	// memory and threads
	"brk", "mmap", "munmap", "mprotect", "madvise", "mremap", "mincore", "membarrier",
	"futex", "set_robust_list", "rseq", "sched_yield", "sched_getaffinity",
	"gettid", "getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "exit", "exit_group",
	"getrlimit", "uname", "getrandom", "restart_syscall",
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
	"getsockopt", "getsockname", "getpeername",
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

// brokerSockets are what the broker opens: TCP and UDP (dials, DNS), unix
// (a resolver's) and netlink's routing family (the host's own addresses),
// as family, type (SOCK_NONBLOCK and SOCK_CLOEXEC aside; -1 any) and
// protocol (-1 any). Not AF_ALG, AF_PACKET, AF_VSOCK, netlink's other
// families, raw sockets or another protocol of inet's (MPTCP, SCTP,
// UDP-Lite, L2TP), each more kernel code a taken-over broker could reach,
// and some loaded as modules on first use.
var brokerSockets = []struct{ family, kind, protocol int }{
	{unix.AF_INET, unix.SOCK_STREAM, 0}, {unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP},
	{unix.AF_INET, unix.SOCK_DGRAM, 0}, {unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP},
	{unix.AF_INET6, unix.SOCK_STREAM, 0}, {unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP},
	{unix.AF_INET6, unix.SOCK_DGRAM, 0}, {unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP},
	{unix.AF_UNIX, -1, -1}, {unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
}

// sockTypeMask is the type argument less its flags (the kernel's
// SOCK_TYPE_MASK).
const sockTypeMask = 0xf

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
	for _, so := range brokerSockets {
		family, err := libseccomp.MakeCondition(0, libseccomp.CompareEqual, uint64(so.family))
		if err != nil {
			return err
		}
		conds := []libseccomp.ScmpCondition{family}
		if so.kind >= 0 {
			kind, err := libseccomp.MakeCondition(1, libseccomp.CompareMaskedEqual, sockTypeMask, uint64(so.kind))
			if err != nil {
				return err
			}
			conds = append(conds, kind)
		}
		if so.protocol >= 0 {
			protocol, err := libseccomp.MakeCondition(2, libseccomp.CompareEqual, uint64(so.protocol))
			if err != nil {
				return err
			}
			conds = append(conds, protocol)
		}
		if err := addConditional(f, "socket", conds...); err != nil {
			return err
		}
	}
	// setsockopt on the levels the broker's sockets use, and of TCP's
	// options those Go's net package sets: not TCP_ULP, which attaches
	// an upper-layer protocol (kTLS), nor UDP's encapsulations. Only
	// equality is compared: the kernel reads these int arguments' low 32
	// bits, so a "not equal" would pass a level or option with high bits
	// set that the kernel then takes for the one refused.
	for _, level := range []int{unix.SOL_SOCKET, unix.IPPROTO_IP, unix.IPPROTO_IPV6} {
		c, err := libseccomp.MakeCondition(1, libseccomp.CompareEqual, uint64(level))
		if err != nil {
			return err
		}
		if err := addConditional(f, "setsockopt", c); err != nil {
			return err
		}
	}
	tcp, err := libseccomp.MakeCondition(1, libseccomp.CompareEqual, unix.IPPROTO_TCP)
	if err != nil {
		return err
	}
	for _, opt := range []int{unix.TCP_NODELAY, unix.TCP_KEEPIDLE, unix.TCP_KEEPINTVL, unix.TCP_KEEPCNT, unix.TCP_USER_TIMEOUT} {
		c, err := libseccomp.MakeCondition(2, libseccomp.CompareEqual, uint64(opt))
		if err != nil {
			return err
		}
		if err := addConditional(f, "setsockopt", tcp, c); err != nil {
			return err
		}
	}
	// Limits of itself only: every broker runs as egress_broker_user, and
	// another one's RLIMIT_NOFILE set to 0 left it spinning on EMFILE
	// with its container's egress gone.
	for _, pid := range []int{0, os.Getpid()} {
		c, err := libseccomp.MakeCondition(0, libseccomp.CompareEqual, uint64(pid))
		if err != nil {
			return err
		}
		if err := addConditional(f, "prlimit64", c); err != nil {
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
