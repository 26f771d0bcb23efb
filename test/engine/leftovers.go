package engine

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stateDirs are the directories below a runtime root that hold one
// container's state: bulkhead's own and each backend's.
var stateDirs = []string{"bulkhead", "runc", "runsc"}

// Leftovers lists what container id left on the host after its engine
// removed it: processes whose command line names it (its shim runs with
// -id <id>), cgroup directories named after it, mounts of this mount
// namespace whose mount point or options name it or that lie in its state
// directories, and its state directories under each runtime root.
//
// A runtime root is compared with /proc/self/mountinfo both as given and
// with its symlinks resolved: mountinfo shows only the resolved spelling
// (/run/docker for a root handed over as /var/run/docker).
func Leftovers(id string, roots ...string) []string {
	var found []string
	for _, p := range ProcessesMentioning(id) {
		found = append(found, "process "+p)
	}
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return nil
		}
		if strings.Count(path, "/") > 7 {
			return fs.SkipDir
		}
		if strings.Contains(e.Name(), id) {
			found = append(found, "cgroup "+path)
			return fs.SkipDir
		}
		return nil
	})
	var dirs []string
	for _, root := range roots {
		for _, spelling := range spellings(root) {
			for _, s := range stateDirs {
				dirs = append(dirs, filepath.Join(spelling, s, id))
			}
		}
	}
	for _, m := range mountsNaming(id, dirs) {
		found = append(found, "mount "+m)
	}
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			found = append(found, "state directory "+d)
		}
	}
	return found
}

// spellings are root as given and with its symlinks resolved.
func spellings(root string) []string {
	out := []string{filepath.Clean(root)}
	if real, err := filepath.EvalSymlinks(root); err == nil && real != out[0] {
		out = append(out, real)
	}
	return out
}

// mountsNaming lists the lines of /proc/self/mountinfo whose mount point
// or options name id, or whose mount point lies at or below one of dirs.
func mountsNaming(id string, dirs []string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return []string{"unreadable /proc/self/mountinfo: " + err.Error()}
	}
	defer f.Close()
	var found []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		hit := strings.Contains(line, id)
		for _, d := range dirs {
			if mp == d || strings.HasPrefix(mp, d+"/") {
				hit = true
			}
		}
		if hit {
			found = append(found, line)
		}
	}
	if err := s.Err(); err != nil {
		found = append(found, "reading /proc/self/mountinfo: "+err.Error())
	}
	return found
}

// settle is how long a container's traces may take to go after its
// engine reported it removed: a shim exits, and the kernel reaps the
// container's processes, only after the engine's call returned. It bounds
// the wait on a loaded machine; it is not a measurement.
const settle = 60 * time.Second

// AssertNothingLeft fails the test unless nothing of container id is left
// (see Leftovers), waiting until settle for what goes after the engine's
// call returned, and naming everything that stayed.
func AssertNothingLeft(t testing.TB, id string, roots ...string) {
	t.Helper()
	AssertNoneLeft(t, []string{id}, roots...)
}

// AssertNoneLeft is AssertNothingLeft for several containers, with one
// wait for all of them.
func AssertNoneLeft(t testing.TB, ids []string, roots ...string) {
	t.Helper()
	for _, id := range ids {
		if id == "" {
			t.Error("AssertNoneLeft: an empty container id")
			return
		}
	}
	var left []string
	if !Eventually(settle, func() bool {
		left = nil
		for _, id := range ids {
			for _, l := range Leftovers(id, roots...) {
				left = append(left, id+": "+l)
			}
		}
		return len(left) == 0
	}) {
		t.Errorf("containers left behind:\n%s", strings.Join(left, "\n"))
	}
}
