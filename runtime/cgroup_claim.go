package runtime

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
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
	var above []groupDirs
	if err == nil && !c.g.SystemdCgroup {
		if above, err = groupsAbove(group); err != nil {
			err = fmt.Errorf("rule cgroups_path: %s: %w", group, err)
		}
	}
	if err != nil {
		release()
		return nil, err
	}
	if len(above) == 0 {
		return release, nil
	}
	return func() {
		c.rec.CgroupParents = markMadeParents(above)
		release()
	}, nil
}

// cgroupParentsDir holds a marker for each group above a caller's
// cgroupsPath whose directories a backend's create made (runc and runsc
// make every missing group above the container's, in every hierarchy,
// and remove only the container's own): a delete removes those
// directories once empty, where one the administrator made, empty or
// not, stays. One directory for every bulkhead on the host, as
// cgroupLockFile. A marker holds each directory made with its identity
// (cgroups.GroupDirs), so that one of that path made since by anyone
// else, or in a hierarchy the backend left alone, is not taken for it.
const cgroupParentsDir = "/run/bulkhead-cgroup-parents"

// groupDirs is a group above a container's, with its directories as a
// create found them before its backend ran.
type groupDirs struct {
	path   string
	before map[string]string
}

// groupsAbove are the groups above group, deepest first, with the
// directories each has now.
func groupsAbove(group string) ([]groupDirs, error) {
	var out []groupDirs
	for a := path.Dir(group); a != "/" && a != "."; a = path.Dir(a) {
		dirs, err := cgroups.GroupDirs(a)
		if err != nil {
			return nil, err
		}
		out = append(out, groupDirs{path: a, before: dirs})
	}
	return out, nil
}

// markMadeParents marks, once the backend's create ran, the directories
// of the groups above the container's that it made, beside those an
// earlier create made that are still the same, and returns the groups
// (deepest first) that have any: a delete removes those directories. The
// caller still holds the groups' locks (lockCgroupPath), so no delete
// removes one meanwhile. A group it could not mark is left to its
// administrator.
func markMadeParents(above []groupDirs) []string {
	var parents []string
	for _, g := range above {
		made, err := madeDirs(g.path)
		if err == nil {
			var now map[string]string
			if now, err = cgroups.GroupDirs(g.path); err == nil {
				for d, id := range now {
					if _, had := g.before[d]; !had {
						made[d] = id
					}
				}
				err = writeMarker(g.path, made)
			}
		}
		if err != nil {
			logrus.Warnf("bulkhead: cgroup %s, made for a container, will not be removed with it: %v", g.path, err)
			continue
		}
		if len(made) > 0 {
			parents = append(parents, g.path)
		}
	}
	return parents
}

// madeDirs are the directories of group its marker names that are still
// the ones a create made (same path and identity).
func madeDirs(group string) (map[string]string, error) {
	made := map[string]string{}
	marker, err := parentMarker(group)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(marker)
	if errors.Is(err, os.ErrNotExist) {
		return made, nil
	}
	if err != nil {
		return nil, err
	}
	var listed map[string]string
	if json.Unmarshal(data, &listed) != nil {
		// A marker cut short: what it named is left.
		return made, nil
	}
	now, err := cgroups.GroupDirs(group)
	if err != nil {
		return nil, err
	}
	for d, id := range listed {
		if now[d] == id {
			made[d] = id
		}
	}
	return made, nil
}

// writeMarker records the directories of group a create made; none
// removes its marker.
func writeMarker(group string, made map[string]string) error {
	marker, err := parentMarker(group)
	if err != nil {
		return err
	}
	if len(made) == 0 {
		if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.Marshal(made)
	if err != nil {
		return err
	}
	// Whole or not at all: creates below one group write its marker side
	// by side, and one reading another's half-written marker would find
	// nothing made and take the marker away.
	f, err := os.CreateTemp(cgroupParentsDir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), marker)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// parentMarker is the marker's path for group: named by the group's
// SHA-256, in cgroupParentsDir, which is made root's alone.
func parentMarker(group string) (string, error) {
	if err := os.Mkdir(cgroupParentsDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Lstat(cgroupParentsDir, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 || st.Mode&0o022 != 0 {
		return "", fmt.Errorf("%s is not a directory only root may write", cgroupParentsDir)
	}
	sum := sha256.Sum256([]byte(group))
	return filepath.Join(cgroupParentsDir, hex.EncodeToString(sum[:])), nil
}

// removeMadeParents removes, deepest first, the directories a create made
// of the groups above a container's (markMadeParents), once the
// container's own group is gone and nothing else is in them. A group
// still in use stays, and so does every group above it; the last
// container below it to go removes it. A failure is logged: the container
// is gone, and what is left is an empty group.
func removeMadeParents(parents []string) {
	for _, p := range parents {
		gone, err := removeMadeParent(p)
		if err != nil {
			logrus.Warnf("bulkhead: cgroup %s, made for a container, is left: %v", p, err)
			return
		}
		if !gone {
			return
		}
	}
}

// removeMadeParent removes the directories of group a create made;
// gone is false while one of them is in use.
func removeMadeParent(group string) (gone bool, err error) {
	// Exclusive, and only tried: a create below group holds it shared
	// until its backend made its own group there and marked what it
	// made, and then the group is in use, its own container's to remove.
	// Waiting, a delete could wait for good while creates below follow
	// one another (dockerd's /docker under load), since a waiting
	// exclusive lock does not hold new shared ones back.
	f, err := lockCgroupPathFor(group, false)
	if errors.Is(err, errCgroupBusy) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	made, err := madeDirs(group)
	if err != nil {
		return false, err
	}
	gone = true
	for d := range made {
		removed, err := cgroups.RemoveEmptyDir(d)
		if err != nil {
			return false, err
		}
		if removed {
			delete(made, d)
		} else {
			gone = false
		}
	}
	return gone, writeMarker(group, made)
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
		deadline := time.Now().Add(cgroupHeldByDeleteWait)
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
