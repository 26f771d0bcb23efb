package runtime

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path"
	"slices"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/specs"
)

// cgroupLockFile holds the locks of the cgroup paths creates are
// claiming: one file for every bulkhead on the host whatever its --root,
// in a directory only root may write, kept as iptables keeps
// /run/xtables.lock.
const cgroupLockFile = "/run/bulkhead-cgroups.lock"

// claimCgroup locks the caller's cgroup and checks again that it is
// still new, so that the backend makes it before any other bulkhead can
// check the same path. Without it two creates naming the same new
// cgroupsPath at once both passed the cgroups_path rule and the second
// container joined the first one's group, its limits and its kill --all.
// The returned function releases the lock, once the backend's create has
// made the group. A group above it that another container's processes
// entered meanwhile is refused here too, as the rule would have: each
// group above is locked shared, so a create making one of them finishes
// first. Creates of different groups (dockerd's /docker/<id> side by
// side) go on in parallel.
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
	f, err := lockCgroupPath(group)
	if err != nil {
		return nil, fmt.Errorf("rule cgroups_path: lock %s: %w", group, err)
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

// lockCgroupPath takes, in cgroupLockFile, an exclusive lock on group and
// shared ones on each group above it, and returns the file whose closing
// releases them. Each path is a byte of the file (its hash: two paths on
// one byte only wait for each other), locked as an open file description
// (F_OFD_SETLKW), and every create takes its bytes in ascending order, so
// no two creates wait for each other in a cycle.
func lockCgroupPath(group string) (*os.File, error) {
	want := map[int64]bool{cgroupLockByte(group): true}
	for a := path.Dir(group); a != "/" && a != "."; a = path.Dir(a) {
		if b := cgroupLockByte(a); !want[b] {
			want[b] = false
		}
	}
	f, err := os.OpenFile(cgroupLockFile, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 || st.Mode&0o022 != 0 {
		f.Close()
		return nil, fmt.Errorf("%s is not a file of root's that only root may write", cgroupLockFile)
	}
	bytes := make([]int64, 0, len(want))
	for b := range want {
		bytes = append(bytes, b)
	}
	slices.Sort(bytes)
	for _, b := range bytes {
		lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: b, Len: 1}
		if want[b] {
			lk.Type = unix.F_WRLCK
		}
		for {
			err = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLKW, &lk)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", cgroupLockFile, err)
		}
	}
	return f, nil
}

// cgroupLockByte is the byte of cgroupLockFile that stands for a cgroup
// path.
func cgroupLockByte(p string) int64 {
	h := fnv.New64a()
	h.Write([]byte(p))
	return int64(h.Sum64() % (1 << 32))
}
