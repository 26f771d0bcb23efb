package runtime

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/specs"
)

// cgroupLockFile holds the locks of the cgroup paths creates are
// claiming: one file for every bulkhead on the host whatever its --root,
// in a directory only root may write, kept as iptables keeps
// /run/xtables.lock, and only root may read (its key).
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
	if l == nil || l.CgroupsPath == "" || l.CgroupsPath == c.handed.Annotations[annotationCgroupsPath] {
		return func() {}, nil
	}
	// Audit hands the path over unjudged, but the group made there is
	// still a container's, which no enforced container's may lie below
	// once it has stopped, and the groups made above it are made for it.
	enforce := c.sel.Profile.Mode == specs.Enforce
	// group is the cgroupfs path the backend makes: under the systemd
	// driver the scope's, which the driver joins if it exists.
	group, scope := l.CgroupsPath, ""
	if c.g.SystemdCgroup && enforce {
		sp, err := specs.SystemdScopePath(group)
		if err != nil {
			return nil, fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s: %w", group, err)
		}
		group, scope = sp, " (the systemd scope "+sp+")"
	} else if c.g.SystemdCgroup || group[0] != '/' {
		return func() {}, nil
	}
	f, err := lockCgroupPath(group)
	if err != nil {
		return nil, fmt.Errorf("rule cgroups_path: lock %s: %w", group, err)
	}
	release := func() { f.Close() }
	if enforce {
		err = c.recheckCgroup(group, scope)
	}
	var above []groupDirs
	if err == nil && !c.g.SystemdCgroup {
		if above, err = groupsAbove(group, enforce); errors.Is(err, errBelowContainer) {
			err = fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s: %w", l.CgroupsPath, err)
		} else if err != nil {
			err = fmt.Errorf("rule cgroups_path: %s: %w", group, err)
		}
	}
	if err != nil {
		release()
		return nil, err
	}
	if c.g.SystemdCgroup {
		return release, nil
	}
	return func() {
		c.rec.CgroupParents = markCreated(group, above)
		release()
	}, nil
}

// recheckCgroup judges again, under the lock, what the rule judged of the
// caller's group: that it is new, and below no group holding another
// container's processes.
func (c *creation) recheckCgroup(group, scope string) error {
	p := c.handed.Linux.CgroupsPath
	if taken, err := cgroups.Taken(group); err != nil {
		return fmt.Errorf("rule cgroups_path: %s: %w", group, err)
	} else if taken {
		return fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s%s: another container's create made it meanwhile", p, scope)
	}
	if shared, err := specs.CgroupSharedAncestor(c.ctx, group); err != nil {
		return fmt.Errorf("rule cgroups_path: %s: %w", group, err)
	} else if shared != "" {
		return fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s: it %s", p, specs.SharedAncestorWhy(shared))
	}
	return nil
}

// lockCgroupPath takes, in cgroupLockFile, an exclusive lock on group and
// shared ones on each group above it, and returns the file whose closing
// releases them. Each path is a byte of the file, chosen by a keyed hash
// (cgroupLockByte) so that no caller can name a group whose byte is
// another's, a shared parent's above all, and hold up every create below
// it for as long as its own backend create takes. The bytes are locked as
// an open file description's (F_OFD_SETLKW), and every create takes its
// bytes in ascending order, so no two creates wait for each other in a
// cycle.
func lockCgroupPath(group string) (*os.File, error) {
	return lockCgroupPathFor(group, true)
}

// cgroupHeldByDeleteWait bounds how long lockCgroupPathFor, when it does
// not wait, tries again while a group's lock is held exclusively.
const cgroupHeldByDeleteWait = 5 * time.Second

// errCgroupBusy is lockCgroupPathFor's answer, when it does not wait, for
// a group whose lock another bulkhead holds.
var errCgroupBusy = errors.New("locked by another create or delete")

// lockCgroupPathFor is lockCgroupPath; unless waitOwn, the group's own
// byte is only tried, and errCgroupBusy returned when a create below holds
// it, or it stays held exclusively for cgroupHeldByDeleteWait.
func lockCgroupPathFor(group string, waitOwn bool) (*os.File, error) {
	f, key, err := openCgroupLock()
	if err != nil {
		return nil, err
	}
	own := cgroupLockByte(key, group)
	bytes := []int64{own}
	for a := path.Dir(group); a != "/" && a != "."; a = path.Dir(a) {
		bytes = append(bytes, cgroupLockByte(key, a))
	}
	slices.Sort(bytes)
	for _, b := range slices.Compact(bytes) {
		lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: b, Len: 1}
		cmd := unix.F_OFD_SETLKW
		if b == own {
			lk.Type = unix.F_WRLCK
			if !waitOwn {
				cmd = unix.F_OFD_SETLK
			}
		}
		var deadline time.Time
		if cmd == unix.F_OFD_SETLK {
			deadline = time.Now().Add(cgroupHeldByDeleteWait)
		}
		for {
			err = unix.FcntlFlock(f.Fd(), cmd, &lk)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if cmd == unix.F_OFD_SETLK && (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES)) {
				// Held exclusively, by another delete (or the create of
				// that very group): it is soon let go, and that delete
				// may have found this container's group still there.
				// Held shared, by a create below: the group is in use.
				held := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: b, Len: 1}
				if unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &held) == nil && held.Type == unix.F_WRLCK && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				f.Close()
				return nil, errCgroupBusy
			}
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", cgroupLockFile, err)
		}
	}
	return f, nil
}

// cgroupLockKeySize is the bytes of the key at the start of
// cgroupLockFile.
const cgroupLockKeySize = 32

// openCgroupLock opens cgroupLockFile, root's alone, and reads its key;
// the first bulkhead on the host writes one, under a flock (which does
// not meet the byte locks) so that all read the same.
func openCgroupLock() (*os.File, []byte, error) {
	f, err := os.OpenFile(cgroupLockFile, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, nil, err
	}
	key, err := cgroupLockKey(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", cgroupLockFile, err)
	}
	return f, key, nil
}

func cgroupLockKey(f *os.File) ([]byte, error) {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return nil, err
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 || st.Mode&0o077 != 0 {
		return nil, errors.New("not a file of root's that only root may read")
	}
	key := make([]byte, cgroupLockKeySize)
	if st.Size < cgroupLockKeySize {
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if _, err := f.WriteAt(key, 0); err != nil {
			return nil, err
		}
		return key, nil
	}
	if _, err := f.ReadAt(key, 0); err != nil {
		return nil, err
	}
	return key, nil
}

// cgroupLockByte is the byte of cgroupLockFile that stands for a cgroup
// path: past the key, at an offset of 62 bits of its HMAC under the key.
func cgroupLockByte(key []byte, p string) int64 {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(p))
	return cgroupLockKeySize + int64(binary.BigEndian.Uint64(m.Sum(nil))>>2)
}
