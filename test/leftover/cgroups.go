// Package leftover finds what a container created through bulkhead could
// leave on the host, where bulkhead really puts it.
package leftover

import (
	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/test/bundle"
)

// CgroupsPath is where bulkhead puts the cgroup of container id, created
// from the bundle in dir with --root root: the bundle's linux.cgroupsPath
// when it sets one (an engine's /docker/<id>, /<namespace>/<id>), else
// bulkhead's own default, /bulkhead/<id>-<hash of root>
// (runtime.DefaultCgroupsPath).
func CgroupsPath(dir, root, id string) string {
	if s, err := bundle.Read(dir); err == nil && s.Linux != nil && s.Linux.CgroupsPath != "" {
		return s.Linux.CgroupsPath
	}
	return runtime.DefaultCgroupsPath(root, id)
}

// Cgroup returns that cgroup path and whether it exists in any
// hierarchy: a container's leftover.
func Cgroup(dir, root, id string) (string, bool) {
	p := CgroupsPath(dir, root, id)
	return p, cgroups.Exists(p)
}
