package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
)

// groupMarkers is a directory of markers, one per group: a file named by
// the group's SHA-256, holding the group's directories a backend's create
// made, each with its identity (cgroups.GroupDirs), so that one of that
// path made since by anyone else, or in a hierarchy the backend left
// alone, is not taken for it. One directory for every bulkhead on the
// host, as cgroupLockFile, and root's alone.
type groupMarkers string

const (
	// madeParentMarkers mark the groups above a caller's cgroupsPath
	// that a create made (runc and runsc make every missing group above
	// the container's, in every hierarchy, and remove only the
	// container's own): a delete removes those directories once empty,
	// where one the administrator made, empty or not, stays.
	madeParentMarkers groupMarkers = "/run/bulkhead-cgroup-parents"
	// containerGroupMarkers mark the group of each container created at
	// a caller's cgroupsPath, from its create to its delete: no other
	// container's group may lie below it, whether it runs or has
	// stopped (its group then holds no process), since it would be under
	// that container's limits, and that container's delete would end it.
	containerGroupMarkers groupMarkers = "/run/bulkhead-cgroup-containers"
)

// markerDirReady makes each markers' directory, root's alone, or says why
// it is not: once per process, not at every marker.
var markerDirReady = map[groupMarkers]func() error{
	madeParentMarkers:     sync.OnceValue(madeParentMarkers.makeDir),
	containerGroupMarkers: sync.OnceValue(containerGroupMarkers.makeDir),
}

func (m groupMarkers) makeDir() error {
	dir := string(m)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 || st.Mode&0o022 != 0 {
		return fmt.Errorf("%s is not a directory only root may write", dir)
	}
	return nil
}

// path is the marker's path for group.
func (m groupMarkers) path(group string) (string, error) {
	if err := markerDirReady[m](); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(group))
	return filepath.Join(string(m), hex.EncodeToString(sum[:])), nil
}

// dirs are the directories of group its marker names that are still the
// ones a create made (same path and identity).
func (m groupMarkers) dirs(group string) (map[string]string, error) {
	now, err := cgroups.GroupDirs(group)
	if err != nil {
		return nil, err
	}
	return m.dirsAmong(group, now)
}

// dirsAmong is dirs, given the group's directories as they are now.
func (m groupMarkers) dirsAmong(group string, now map[string]string) (map[string]string, error) {
	made := map[string]string{}
	marker, err := m.path(group)
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
	for d, id := range listed {
		if now[d] == id {
			made[d] = id
		}
	}
	return made, nil
}

// write records the directories of group a create made; none removes
// the marker.
func (m groupMarkers) write(group string, made map[string]string) error {
	marker, err := m.path(group)
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
	f, err := os.CreateTemp(string(m), ".tmp-*")
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

// groupDirs is a group above a container's, with its directories as a
// create found them before its backend ran.
type groupDirs struct {
	path   string
	before map[string]string
}

// groupsAbove are the groups above group, deepest first, with the
// directories each has now. One that is another container's own group
// (containerGroupMarkers) is refused when refuse is set, and otherwise
// ends the list with none: nothing above such a group is this create's.
func groupsAbove(group string, refuse bool) ([]groupDirs, error) {
	var out []groupDirs
	for a := path.Dir(group); a != "/" && a != "."; a = path.Dir(a) {
		dirs, err := cgroups.GroupDirs(a)
		if err != nil {
			return nil, err
		}
		if len(dirs) > 0 {
			theirs, err := containerGroupMarkers.dirsAmong(a, dirs)
			if err != nil {
				return nil, err
			}
			if len(theirs) > 0 && !refuse {
				return nil, nil
			}
			if len(theirs) > 0 {
				return nil, fmt.Errorf("%w: %s is another container's group (running or stopped), whose limits it would be under and whose delete would end it", errBelowContainer, a)
			}
		}
		out = append(out, groupDirs{path: a, before: dirs})
	}
	return out, nil
}

// errBelowContainer is groupsAbove's refusal.
var errBelowContainer = errors.New("it lies below another container's group")

// markCreated marks, once the backend's create of group ran, group as a
// container's own (containerGroupMarkers) and the directories of the
// groups above it that the backend made: those not there before, in a
// hierarchy where it made group (one made meanwhile in a hierarchy it
// left alone is someone else's), beside those an earlier create made that
// are still the same. It returns the groups above (deepest first) that
// have any: a delete removes those directories. The caller still holds
// the groups' locks (lockCgroupPath), so no delete removes one meanwhile.
// What it could not mark is left to the administrator.
func markCreated(group string, above []groupDirs) []string {
	own := markContainerGroup(group)
	if own == nil {
		return nil
	}
	var parents []string
	for _, g := range above {
		now, err := cgroups.GroupDirs(g.path)
		var made map[string]string
		if err == nil {
			made, err = madeParentMarkers.dirsAmong(g.path, now)
		}
		if err == nil {
			marked := len(made)
			for d, id := range now {
				_, had := g.before[d]
				_, backends := own[strings.TrimSuffix(d, g.path)+group]
				if !had && backends {
					made[d] = id
				}
			}
			// A marker that names what is there already stays as it is
			// (dockerd's /docker, for every container below it).
			if len(made) != marked {
				err = madeParentMarkers.write(g.path, made)
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

// markContainerGroup marks group, which the backend's create just made, as
// a container's own, and returns its directories; nil when it could not
// (logged).
func markContainerGroup(group string) map[string]string {
	own, err := cgroups.GroupDirs(group)
	if err == nil {
		err = containerGroupMarkers.write(group, own)
	}
	if err != nil {
		logrus.Warnf("bulkhead: cgroup %s: not marked as a container's: %v", group, err)
		return nil
	}
	return own
}

// removedGroup takes away what markCreated marked once the container's
// own group (a caller's cgroupfs path) is gone: its marker, under its
// lock so that a create of the same path since keeps its own, and the
// groups made above it (removeMadeParents). A failure is logged: the
// container is gone, and what is left is a marker that names nothing or
// an empty group.
func removedGroup(group string, parents []string) {
	if group == "" || group[0] != '/' {
		return
	}
	if err := unmarkContainerGroup(group); err != nil {
		logrus.Warnf("bulkhead: cgroup %s: marker left: %v", group, err)
	}
	removeMadeParents(parents)
}

func unmarkContainerGroup(group string) error {
	marker, err := containerGroupMarkers.path(group)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(marker); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	f, err := lockCgroupPath(group)
	if err != nil {
		return err
	}
	defer f.Close()
	still, err := containerGroupMarkers.dirs(group)
	if err != nil || len(still) > 0 {
		return err
	}
	return containerGroupMarkers.write(group, nil)
}

// removeMadeParents removes, deepest first, the directories a create made
// of the groups above a container's (markCreated), once the container's
// own group is gone and nothing else is in them. A group still in use
// stays, and so does every group above it; the last container below it to
// go removes it.
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
	made, err := madeParentMarkers.dirs(group)
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
	return gone, madeParentMarkers.write(group, made)
}
