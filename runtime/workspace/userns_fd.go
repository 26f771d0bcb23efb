package workspace

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// usernsWith is a handle on a new user namespace with the given id maps,
// for mount_setattr's MOUNT_ATTR_IDMAP, as runc and containerd make one: a
// child is cloned into the namespace, the maps written, and the child
// stopped by PTRACE_TRACEME at its execve, so the program named never
// runs. The namespace outlives the child through the open handle.
//
// The id mapping is done here rather than through containerd's core/mount:
// that package's imports (containerd's API types, protobuf descriptors,
// OCI image digests) cost their package initialisation in every bulkhead
// process, about 0.4 ms of CPU each, for a mount only workspaces make.
func usernsWith(uids, gids []syscall.SysProcIDMap) (*os.File, error) {
	var pidfd int = -1
	proc, err := os.StartProcess("/proc/self/exe", []string{"bulkhead [id map]"}, &os.ProcAttr{
		Sys: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER,
			UidMappings: uids,
			GidMappings: gids,
			Ptrace:      true,
			Pdeathsig:   syscall.SIGKILL,
			PidFD:       &pidfd,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("clone into a user namespace: %w", err)
	}
	defer func() {
		// By its pidfd: the pid is not reused before the child is reaped.
		if pidfd >= 0 {
			_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
			unix.Close(pidfd)
		} else {
			_ = proc.Kill()
		}
		_, _ = proc.Wait()
	}()
	if pidfd < 0 {
		return nil, fmt.Errorf("clone into a user namespace: no pidfd for the child (Linux 5.3+)")
	}
	// The child is stopped and cannot exit before it is killed, so its
	// pid names it until then.
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", proc.Pid))
	if err != nil {
		return nil, fmt.Errorf("user namespace of the child: %w", err)
	}
	return f, nil
}
