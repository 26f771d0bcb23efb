package main

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// install sets no_new_privs, which an unprivileged process needs to
// install a filter and which the profile demands anyway, then installs
// filter on every thread of the process (TSYNC: no thread of the Go
// runtime is left unfiltered, should execve ever run on another).
func install(filter []unix.SockFilter) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER) of %d instructions: %w; the command was not run", len(filter), errno)
	}
	return nil
}

// execve replaces the program with the command; it returns only on
// failure, which the filter itself may cause (a profile that denies
// execve), and the command has then not run.
func execve(path string, args, env []string) error {
	if err := unix.Exec(path, args, env); err != nil {
		return fmt.Errorf("execve %s: %w", path, err)
	}
	return nil
}
