package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// The seccomp control reports as ONE line (control "seccomp") whose
// "syscalls" array holds a row per probed syscall. One line keeps the
// host's table at one row per control; the rows are there for whoever
// needs to see which call misbehaved. In text format they are printed
// indented under the control.
//
// Each probe calls the raw syscall (golang.org/x/sys/unix SYS_* numbers,
// which are per-architecture, so amd64 and arm64 share this table) with
// arguments chosen so that a kernel that let the call through would
// refuse it as invalid before doing anything: bad fds, NULL pointers,
// paths that do not exist, flag combinations the kernel rejects. Seccomp
// runs before the syscall body, so under the profile the answer is EPERM
// (or ENOSYS for clone3); without it the answer is the "Kernel" column.
//
// Kernel is what this kernel (6.x) answers an unprivileged caller (uid
// 65534, no capabilities, no seccomp) — measured with the probe in a runc
// container without a seccomp profile. Where Kernel is itself EPERM the
// syscall checks a capability before its arguments, so an EPERM there
// cannot be pinned on seccomp: its layer reads "seccomp or capabilities".
// Both layers deny; principle 4 just asks us to say which we can prove.
//
// ENOSYS for a deny row fails on purpose: runc answers ENOSYS for
// syscalls newer than the newest one a profile names (seen with a small
// allowlist: mount_setattr), and the policy promises EPERM.

type expect int

const (
	deny   expect = iota // seccomp must answer EPERM
	enosys               // seccomp must answer ENOSYS (glibc then falls back from clone3 to clone)
	allow                // must get past seccomp: the kernel's own answer (Want)
)

// arg is one syscall argument: an int (negative values become the
// two's-complement word, like -1 for a bad fd) or a string (passed as a
// pointer to a NUL-terminated copy).
type arg any

// sysProbe is one row of the try-syscall table.
type sysProbe struct {
	Name   string
	Nr     uintptr
	Args   []arg
	Expect expect
	// Want is the errno that passes for allow rows (0: the call must
	// succeed; a returned fd is closed).
	Want unix.Errno
	// Kernel is the unfiltered, unprivileged answer (see above).
	Kernel unix.Errno
	Why    string
}

const (
	cloneNewNS   = unix.CLONE_NEWNS
	cloneNewUser = unix.CLONE_NEWUSER
	cloneFS      = unix.CLONE_FS
	afALG        = 38 // unix.AF_ALG
	afVSOCK      = 40 // unix.AF_VSOCK
	badPath      = "/nonexistent/bulkhead-probe"
)

// seccompTable lists every syscall the seccomp control tries, in order.
var seccompTable = []sysProbe{
	// Denied by the profile: EPERM expected.
	{"ptrace", unix.SYS_PTRACE, []arg{-1, -1, 0, 0}, deny, 0, unix.ESRCH, "invalid request on pid -1"},
	{"process_vm_readv", unix.SYS_PROCESS_VM_READV, []arg{0, 0, 0, 0, 0, 1}, deny, 0, unix.EINVAL, "flags must be 0"},
	{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, []arg{0, 0, 0, 0, 0, 1}, deny, 0, unix.EINVAL, "flags must be 0"},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP, []arg{0, 0}, deny, 0, unix.EFAULT, "NULL params"},
	{"io_uring_enter", unix.SYS_IO_URING_ENTER, []arg{-1, 0, 0, 0, 0, 0}, deny, 0, unix.EBADF, "fd -1"},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER, []arg{-1, 0, 0, 0}, deny, 0, unix.EINVAL, "fd -1 (6.x rejects the NULL argument first)"},
	{"userfaultfd", unix.SYS_USERFAULTFD, []arg{1 | 1<<30}, deny, 0, unix.EINVAL, "UFFD_USER_MODE_ONLY (so the sysctl allows it) plus an unknown flag"},
	{"keyctl", unix.SYS_KEYCTL, []arg{-1, 0, 0, 0, 0}, deny, 0, unix.EOPNOTSUPP, "unknown operation"},
	{"add_key", unix.SYS_ADD_KEY, []arg{0, 0, 0, 0, 0}, deny, 0, unix.EFAULT, "NULL type"},
	{"request_key", unix.SYS_REQUEST_KEY, []arg{0, 0, 0, 0}, deny, 0, unix.EFAULT, "NULL type"},
	{"bpf", unix.SYS_BPF, []arg{-1, 0, 0}, deny, 0, unix.EINVAL, "unknown command (kernels before 6.4 answer EPERM first when unprivileged_bpf_disabled)"},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, []arg{0, 0, -1, -1, 0}, deny, 0, unix.EFAULT, "NULL attr"},
	{"unshare", unix.SYS_UNSHARE, []arg{cloneNewUser | unix.CLONE_PARENT}, deny, 0, unix.EINVAL, "CLONE_NEWUSER with CLONE_PARENT, a flag unshare rejects"},
	{"setns", unix.SYS_SETNS, []arg{-1, 0}, deny, 0, unix.EBADF, "fd -1"},
	{"mount", unix.SYS_MOUNT, []arg{0, badPath, "bulkhead-invalid", 0, 0}, deny, 0, unix.ENOENT, "target does not exist (looked up before the capability check)"},
	{"umount2", unix.SYS_UMOUNT2, []arg{badPath, 1 << 16}, deny, 0, unix.EINVAL, "unknown flag"},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR, []arg{-1, 0, -1, 0, 0}, deny, 0, unix.EINVAL, "unknown flags"},
	{"move_mount", unix.SYS_MOVE_MOUNT, []arg{-1, 0, -1, 0, -1}, deny, 0, unix.EPERM, "unknown flags; checks may_mount first"},
	{"open_tree", unix.SYS_OPEN_TREE, []arg{-1, 0, -1}, deny, 0, unix.EINVAL, "unknown flags"},
	{"fsopen", unix.SYS_FSOPEN, []arg{0, -1}, deny, 0, unix.EPERM, "NULL name, unknown flags; checks CAP_SYS_ADMIN first"},
	{"fsconfig", unix.SYS_FSCONFIG, []arg{-1, -1, 0, 0, 0}, deny, 0, unix.EINVAL, "fd -1, unknown command"},
	{"fsmount", unix.SYS_FSMOUNT, []arg{-1, -1, 0}, deny, 0, unix.EPERM, "fd -1, unknown flags; checks may_mount first"},
	{"fspick", unix.SYS_FSPICK, []arg{-1, 0, -1}, deny, 0, unix.EPERM, "unknown flags; checks CAP_SYS_ADMIN first"},
	{"pivot_root", unix.SYS_PIVOT_ROOT, []arg{badPath, badPath}, deny, 0, unix.EPERM, "paths do not exist; checks may_mount first"},
	{"chroot", unix.SYS_CHROOT, []arg{badPath}, deny, 0, unix.ENOENT, "path does not exist (looked up before CAP_SYS_CHROOT)"},
	{"kexec_load", unix.SYS_KEXEC_LOAD, []arg{0, 0, 0, -1}, deny, 0, unix.EPERM, "NULL segments, unknown flags; checks CAP_SYS_BOOT first"},
	{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD, []arg{-1, -1, 0, 0, -1}, deny, 0, unix.EPERM, "fds -1, unknown flags; checks CAP_SYS_BOOT first"},
	{"init_module", unix.SYS_INIT_MODULE, []arg{0, 0, 0}, deny, 0, unix.EPERM, "NULL image; checks CAP_SYS_MODULE first"},
	{"finit_module", unix.SYS_FINIT_MODULE, []arg{-1, 0, -1}, deny, 0, unix.EPERM, "fd -1, unknown flags; checks CAP_SYS_MODULE first"},
	{"delete_module", unix.SYS_DELETE_MODULE, []arg{"bulkhead-no-such-module", 0}, deny, 0, unix.EPERM, "no such module; checks CAP_SYS_MODULE first"},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, []arg{-1, 0, 0}, deny, 0, unix.EFAULT, "fd -1, NULL handle (kernels before 6.10 check CAP_DAC_READ_SEARCH first: EPERM)"},
	{"acct", unix.SYS_ACCT, []arg{badPath}, deny, 0, unix.EPERM, "path does not exist; checks CAP_SYS_PACCT first"},
	{"swapon", unix.SYS_SWAPON, []arg{badPath, 0}, deny, 0, unix.EPERM, "path does not exist; checks CAP_SYS_ADMIN first"},
	{"swapoff", unix.SYS_SWAPOFF, []arg{badPath}, deny, 0, unix.EPERM, "path does not exist; checks CAP_SYS_ADMIN first"},
	{"reboot", unix.SYS_REBOOT, []arg{0, 0, 0, 0}, deny, 0, unix.EPERM, "invalid magic (EINVAL with CAP_SYS_BOOT); checks CAP_SYS_BOOT first"},
	{"clone(NEWUSER|NEWNS)", unix.SYS_CLONE, []arg{cloneNewUser | cloneNewNS | cloneFS, 0, 0, 0, 0}, deny, 0, unix.EINVAL, "CLONE_NEWNS|CLONE_FS is rejected by copy_process before anything is created"},
	{"socket(AF_ALG)", unix.SYS_SOCKET, []arg{afALG, unix.SOCK_SEQPACKET, 0}, deny, 0, 0, "an fd (closed at once) or EAFNOSUPPORT"},
	{"socket(AF_VSOCK)", unix.SYS_SOCKET, []arg{afVSOCK, unix.SOCK_STREAM, 0}, deny, 0, 0, "an fd (closed at once) or EAFNOSUPPORT"},
	{"socket(AF_TIPC)", unix.SYS_SOCKET, []arg{unix.AF_TIPC, unix.SOCK_RDM, 0}, deny, 0, 0, "an fd (closed at once), or EAFNOSUPPORT where the kernel has no such module to load"},
	{"socket(NETLINK_ROUTE)", unix.SYS_SOCKET, []arg{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE}, deny, 0, 0, "an fd (closed at once) whose unread replies no memory cgroup is charged for"},
	{"socket(NETLINK_KOBJECT_UEVENT)", unix.SYS_SOCKET, []arg{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_KOBJECT_UEVENT}, deny, 0, 0, "an fd (closed at once) that reads the whole host's device events"},
	{"fcntl(F_SETLEASE)", unix.SYS_FCNTL, []arg{-1, unix.F_SETLEASE, unix.F_RDLCK}, deny, 0, unix.EBADF, "fd -1"},
	{"fcntl(F_SETDELEG)", unix.SYS_FCNTL, []arg{-1, 1040, 0}, deny, 0, unix.EBADF, "fd -1 (F_SETDELEG, Linux 6.19: a delegation holds writers as a lease does)"},
	// ENOSYS, not EPERM, so libc falls back to clone, whose flags seccomp
	// can inspect (clone3 passes them in memory it cannot read).
	{"clone3", unix.SYS_CLONE3, []arg{0, 0}, enosys, 0, unix.EINVAL, "NULL args, size 0"},
	// Allowed: the profile must not break ordinary programs.
	{"read", unix.SYS_READ, []arg{-1, 0, 0}, allow, unix.EBADF, unix.EBADF, "fd -1"},
	{"write", unix.SYS_WRITE, []arg{-1, 0, 0}, allow, unix.EBADF, unix.EBADF, "fd -1"},
	{"openat", unix.SYS_OPENAT, []arg{unix.AT_FDCWD, badPath, unix.O_RDONLY, 0}, allow, unix.ENOENT, unix.ENOENT, "path does not exist"},
	{"fcntl(F_GETFL)", unix.SYS_FCNTL, []arg{-1, unix.F_GETFL}, allow, unix.EBADF, unix.EBADF, "fd -1"},
	{"socket(AF_INET)", unix.SYS_SOCKET, []arg{unix.AF_INET, unix.SOCK_STREAM, 0}, allow, 0, 0, "succeeds; closed at once"},
	{"socket(AF_UNIX)", unix.SYS_SOCKET, []arg{unix.AF_UNIX, unix.SOCK_STREAM, 0}, allow, 0, 0, "succeeds; closed at once"},
}

// trySyscall makes the call and returns its errno (0 on success). A
// returned fd is closed. clone is the one call whose success would run Go
// code in a forked copy of the runtime: such a child exits at once.
func trySyscall(p sysProbe) unix.Errno {
	var words [6]uintptr
	var keep []*byte
	for i, a := range p.Args {
		switch v := a.(type) {
		case int:
			words[i] = uintptr(v)
		case string:
			b, err := unix.BytePtrFromString(v)
			if err != nil {
				return unix.EINVAL
			}
			keep = append(keep, b)
			words[i] = uintptr(unsafe.Pointer(b))
		default:
			panic(fmt.Sprintf("seccomp table %s: argument %d has type %T", p.Name, i, a))
		}
	}
	r1, _, e := unix.Syscall6(p.Nr, words[0], words[1], words[2], words[3], words[4], words[5])
	runtime.KeepAlive(keep)
	if e == 0 {
		if p.Nr == unix.SYS_CLONE && r1 == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		if p.Nr == unix.SYS_SOCKET || p.Nr == unix.SYS_OPENAT || p.Nr == unix.SYS_USERFAULTFD || p.Nr == unix.SYS_IO_URING_SETUP ||
			p.Nr == unix.SYS_FSOPEN || p.Nr == unix.SYS_FSPICK || p.Nr == unix.SYS_OPEN_TREE || p.Nr == unix.SYS_FSMOUNT ||
			p.Nr == unix.SYS_PERF_EVENT_OPEN || p.Nr == unix.SYS_BPF {
			unix.Close(int(r1))
		}
	}
	return e
}

// judge turns one call's errno into its row.
func judge(p sysProbe, e unix.Errno) SyscallResult {
	s := SyscallResult{Name: p.Name, Nr: int(p.Nr), Observed: errnoName(e)}
	switch p.Expect {
	case deny:
		s.Want = "EPERM"
		s.Pass = e == unix.EPERM
		switch {
		case !s.Pass:
			s.Layer = protocol.LayerNone
		case p.Kernel == unix.EPERM:
			s.Layer = protocol.LayerSeccompOrCaps
		default:
			s.Layer = protocol.LayerSeccomp
		}
	case enosys:
		s.Want = "ENOSYS"
		s.Pass = e == unix.ENOSYS
		if s.Pass {
			s.Layer = protocol.LayerSeccomp
		}
	case allow:
		s.Want = errnoName(p.Want)
		// Any answer but EPERM shows the call got past seccomp; the exact
		// errno is checked too so a broken call is noticed.
		s.Pass = e == p.Want
		if e == unix.EPERM {
			s.Layer = protocol.LayerSeccomp
		}
	}
	return s
}

// checkSeccomp: "Seccomp: 2" (filter mode) and every row of the table.
func checkSeccomp(env *probeEnv) Result {
	r := Result{Attempt: fmt.Sprintf("read Seccomp mode; try %d syscalls (%s)", len(seccompTable), runtime.GOARCH), Layer: protocol.LayerSeccomp}
	mode, ok := procStatus()["Seccomp"]
	if !ok {
		// gVisor's status has no Seccomp line. PR_GET_SECCOMP returns 2 in
		// filter mode (if the filter lets prctl through, which every
		// profile does).
		n, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
		if err != nil {
			mode = errName(err) + " (prctl)"
		} else {
			mode = strconv.Itoa(n) + " (prctl)"
		}
	}
	modeOK := strings.HasPrefix(mode, "2")
	var bad []string
	proven := 0
	for _, p := range seccompTable {
		s := judge(p, trySyscall(p))
		r.Syscalls = append(r.Syscalls, s)
		if !s.Pass {
			bad = append(bad, s.Name+"="+s.Observed)
		}
		if s.Pass && s.Layer == protocol.LayerSeccomp && p.Expect == deny {
			proven++
		}
	}
	r.Observed = "Seccomp: " + mode
	r.Pass = modeOK && len(bad) == 0
	r.Detail = fmt.Sprintf("%d/%d syscalls as expected; %d denials provably by seccomp (the rest are also refused by the capability check)",
		len(seccompTable)-len(bad), len(seccompTable), proven)
	if len(bad) > 0 {
		r.Detail += "; unexpected: " + strings.Join(bad, ", ")
	}
	if !modeOK {
		r.Detail += "; not in seccomp filter mode"
	}
	return r
}
