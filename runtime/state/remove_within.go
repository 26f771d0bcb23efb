package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// errMountBelow is a mount met below a tree being removed: it is EBUSY,
// which RemoveTree answers by unmounting again.
var errMountBelow = fmt.Errorf("a mount is below it: %w", unix.EBUSY)

// removeWithin removes dir and everything below it on dir's own mount,
// and stops at the first entry on another (errMountBelow), never emptying
// it: a container's state directory holds binds of host trees (its pins,
// a workspace's source read-write among them), and a mount that arrives
// below it after the unmount must stop the removal, as os.RemoveAll,
// which descends into mount points, does not.
func removeWithin(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return os.Remove(dir) // a file or a link: nothing below it
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	mnt, err := mountIDOf(fd, dir)
	if err == nil {
		err = sameMountAsParent(dir, mnt)
	}
	if err == nil {
		err = removeChildren(fd, dir, mnt)
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// removeChildren empties the directory open at fd (named path), all of
// whose entries must be on mount mnt.
func removeChildren(fd int, path string, mnt uint64) error {
	names, err := dirNames(fd)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for _, name := range names {
		child := filepath.Join(path, name)
		var st unix.Statx_t
		if err := unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_MNT_ID, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("stat %s: %w", child, err)
		}
		if st.Mnt_id != mnt {
			return fmt.Errorf("%s: %w", child, errMountBelow)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("remove %s: %w", child, err)
			}
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", child, err)
		}
		// Judged again as opened: a mount may have arrived on it since.
		cmnt, err := mountIDOf(cfd, child)
		if err == nil && cmnt != mnt {
			err = fmt.Errorf("%s: %w", child, errMountBelow)
		}
		if err == nil {
			err = removeChildren(cfd, child, mnt)
		}
		unix.Close(cfd)
		if err != nil {
			return err
		}
		if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove %s: %w", child, err)
		}
	}
	return nil
}

// mountIDOf is the id of the mount the file open at fd is on.
func mountIDOf(fd int, path string) (uint64, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return 0, fmt.Errorf("stat %s: the kernel gives no mount id", path)
	}
	return st.Mnt_id, nil
}

// sameMountAsParent refuses a dir on a mount of its own (mnt): one that
// arrived at it after the unmount.
func sameMountAsParent(dir string, mnt uint64) error {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, filepath.Dir(dir), 0, unix.STATX_MNT_ID, &st); err != nil {
		return fmt.Errorf("stat %s: %w", filepath.Dir(dir), err)
	}
	if st.Mnt_id != mnt {
		return fmt.Errorf("%s: %w", dir, errMountBelow)
	}
	return nil
}

// dirNames lists the directory open at fd, leaving fd as it was.
func dirNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	return f.Readdirnames(-1)
}
