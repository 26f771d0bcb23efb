package egresshost

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/moby/sys/capability"
	"golang.org/x/sys/unix"
)

// ExecUnprivileged replaces the calling process with argv running as
// uid:gid, with no supplementary groups, every capability set empty
// (bounding and ambient too) and no_new_privs, keeping the descriptors
// keep open across the exec. It returns only on failure.
//
// The broker needs root for one thing, entering the container's network
// namespace to listen there; everything after that parses the job's
// requests. Credentials and capabilities belong to a thread, and the Go
// runtime has many: one locked thread drops everything and then calls
// execve, which ends every other thread, so the new program starts with
// that thread's credentials only and no thread that kept root.
func ExecUnprivileged(uid, gid int, argv, env []string, keep []int) error {
	if uid <= 0 || gid <= 0 {
		return fmt.Errorf("egress broker: uid %d gid %d: want an unprivileged user", uid, gid)
	}
	for _, fd := range keep {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return fmt.Errorf("egress broker: keep descriptor %d: %w", fd, err)
		}
	}
	// Never unlocked: a thread that dropped root is not handed back to
	// other goroutines should execve fail; it ends with this goroutine.
	runtime.LockOSThread()
	if err := dropPrivileges(uid, gid); err != nil {
		return err
	}
	if err := unix.Exec(argv[0], argv, env); err != nil {
		return fmt.Errorf("egress broker: execve %s: %w", argv[0], err)
	}
	return errors.New("egress broker: execve returned")
}

// dropPrivileges works on the calling thread only, in the order the kernel
// allows: no_new_privs and the bounding and ambient sets while
// CAP_SETPCAP is there, then groups and ids while CAP_SETGID and
// CAP_SETUID are, then the remaining sets.
func dropPrivileges(uid, gid int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("egress broker: no_new_privs: %w", err)
	}
	caps, err := capability.NewPid2(0)
	if err != nil {
		return fmt.Errorf("egress broker: capabilities: %w", err)
	}
	caps.Clear(capability.CAPS | capability.BOUNDS | capability.AMBS)
	if err := caps.Apply(capability.BOUNDS | capability.AMBS); err != nil {
		return fmt.Errorf("egress broker: drop bounding and ambient capabilities: %w", err)
	}
	// Raw system calls: the libc and Go wrappers change every thread,
	// and only this one goes on.
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("egress broker: setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
		return fmt.Errorf("egress broker: setresgid %d: %w", gid, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
		return fmt.Errorf("egress broker: setresuid %d: %w", uid, e)
	}
	// setresuid away from root emptied the permitted and effective sets;
	// the inheritable one is cleared here.
	if err := caps.Apply(capability.CAPS); err != nil {
		return fmt.Errorf("egress broker: clear capabilities: %w", err)
	}
	return nil
}
