package bundle

import (
	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime"
)

// CgroupsPath is where bulkhead puts the cgroup of container id, created
// from the bundle in dir with --root root: the bundle's linux.cgroupsPath
// when it sets one (an engine's /docker/<id>, /<namespace>/<id>), else
// bulkhead's own default, /bulkhead/<id>-<hash of root>
// (runtime.DefaultCgroupsPath).
func CgroupsPath(dir, root, id string) string {
	if s, err := Read(dir); err == nil && s.Linux != nil && s.Linux.CgroupsPath != "" {
		return s.Linux.CgroupsPath
	}
	return runtime.DefaultCgroupsPath(root, id)
}

// CgroupLeft returns that cgroup path and whether it exists in any
// hierarchy: a container's leftover.
func CgroupLeft(dir, root, id string) (string, bool) {
	p := CgroupsPath(dir, root, id)
	return p, cgroups.Exists(p)
}
