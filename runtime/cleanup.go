package runtime

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

func nowUTC() time.Time { return time.Now().UTC() }

// removeCgroup deletes the container's cgroup if the backend left it
// behind (runsc does after a failed create, and a later container reusing
// the path would inherit its limits). A missing cgroup is not an error.
func removeCgroup(path string) error {
	// Only a cgroupfs path is bulkhead's to remove; a systemd slice:prefix:name
	// belongs to systemd.
	if path == "" || path[0] != '/' {
		return nil
	}
	var err error
	if cgroups.Mode() == cgroups.Unified {
		var m *cgroup2.Manager
		if m, err = cgroup2.Load(path); err == nil {
			err = m.Delete()
		}
	} else {
		var c cgroup1.Cgroup
		if c, err = cgroup1.Load(cgroup1.StaticPath(path)); err == nil {
			err = c.Delete()
		}
	}
	if err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return nil
	}
	return fmt.Errorf("cgroup %s: %w", path, err)
}

const annotationCgroupsPath = specs.AnnotationCgroupsPath

// DefaultCgroupsPath is where a container whose caller named no cgroup
// lives: below /bulkhead, unique per state root and id, so containers of
// the same id under two engines never share one.
func DefaultCgroupsPath(root, id string) string {
	return specs.BulkheadCgroupParent + "/" + id + "-" + sha([]byte(root))[:8]
}

// chooseCgroupsPath gives the handed spec an explicit cgroups path when the
// caller set none, so bulkhead can verify the container's limits and remove
// a cgroup that a failed create leaves behind.
func chooseCgroupsPath(s *rspec.Spec, g *Globals, id string) {
	if s.Linux == nil || g.SystemdCgroup {
		return
	}
	if s.Linux.CgroupsPath != "" && s.Annotations[annotationCgroupsPath] != s.Linux.CgroupsPath {
		return
	}
	s.Linux.CgroupsPath = DefaultCgroupsPath(g.Root, id)
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[annotationCgroupsPath] = s.Linux.CgroupsPath
}
