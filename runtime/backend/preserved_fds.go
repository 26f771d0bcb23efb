package backend

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// PreservedFiles are the n descriptors from 3 on that --preserve-fds hands
// to the container, as runc numbers them. Only descriptors the caller
// handed bulkhead may go: by then bulkhead (and the Go runtime) has its own
// open at the lowest free numbers (the --log file, the host-wide cgroup
// lock on /sys/fs/cgroup, the runtime's cgroup files), and one of those
// in the container is a way out of it (a directory of the host's is its
// whole tree through ".."). What bulkhead opened carries FD_CLOEXEC, as
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
