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
// may join, or nil. Pod annotations are the CRI's word only in a bundle a
// CRI engine made (specs.CRIBundle): any caller of bulkhead writes them
// into its own spec, and another tenant's pod uid, name and namespace are
// no secret. So the container's bundle must be a CRI engine's, its spec a
// CRI container whose sandbox id names a sandbox bulkhead created as the
// pod's own from a CRI engine's bundle too (same pod uid, namespace and
// name), enforced under this profile on the same backend, whose init is
// still the process it verified. Any other container, whatever paths or
// ids its spec names, joins nothing: another tenant's container under the
// same root and profile is not its pod, and a runsc sandbox's init is a
// host process (runsc-sandbox, in the host's pid namespace) whose
// namespaces are no pod's.
func (r *Registry) PodSandbox(p *specs.Profile, backendName, bundle string, a map[string]string) *Record {
	id := a[specs.AnnotationCRISandboxID]
	if a[specs.AnnotationCRIContainerType] != "container" || CheckID(id) != nil || PodOf(a) == nil {
		return nil
	}
	if !specs.CRIBundle(bundle) {
		return nil
	}
	rec, err := r.Get(id)
	if err != nil || rec.Pod == nil || *rec.Pod != *PodOf(a) {
		return nil
	}
	if rec.Backend != backendName || !SameEnforcedProfile(rec, p) || !StillRunning(rec) {
		return nil
	}
	// A record written before pods were told by their bundles may hold a
	// caller's pod.
	if !specs.CRIBundle(rec.Bundle) {
		return nil
	}
	return rec
}

// PodOfBundle is the pod a sandbox's spec describes, recorded at create:
// nil unless the spec is a CRI sandbox carrying its own id and a CRI
// engine made its bundle (PodSandbox says why).
func PodOfBundle(id, bundle string, a map[string]string) *Pod {
	if a[specs.AnnotationCRIContainerType] != "sandbox" || a[specs.AnnotationCRISandboxID] != id || PodOf(a) == nil {
		return nil
	}
	if !specs.CRIBundle(bundle) {
		return nil
	}
	return PodOf(a)
}

// JoinableIn returns the rule's test for a namespace path of a container
// whose own pod sandbox is sb (PodSandbox, nil for none): only
// /proc/<pid>/ns/<kind> of sb's init, and never a namespace bulkhead
// itself runs in. So a job cannot reach the host's namespaces, those of a
// container outside bulkhead's control, those of one that ran under a
// weaker profile, in audit mode or on another backend, or those of
// another pod.
func JoinableIn(sb *Record) func(rspec.LinuxNamespaceType, string) bool {
	return func(kind rspec.LinuxNamespaceType, path string) bool {
		pid, ok := specs.NamespacePathPid(path, kind)
		if !ok {
			return false
		}
		return sb != nil && sb.InitPid == pid && !ownNamespace(path, specs.NamespaceFile(kind))
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

// IsSandbox returns the annotations rule's test for a CRI sandbox id:
// runsc puts a container whose annotations name a sandbox into that
// gVisor sandbox, so the id must be this container's own pod sandbox sb.
func IsSandbox(sb *Record) func(string) bool {
	return func(id string) bool { return sb != nil && sb.ID == id }
}

// KubeletPodOf returns the host_mounts rule's test for whose kubelet
// files a container may bind: only its own pod sandbox sb's pod uid.
func KubeletPodOf(sb *Record) func(string) bool {
	return func(uid string) bool { return sb != nil && sb.Pod != nil && sb.Pod.UID == uid }
}

// PodCgroupParentOf returns the cgroups_path rule's pod group: the group
// above the cgroup of this container's own pod sandbox sb, whose limits
// the pod's containers share by design; "" for none. A sandbox made under
// the systemd driver recorded slice:prefix:name, and its group is its
// scope's: the pod's slice is then the one above.
func PodCgroupParentOf(sb *Record) func() string {
	return func() string {
		if sb == nil {
			return ""
		}
		group := sb.CgroupsPath
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
