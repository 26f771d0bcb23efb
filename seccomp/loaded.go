package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LoadedFilters returns the seccomp filters the kernel holds for the task
// pid, oldest first (index 0 of PTRACE_SECCOMP_GET_FILTER is the first
// installed: the kernel's get_nth_filter counts back from the newest). This is what the
// kernel enforces, not what anyone asked for. It needs CAP_SYS_ADMIN and
// CAP_SYS_PTRACE in the initial user namespace (root on the host). The
// task is stopped only for the read (PTRACE_SEIZE, PTRACE_INTERRUPT) and
// resumes on detach; a signal that arrived meanwhile is passed on.
func LoadedFilters(pid int) ([][]unix.SockFilter, error) {
	// ptrace requests are valid only from the thread that attached.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceSeize(pid); err != nil {
		return nil, fmt.Errorf("seccomp: attach to %d to read its filter: %w", pid, err)
	}
	sig := 0
	defer func() {
		_, _, _ = unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(pid), 0, uintptr(sig), 0, 0)
	}()
	if err := unix.PtraceInterrupt(pid); err != nil {
		return nil, fmt.Errorf("seccomp: stop %d: %w", pid, err)
	}
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("seccomp: wait for %d to stop: %w", pid, err)
		}
		break
	}
	if !ws.Stopped() {
		return nil, fmt.Errorf("seccomp: %d ended before its filter could be read (status %#x)", pid, uint32(ws))
	}
	// A signal-delivery stop holds a signal the task must still get; the
	// interrupt's own stop (and a group stop) is PTRACE_EVENT_STOP, which
	// holds none.
	if uint32(ws)>>16 != unix.PTRACE_EVENT_STOP {
		sig = int(ws.StopSignal())
	}
	var filters [][]unix.SockFilter
	for i := 0; ; i++ {
		n, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SECCOMP_GET_FILTER, uintptr(pid), uintptr(i), 0, 0, 0)
		if errno == unix.ENOENT {
			return filters, nil
		}
		if errno == unix.EINVAL && i == 0 {
			// Not in filter mode: no filter at all.
			return nil, nil
		}
		if errno != 0 {
			return nil, fmt.Errorf("seccomp: PTRACE_SECCOMP_GET_FILTER %d of %d: %w", i, pid, errno)
		}
		if n == 0 || n > bpfMaxInsns {
			return nil, fmt.Errorf("seccomp: filter %d of %d has %d instructions", i, pid, n)
		}
		prog := make([]unix.SockFilter, n)
		m, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SECCOMP_GET_FILTER, uintptr(pid), uintptr(i), uintptr(unsafe.Pointer(&prog[0])), 0, 0)
		runtime.KeepAlive(prog)
		if errno != 0 {
			return nil, fmt.Errorf("seccomp: PTRACE_SECCOMP_GET_FILTER %d of %d: %w", i, pid, errno)
		}
		if m != n {
			return nil, fmt.Errorf("seccomp: filter %d of %d changed length while read (%d, then %d)", i, pid, n, m)
		}
		filters = append(filters, prog)
	}
}
