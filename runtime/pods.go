package runtime

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer/system"
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
			return sameEnforcedProfile(rec, p) && stillRunning(rec)
		}
		return false
	}
}

// sandboxFor returns the annotations rule's test for a CRI sandbox id:
// runsc puts a container whose annotations name a sandbox into that
// gVisor sandbox, so the id must be a pod sandbox bulkhead created under
// this enforced profile, and its init must still be the same process.
func (r *Registry) sandboxFor(p *specs.Profile) func(string) bool {
	return func(id string) bool {
		if CheckID(id) != nil {
			return false
		}
		rec, err := r.Get(id)
		return err == nil && sameEnforcedProfile(rec, p) && stillRunning(rec)
	}
}

func sameEnforcedProfile(rec *Record, p *specs.Profile) bool {
	return rec.Profile == p.Name && rec.Mode == specs.Enforce
}

// stillRunning tells whether the record's init is still the process
// bulkhead verified: a pid alone may have been reused by now, its start
// time (in clock ticks since boot) may not.
func stillRunning(rec *Record) bool {
	if rec.InitPid <= 1 || rec.InitStart == 0 {
		return false
	}
	st, err := system.Stat(rec.InitPid)
	return err == nil && st.StartTime == rec.InitStart && st.State != system.Zombie && st.State != system.Dead
}

// initStart is the start time of pid as /proc/<pid>/stat gives it, 0 when
// it cannot be read.
func initStart(pid int) uint64 {
	st, err := system.Stat(pid)
	if err != nil {
		return 0
	}
	return st.StartTime
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
