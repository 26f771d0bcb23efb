package runtime

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/specs"
)

// cgroupLockDir is locked (flock) while a create checks its cgroup and the
// backend makes it: the hierarchy's mountpoint, the one thing every
// bulkhead on the host shares whatever its --root, and nothing to leave
// behind.
const cgroupLockDir = "/sys/fs/cgroup"

// claimCgroup holds the host-wide cgroup lock and checks again that the
// caller's cgroup is still new, so that the backend makes it before
// any other bulkhead can check the same path. Without it two creates
// naming the same new cgroupsPath at once both passed the cgroups_path
// rule and the second container joined the first one's group, its limits
// and its kill --all. The returned function releases the lock, once the
// backend's create has made the group. A group above it that another
// container's processes entered meanwhile is refused here too, as the
// rule would have.
func (c *creation) claimCgroup() (func(), error) {
	l := c.handed.Linux
	// bulkhead's own path is unique per state root and id, and the
	// registry lets one create per id have it; a caller's path is anyone's.
	if c.sel.Profile.Mode != specs.Enforce || l == nil || l.CgroupsPath == "" ||
		l.CgroupsPath == c.handed.Annotations[annotationCgroupsPath] {
		return func() {}, nil
	}
	// group is the cgroupfs path the backend makes: under the systemd
	// driver the scope's, which the driver joins if it exists.
	group, scope := l.CgroupsPath, ""
	if c.g.SystemdCgroup {
		sp, err := specs.SystemdScopePath(group)
		if err != nil {
			return nil, fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s: %w", group, err)
		}
		group, scope = sp, " (the systemd scope "+sp+")"
	} else if group[0] != '/' {
		return func() {}, nil
	}
	f, err := os.Open(cgroupLockDir)
	if err != nil {
		return nil, fmt.Errorf("rule cgroups_path: lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("rule cgroups_path: lock %s: %w", cgroupLockDir, err)
	}
	release := func() { f.Close() }
	if taken, terr := cgroups.Taken(group); terr != nil {
		err = fmt.Errorf("rule cgroups_path: %s: %w", group, terr)
	} else if taken {
		err = fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s%s: another container's create made it meanwhile", l.CgroupsPath, scope)
	} else if shared, serr := specs.CgroupSharedAncestor(c.ctx, group); serr != nil {
		err = fmt.Errorf("rule cgroups_path: %s: %w", group, serr)
	} else if shared != "" {
		err = fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s: it %s", l.CgroupsPath, specs.SharedAncestorWhy(shared))
	}
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}
