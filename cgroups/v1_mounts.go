package cgroups

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/moby/sys/mountinfo"
)

// The cgroup v1 mounts are read from /proc/self/mountinfo once per process.
// The library reads the whole mount table for each lookup (cgroup1.Load's
// default hierarchy) and for each controller of a process
// (cgroup1.PidPath: a dozen reads), and the kernel generates the table
// anew for each: about 1 ms of CPU per create. A bulkhead process lives
// for one verb (the watchdog for one container), during which the host's
// cgroup hierarchies, mounted at boot, do not move.

// v1Hierarchy is cgroup1.Default, computed once.
var v1Hierarchy = sync.OnceValues(cgroup1.Default)

// loadV1 is cgroup1.Load of a path with the hierarchy computed once.
func loadV1(path cgroup1.Path) (cgroup1.Cgroup, error) {
	return cgroup1.Load(path, cgroup1.WithHierarchy(v1Hierarchy))
}

// v1Destinations maps each option of a cgroup mount (a controller such as
// "memory", or "name=systemd") to the root of that mount (mountinfo's
// fourth field), the first such mount winning, as the library's lookup does.
var v1Destinations = sync.OnceValues(func() (map[string]string, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range mounts {
		for _, opt := range strings.Split(m.VFSOptions, ",") {
			if _, ok := out[opt]; !ok {
				out[opt] = m.Root
			}
		}
	}
	return out, nil
})

// pidPathV1 is cgroup1.PidPath with one read of the mount table: the
// paths of /proc/PID/cgroup localised to the roots of their mounts (a
// bulkhead running in a cgroup namespace sees a root other than /). As
// the library does, a controller without a cgroup mount fails the whole
// lookup.
func pidPathV1(pid int) cgroup1.Path {
	file := fmt.Sprintf("/proc/%d/cgroup", pid)
	paths, err := cgroup1.ParseCgroupFile(file)
	if err != nil {
		return errorPath(fmt.Errorf("parse cgroup file %s: %w", file, err))
	}
	dests, err := v1Destinations()
	if err != nil {
		return errorPath(err)
	}
	for n, p := range paths {
		dest, ok := dests[n]
		if !ok {
			return errorPath(cgroup1.ErrNoCgroupMountDestination)
		}
		rel, err := filepath.Rel(dest, p)
		if err != nil {
			return errorPath(err)
		}
		if rel == "." {
			rel = dest
		}
		paths[n] = filepath.Join("/", rel)
	}
	return func(name cgroup1.Name) (string, error) {
		root, ok := paths[string(name)]
		if !ok {
			if root, ok = paths["name="+string(name)]; !ok {
				return "", cgroup1.ErrControllerNotActive
			}
		}
		return root, nil
	}
}

func errorPath(err error) cgroup1.Path {
	return func(cgroup1.Name) (string, error) { return "", err }
}
