package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
)

// Occupied tells whether the cgroup at path (a cgroupfs cgroupsPath) or
// any group below it holds a process, in any hierarchy of the host. A
// container put there would set limits on those processes, and `kill
// --all` of the container would kill them.
func Occupied(path string) (bool, error) {
	path = filepath.Join("/", path)
	if cgroupsv3.Mode() == cgroupsv3.Unified {
		return occupied2(defaultV2Mountpoint, path)
	}
	c, err := cgroup1.Load(cgroup1.StaticPath(path))
	switch {
	case errors.Is(err, cgroup1.ErrCgroupDeleted):
	case err != nil:
		return false, fmt.Errorf("cgroups: %s: %w", path, err)
	default:
		for _, s := range c.Subsystems() {
			procs, err := c.Processes(s.Name(), true)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, fmt.Errorf("cgroups: %s: %s: %w", path, s.Name(), err)
			}
			if len(procs) > 0 {
				return true, nil
			}
		}
	}
	// A hybrid host's unified tree carries systemd's own grouping.
	unified := filepath.Join(defaultV1Root, "unified")
	if _, err := os.Stat(unified); err != nil {
		return false, nil
	}
	return occupied2(unified, path)
}

func occupied2(mountpoint, path string) (bool, error) {
	if _, err := os.Stat(filepath.Join(mountpoint, path)); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	m, err := cgroup2.Load(path, cgroup2.WithMountpoint(mountpoint))
	if err != nil {
		return false, fmt.Errorf("cgroups: %s: %w", path, err)
	}
	procs, err := m.Procs(true)
	if err != nil {
		return false, fmt.Errorf("cgroups: %s: %w", path, err)
	}
	return len(procs) > 0, nil
}
