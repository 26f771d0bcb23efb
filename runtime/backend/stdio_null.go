package backend

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// runsc, unlike runc, makes no exception for /dev/null: create, run and
// exec chown every stdio descriptor they are handed to the sandbox's host
// user (nobody), so `bulkhead run ... </dev/null` on runsc left the host's
// /dev/null to uid 65534, which could then chmod it for the whole host. So
// before runsc gets bulkhead's stdio, each descriptor that is the host's
// null device is replaced by one of a null device node of bulkhead's own,
// made in a root-only directory of /dev and unlinked at once: runsc may
// chown that inode, which no path reaches.

// privateNullDir holds the nodes for the moment between mknod and unlink.
const privateNullDir = "/dev/.bulkhead"

// ShieldNullStdio replaces each of this process's stdio descriptors that
// is the null device with a private null device of the same access mode.
func ShieldNullStdio() error {
	for fd := 0; fd < len(streamNames); fd++ {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("%s (descriptor %d): fstat: %w", streamNames[fd], fd, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
			continue
		}
		if err := replaceWithPrivateNull(fd); err != nil {
			return fmt.Errorf("%s (descriptor %d) is /dev/null, which runsc would give to the sandbox's user: "+
				"a private null device in its place: %w; hand a pipe instead", streamNames[fd], fd, err)
		}
	}
	return nil
}

func replaceWithPrivateNull(fd int) error {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if err := os.Mkdir(privateNullDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	var dir unix.Stat_t
	if err := unix.Lstat(privateNullDir, &dir); err != nil {
		return err
	}
	if dir.Mode&unix.S_IFMT != unix.S_IFDIR || dir.Uid != 0 || dir.Mode&0o077 != 0 {
		return fmt.Errorf("%s is not a directory of root's alone", privateNullDir)
	}
	node := filepath.Join(privateNullDir, "null-"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(fd))
	if err := unix.Mknod(node, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		return err
	}
	nfd, err := unix.Open(node, flags&unix.O_ACCMODE|unix.O_CLOEXEC, 0)
	_ = unix.Unlink(node)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	return unix.Dup3(nfd, fd, 0)
}
