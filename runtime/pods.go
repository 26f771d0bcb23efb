package runtime

import (
	"path/filepath"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// joinableFor returns the rule's test for a namespace path: joining is
// allowed only when the path is /proc/<pid>/ns/<kind> of the init process
// of a container bulkhead created under this root, enforced under the
// same profile (a pod's sandbox). So a job cannot reach the host's
// namespaces, those of a container outside bulkhead's control, or those of
// one that ran under a weaker profile or in audit mode.
func (r *Registry) joinableFor(p *specs.Profile) func(rspec.LinuxNamespaceType, string) bool {
	return func(kind rspec.LinuxNamespaceType, path string) bool {
		pid, nsKind, ok := parseNamespacePath(path)
		if !ok || nsKind != nsFileName(kind) {
			return false
		}
		ids, err := r.IDs()
		if err != nil {
			return false
		}
		for _, id := range ids {
			rec, err := r.Get(id)
			if err != nil || rec.InitPid != pid {
				continue
			}
			return rec.Profile == p.Name && rec.Mode == specs.Enforce
		}
		return false
	}
}

func parseNamespacePath(path string) (pid int, kind string, ok bool) {
	parts := strings.Split(filepath.Clean(path), "/")
	// "", "proc", pid, "ns", kind
	if len(parts) != 5 || parts[1] != "proc" || parts[3] != "ns" {
		return 0, "", false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil || pid <= 1 {
		return 0, "", false
	}
	return pid, parts[4], true
}

func nsFileName(kind rspec.LinuxNamespaceType) string {
	switch kind {
	case rspec.NetworkNamespace:
		return "net"
	case rspec.MountNamespace:
		return "mnt"
	default:
		return string(kind)
	}
}
