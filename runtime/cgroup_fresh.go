package runtime

import (
	"fmt"

	"bulkhead.dev/bulkhead/cgroups"
)

// freshCgroup makes sure the cgroup bulkhead chose holds no process yet:
// the cgroups_path rule judged the caller's path, this is bulkhead's own.
func (c *creation) freshCgroup() error {
	l := c.handed.Linux
	if l == nil || l.CgroupsPath == "" || l.CgroupsPath != c.handed.Annotations[annotationCgroupsPath] {
		return nil
	}
	busy, err := cgroups.Occupied(l.CgroupsPath)
	switch {
	case err != nil:
		return fmt.Errorf("rule cgroups_path: %s: %w", l.CgroupsPath, err)
	case busy:
		return fmt.Errorf("rule cgroups_path refuses linux.cgroupsPath %s: the cgroup bulkhead chose for this container already holds processes", l.CgroupsPath)
	}
	return nil
}
