package state

import (
	"path/filepath"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/specs"
)

// Pod is the identity of a CRI pod sandbox, recorded when bulkhead
// creates it: the CRI annotations of its own spec.
type Pod struct {
	UID       string `json:"uid,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// PodOf is the pod a spec's CRI annotations describe, nil for none: CRI
// always names the pod's uid, and without one there is no pod to match.
func PodOf(a map[string]string) *Pod {
	if a[specs.AnnotationCRIContainerType] == "" || a["io.kubernetes.cri.sandbox-uid"] == "" {
		return nil
	}
	return &Pod{UID: a["io.kubernetes.cri.sandbox-uid"], Namespace: a["io.kubernetes.cri.sandbox-namespace"],
		Name: a["io.kubernetes.cri.sandbox-name"]}
}

// PodSandbox returns the record of the pod sandbox a container of a pod
// may join, or nil: the spec must be a CRI container whose sandbox id
// names a sandbox bulkhead created as the pod's own (same pod uid,
// namespace and name), enforced under this profile on the same backend,
// whose init is still the process it verified. Any other container,
// whatever paths or ids its spec names, joins nothing: another tenant's
// container under the same root and profile is not its pod, and a runsc
// sandbox's init is a host process (runsc-sandbox, in the host's pid
// namespace) whose namespaces are no pod's.
func (r *Registry) PodSandbox(p *specs.Profile, backendName string, a map[string]string) *Record {
	id := a[specs.AnnotationCRISandboxID]
	if a[specs.AnnotationCRIContainerType] != "container" || CheckID(id) != nil {
		return nil
	}
	rec, err := r.Get(id)
	if err != nil || rec.Pod == nil || PodOf(a) == nil || *rec.Pod != *PodOf(a) {
		return nil
	}
	if rec.Backend != backendName || !SameEnforcedProfile(rec, p) || !StillRunning(rec) {
		return nil
	}
	return rec
}

// JoinableFor returns the rule's test for a namespace path of a container
// on backend backendName: only /proc/<pid>/ns/<kind> of the init of this
// container's own pod sandbox (PodSandbox), and never a namespace
// bulkhead itself runs in. So a job cannot reach the host's namespaces,
// those of a container outside bulkhead's control, those of one that ran
// under a weaker profile, in audit mode or on another backend, or those
// of another pod.
func (r *Registry) JoinableFor(p *specs.Profile, backendName string, a map[string]string) func(rspec.LinuxNamespaceType, string) bool {
	return func(kind rspec.LinuxNamespaceType, path string) bool {
		pid, ok := specs.NamespacePathPid(path, kind)
		if !ok {
			return false
		}
		rec := r.PodSandbox(p, backendName, a)
		return rec != nil && rec.InitPid == pid && !ownNamespace(path, specs.NamespaceFile(kind))
	}
}

// ownNamespace tells whether the namespace at path is the one of that kind
// bulkhead runs in (the host's, for an engine's runtime); a namespace that
// cannot be compared counts as one.
func ownNamespace(path, nsKind string) bool {
	var theirs, ours unix.Stat_t
	if unix.Stat(path, &theirs) != nil || unix.Stat("/proc/self/ns/"+nsKind, &ours) != nil {
		return true
	}
	return theirs.Dev == ours.Dev && theirs.Ino == ours.Ino
}

// SandboxFor returns the annotations rule's test for a CRI sandbox id:
// runsc puts a container whose annotations name a sandbox into that
// gVisor sandbox, so the id must be this container's own pod sandbox.
func (r *Registry) SandboxFor(p *specs.Profile, backendName string, a map[string]string) func(string) bool {
	return func(id string) bool {
		rec := r.PodSandbox(p, backendName, a)
		return rec != nil && rec.ID == id
	}
}

// KubeletPodFor returns the host_mounts rule's test for whose kubelet
// files a container may bind: only its own pod sandbox's (PodSandbox) pod
// uid, and only when a CRI engine made that sandbox (specs.CRIBundle):
// the pod annotations of a sandbox Docker or ctr made are the caller's.
func (r *Registry) KubeletPodFor(p *specs.Profile, backendName string, a map[string]string) func(string) bool {
	return func(uid string) bool {
		rec := r.PodSandbox(p, backendName, a)
		if rec == nil || rec.Pod == nil || rec.Pod.UID != uid {
			return false
		}
		return specs.CRIBundle(rec.Bundle)
	}
}

// PodCgroupParentFor returns the cgroups_path rule's pod group: the group
// above the cgroup of this container's own pod sandbox (PodSandbox), whose
// limits the pod's containers share by design; "" for none. A sandbox
// made under the systemd driver recorded slice:prefix:name, and its group
// is its scope's: the pod's slice is then the one above.
func (r *Registry) PodCgroupParentFor(p *specs.Profile, backendName string, a map[string]string) func() string {
	return func() string {
		rec := r.PodSandbox(p, backendName, a)
		if rec == nil {
			return ""
		}
		group := rec.CgroupsPath
		if strings.Contains(group, ":") {
			scope, err := specs.SystemdScopePath(group)
			if err != nil {
				return ""
			}
			group = scope
		}
		if !strings.HasPrefix(group, "/") {
			return ""
		}
		return filepath.Dir(group)
	}
}

func SameEnforcedProfile(rec *Record, p *specs.Profile) bool {
	return rec.Profile == p.Name && rec.Mode == specs.Enforce
}

// StillRunning tells whether the record's init is still the process
// bulkhead verified: a pid alone may have been reused by now, its start
// time (in clock ticks since boot) may not.
func StillRunning(rec *Record) bool {
	return Alive(rec.InitPid, rec.InitStart)
}

// Alive is libcontainer's test of a container's init: pid runs, not as a
// zombie, and started at start.
func Alive(pid int, start uint64) bool {
	if pid <= 1 || start == 0 {
		return false
	}
	st, started, err := procStat(pid)
	return err == nil && started == start && st != 'Z' && st != 'X'
}

// ExeID names the program pid runs by its device and inode
// (/proc/<pid>/exe), "" when it cannot be read. A process changes it only
// by executing another program.
func ExeID(pid int) string {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/exe", &st); err != nil {
		return ""
	}
	return strconv.FormatUint(st.Dev, 10) + ":" + strconv.FormatUint(st.Ino, 10)
}

// InitReleased tells whether the record's init, still the one verified,
// runs another program than at create: runc's init executes the
// container's program once start releases it. runc's exec.fifo does not
// tell so alone: a start killed after releasing the init and before
// removing the fifo leaves it, and runc then calls a running container
// created.
func InitReleased(rec *Record) bool {
	if rec.InitExe == "" || !StillRunning(rec) {
		return false
	}
	now := ExeID(rec.InitPid)
	return now != "" && now != rec.InitExe
}

// InitStart is the start time of pid as /proc/<pid>/stat gives it, 0 when
// it cannot be read.
func InitStart(pid int) uint64 {
	_, start, err := procStat(pid)
	if err != nil {
		return 0
	}
	return start
}
