package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// RemoveTree removes dir and everything below it after unmounting every
// mount there; it never walks through a mount (removeWithin), so nothing
// reachable through one (a workspace overlay's merged view, a pin's host
// tree) is touched, not even through one that arrives meanwhile.
func RemoveTree(dir string) error {
	deadline := time.Now().Add(removeBusyFor)
	for {
		if err := UnmountUnder(dir); err != nil {
			return err
		}
		err := removeWithin(dir)
		// EBUSY: a directory below is a mount point again, after every
		// mount below dir was unmounted and mountinfo showed none (seen
		// under load, on delete of a containerd task, at a pin); one that
		// arrived since is unmounted by the next pass.
		if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("remove %s: %w", dir, err)
			}
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// removeBusyFor bounds how long RemoveTree unmounts and removes again
// what a mount arriving below the tree kept busy.
const removeBusyFor = 5 * time.Second

// UnmountUnder unmounts every mount at or below dir, deepest first, and
// then checks that none is left.
//
// dir is looked up in /proc/self/mountinfo with its symlinks resolved:
// the kernel shows mount points only by their resolved path, so a root
// handed over as /var/run/... would otherwise match nothing and every
// mount would stay.
//
// A busy mount fails the call. It is never detached lazily (MNT_DETACH):
// that would take it out of mountinfo while the kernel kept it, and its
// tmpfs memory, alive for as long as its user lives, unseen by anyone.
func UnmountUnder(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // nothing can be mounted below a directory that is gone
	}
	if err == nil {
		// mountinfo names mount points absolutely: a relative dir would
		// match none, and RemoveTree would walk into every one.
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return fmt.Errorf("resolve %s: %w", dir, err)
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(real))
	if err != nil {
		return fmt.Errorf("mountinfo: %w", err)
	}
	sort.Slice(mounts, func(i, j int) bool {
		if len(mounts[i].Mountpoint) != len(mounts[j].Mountpoint) {
			return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint)
		}
		return mounts[i].ID > mounts[j].ID // stacked mounts: the newest first
	})
	var errs []error
	for _, m := range mounts {
		// EINVAL: no longer a mount point (an unmount that propagated
		// from a peer took it already).
		if err := unix.Unmount(m.Mountpoint, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m.Mountpoint, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(real))
	if err != nil {
		return fmt.Errorf("mountinfo: %w", err)
	}
	if len(left) > 0 {
		var points []string
		for _, m := range left {
			points = append(points, m.Mountpoint)
		}
		return fmt.Errorf("still mounted after unmount: %s", strings.Join(points, ", "))
	}
	return nil
}
