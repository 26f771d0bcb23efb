package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	ocgroups "github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// Remove deletes a container's cgroup if the backend left it
// behind (runsc does after a failed create, and a later container reusing
// the path would inherit its limits). A missing cgroup is not an error.
// Every caller has ended the container first, but its processes may still
// be exiting (a loaded host has been seen to take longer than runc's own
// 150 ms of retries), so a group that still holds them is tried again
// until removeWait has passed. On a hybrid host the group's directory in
// the v2 tree (runc makes one there too) goes with the v1 groups.
func Remove(path string) error {
	// Only a cgroupfs path is bulkhead's to remove; a systemd slice:prefix:name
	// belongs to systemd.
	if path == "" || path[0] != '/' {
		return nil
	}
	// Usually the backend removed it: a few stats answer that, where
	// loading the group through the library reads the mount table.
	if !Exists(path) {
		return nil
	}
	return retryRemoval(func() error { return removeOnce(path) })
}

// retryRemoval calls remove until it succeeds or removeWait has passed.
func retryRemoval(remove func() error) error {
	deadline := time.Now().Add(removeWait)
	for {
		err := remove()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeWait bounds the wait for an ended container's processes to leave
// its cgroup.
const removeWait = 5 * time.Second

func removeOnce(path string) error {
	var err error
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		var m *cgroup2.Manager
		if m, err = cgroup2.Load(path); err == nil {
			err = m.Delete()
		}
	} else {
		var c cgroup1.Cgroup
		if c, err = loadV1(cgroup1.StaticPath(path)); err == nil {
			err = c.Delete()
		}
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, cgroup1.ErrCgroupDeleted) {
			err = nil
		}
		if err == nil && cgroupsv3.Mode() == cgroupsv3.Hybrid {
			// cgroup1 knows only the controllers' hierarchies. runc makes
			// the group in the v2 tree too, runsc does not: what is there
			// may be another's (an administrator's group made there while
			// the container ran), so only an empty directory goes, never
			// the groups below it, and one that holds some is left to
			// whoever made them.
			_, err = RemoveEmptyDir(filepath.Join(hybridV2Mountpoint, path))
		}
	}
	if err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return nil
	}
	return fmt.Errorf("cgroup %s: %w", path, err)
}

// hybridV2Mountpoint is where a hybrid host mounts its v2 tree.
const hybridV2Mountpoint = "/sys/fs/cgroup/unified"

// RemovePaths removes the groups of a container, one directory per
// hierarchy as runc records them, waiting as Remove does for processes
// still exiting: runc's own retries (about a second) have been seen to
// end before a loaded host let the last of them go.
func RemovePaths(paths map[string]string) error {
	return retryRemoval(func() error { return ocgroups.RemovePaths(paths) })
}

// RemoveEmptyDir removes one directory of a group (one of GroupDirs') if
// nothing is in it: the kernel removes a group's directory only when it
// holds no process and no group below it, so one in use stays (removed is
// false then). Unlike Remove it never removes the groups below, which may
// be other containers'. A directory that is gone counts as removed.
func RemoveEmptyDir(dir string) (removed bool, err error) {
	if !strings.HasPrefix(dir, defaultV1Root+"/") {
		return false, fmt.Errorf("%s is not a cgroup directory", dir)
	}
	switch err := unix.Rmdir(dir); {
	case err == nil, errors.Is(err, unix.ENOENT):
		return true, nil
	case errors.Is(err, unix.EBUSY), errors.Is(err, unix.ENOTEMPTY):
		return false, nil
	default:
		return false, fmt.Errorf("cgroup %s: %w", dir, err)
	}
}
