package backend

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// PreservedFiles are the n descriptors from 3 on that --preserve-fds hands
// to the container, as runc numbers them. Only descriptors the caller
// handed bulkhead may go: by then bulkhead (and the Go runtime) has its own
// open at the lowest free numbers (the --log file, the host-wide cgroup
// lock file, the runtime's cgroup files), and one of those in the
// container is a way out of it (a file of root's to write, a directory
// of the host's whose ".." is its whole tree). What bulkhead opened carries FD_CLOEXEC, as
// Go opens every file; what survived the exec into bulkhead cannot.
func PreservedFiles(n int) ([]*os.File, error) {
	if err := callersDescriptors(n); err != nil {
		return nil, err
	}
	files := make([]*os.File, 0, n)
	for fd := 3; fd < 3+n; fd++ {
		files = append(files, os.NewFile(uintptr(fd), "preserved"))
	}
	return files, nil
}

// callersDescriptors checks what PreservedFiles hands on without making
// files of the descriptors, whose finalizers would close them.
func callersDescriptors(n int) error {
	if n < 0 {
		return fmt.Errorf("--preserve-fds %d: not a number of descriptors", n)
	}
	for fd := 3; fd < 3+n; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			return fmt.Errorf("--preserve-fds %d: descriptor %d was not handed to bulkhead: %w", n, fd, err)
		}
		if flags&unix.FD_CLOEXEC != 0 {
			return fmt.Errorf("--preserve-fds %d: descriptor %d is bulkhead's own, not one its caller handed it; only the caller's may reach the container", n, fd)
		}
	}
	return nil
}

// KeepOthersFromBackends marks every descriptor from 3+n up close-on-exec:
// what the caller left open beyond the --preserve-fds it asked for stays
// with bulkhead and reaches no backend, nor the processes a backend keeps
// on the host (runsc's gofer, which serves the sandbox's files), where it
// would be a way out for whoever takes one over.
func KeepOthersFromBackends(n int) error {
	first := 3 + max(n, 0)
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return err
	}
	// A kernel before 5.11: one descriptor at a time.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
	return nil
}
