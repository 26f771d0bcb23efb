package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
)

// Occupied tells whether the cgroup at path (a cgroupfs cgroupsPath) or
// any group below it holds a process, or any group above it but the root
// holds one itself, in any hierarchy of the host. A container put there
// would set limits on those processes, `kill --all` of the container would
// kill them, and below another container it would share that container's
// limits.
func Occupied(path string) (bool, error) {
	var busy bool
	var err error
	// A group that other containers' deletes remove while it is walked
	// makes the walk fail with ENOENT: the tree changed, so look again.
	for attempt := 0; attempt < 5; attempt++ {
		if busy, err = occupiedOnce(path); !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return busy, err
}

func occupiedOnce(path string) (bool, error) {
	path = filepath.Join("/", path)
	if busy, err := occupied(path, true); busy || err != nil {
		return busy, err
	}
	for p := filepath.Dir(path); p != "/"; p = filepath.Dir(p) {
		if busy, err := occupied(p, false); busy || err != nil {
			return busy, err
		}
	}
	return false, nil
}

func occupied(path string, recursive bool) (bool, error) {
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		return occupied2(defaultV2Mountpoint, path, recursive)
	}
	c, err := loadV1(cgroup1.StaticPath(path))
	switch {
	case errors.Is(err, cgroup1.ErrCgroupDeleted):
	case err != nil:
		return false, fmt.Errorf("cgroups: %s: %w", path, err)
	default:
		for _, s := range c.Subsystems() {
			busy, err := holdsProcesses(c, path, s, recursive)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, fmt.Errorf("cgroups: %s: %s: %w", path, s.Name(), err)
			}
			if busy {
				return true, nil
			}
		}
	}
	// A hybrid host's unified tree carries systemd's own grouping.
	unified := filepath.Join(defaultV1Root, "unified")
	if _, err := os.Stat(unified); err != nil {
		return false, nil
	}
	return occupied2(unified, path, recursive)
}

// holdsProcesses tells whether the group holds a process in subsystem s;
// recursive counts the groups below it too. For the group alone it reads
// its cgroup.procs: the library's Processes walks the directory even then,
// an lstat of every file of every child group in every hierarchy, which
// for bulkhead's parent group of all containers was most of what judging a
// create's cgroup cost. The file read is the one Processes would read.
func holdsProcesses(c cgroup1.Cgroup, path string, s cgroup1.Subsystem, recursive bool) (bool, error) {
	dir, ok := s.(interface{ Path(string) string })
	if recursive || !ok {
		procs, err := c.Processes(s.Name(), recursive)
		return len(procs) > 0, err
	}
	data, err := os.ReadFile(filepath.Join(dir.Path(path), "cgroup.procs"))
	if err != nil {
		return false, err
	}
	return len(bytes.TrimSpace(data)) > 0, nil
}

func occupied2(mountpoint, path string, recursive bool) (bool, error) {
	dir := filepath.Join(mountpoint, path)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if !recursive {
		// As holdsProcesses: the library's Procs walks the directory, an
		// lstat of every child group, for the group alone too.
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return false, fmt.Errorf("cgroups: %s: %w", path, err)
		}
		return len(bytes.TrimSpace(data)) > 0, nil
	}
	m, err := cgroup2.Load(path, cgroup2.WithMountpoint(mountpoint))
	if err != nil {
		return false, fmt.Errorf("cgroups: %s: %w", path, err)
	}
	procs, err := m.Procs(recursive)
	if err != nil {
		return false, fmt.Errorf("cgroups: %s: %w", path, err)
	}
	return len(procs) > 0, nil
}

// Populated tells whether the group at path (a cgroupfs cgroupsPath) or
// any group below it holds a process, in any hierarchy of the host; a
// group that does not exist holds none. A new group below a populated one
// shares that one's limits with its processes.
// WithV2Mountpoint reads a fixture tree instead of the host's.
func Populated(path string, opts ...Option) (bool, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	path = filepath.Join("/", path)
	var busy bool
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if o.v2Mountpoint != "" {
			busy, err = occupied2(o.v2Mountpoint, path, true)
		} else {
			busy, err = occupied(path, true)
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return busy, err
}

// Taken tells whether a caller's cgroupsPath is not a fresh group: it
// already exists in some hierarchy, processes or none (an empty group a
// host made, such as a service's set up before it starts or the kubelet's
// pod parent, carries the host's limits, which the backend would overwrite
// and its delete would remove), or a group above it holds processes
// (Occupied).
func Taken(path string) (bool, error) {
	if Exists(path) {
		return true, nil
	}
	return Occupied(path)
}
