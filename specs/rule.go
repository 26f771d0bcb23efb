package specs

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Context is what a rule may know besides the spec: the profile it
// enforces and facts about the host and the bundle.
type Context struct {
	// mounted remembers mountedFrom's answers for this container.
	mounted map[mountedKey]MountSource
	// walked remembers, per directory walked for sockets and FIFOs (by
	// device and inode), what the walk found below it.
	walked map[devIno]walk
	// snapshotDBs remembers, per snapshotter home, its records of the
	// snapshots this container's judgement read, by id; snapshotAbsent
	// the snapshot directories it has none of (loadSnapshotRecords).
	snapshotDBs    map[string]map[string]snapshotRecord
	snapshotAbsent map[string]bool

	Profile *Profile
	// Bundle is the absolute path of the bundle; root.path and cwd resolve
	// against it.
	Bundle string
	// LiveRoot is where the host sees a running container's tree
	// (/proc/<pid>/root of its init): an exec's cwd resolves there, through
	// whatever the job wrote. Empty where there is none.
	LiveRoot string
	// JoinableNamespace reports whether a namespace path belongs to a
	// container bulkhead itself created under a policy at least as strict
	// (a pod's sandbox). Nil means no path may be joined.
	JoinableNamespace func(kind rspec.LinuxNamespaceType, path string) bool
	// Original is the caller's config.json as given. When nil, rules that
	// need the bytes read Bundle/config.json.
	Original []byte
	// ID is the container's id, to which the engine's own per-container
	// files must belong. Empty where no container is made (check).
	ID string
	// JoinableSandbox reports whether a CRI sandbox id names a pod sandbox
	// bulkhead created under this enforced profile and that still runs.
	// Nil means none may be joined.
	JoinableSandbox func(id string) bool
	// MadeByCRI says the container's bundle is one a CRI engine made
	// (CRIBundle): a CRI sandbox's own files, and its pod's, go to a
	// container only then. Asked only for such a file, so that a create
	// binding none looks up no layout of its bundle. Nil: none is.
	MadeByCRI func() bool
	// KubeletPod reports whether a pod uid is the pod of this container's
	// own sandbox (JoinableSandbox's), made by a CRI engine (CRIBundle). Pod
	// annotations are the caller's to write; a Docker user's sandbox
	// naming a pod uid is no pod's. Nil: no pod's files, nor its
	// sandbox's, are granted.
	KubeletPod func(uid string) bool
	// CgroupTaken reports whether a cgroupfs path is not a fresh group: it
	// exists in some hierarchy, or a group above it holds processes. Nil
	// treats every path as unknown: refused.
	CgroupTaken func(path string) (bool, error)
	// CgroupPopulated reports whether a cgroupfs group or any group below
	// it holds a process, in any hierarchy; false for a group that does
	// not exist. Nil treats every path as unknown: refused.
	CgroupPopulated func(path string) (bool, error)
	// PodCgroupParent is the group above the cgroup of this container's
	// own pod sandbox (the one JoinableSandbox names), "" for none: the
	// pod's group, whose limits its containers share by design.
	PodCgroupParent func() string
	// Host reads the host's filesystem; nil for the real one.
	Host *Host
	// SystemdCgroup says the backend runs with --systemd-cgroup, which
	// reads cgroupsPath as slice:prefix:name; otherwise it is a path.
	SystemdCgroup bool
}

func (c *Context) joinable(kind rspec.LinuxNamespaceType, path string) bool {
	return c.JoinableNamespace != nil && c.JoinableNamespace(kind, path)
}

// Rule enforces one control on a spec. Apply changes s in place so that
// the control holds and returns what it decided; a field it cannot make
// safe is reported as a Refused decision, never silently dropped.
// Rules clamp, never raise: a caller's stricter value is kept.
type Rule struct {
	Name  string
	Apply func(c *Context, s *rspec.Spec) []Decision
}

// Rules is the order in which the controls are applied. unknown_fields
// comes first: the typed spec the others see has lost those fields; then
// spec_fields, which refuses every value no rule may accept. The order
// matters
// only where one control reads what another wrote: seccomp is computed
// after the capabilities are dropped, host_mounts sees the /tmp tmpfs and
// not the caller's /tmp bind, sysctl sees the final network namespace,
// egress sets its proxy variables after environment dropped the caller's
// credential-carrying ones,
// and mount_order comes after every rule that adds a mount.
var Rules = []Rule{
	{"unknown_fields", ruleUnknownFields},
	{"spec_fields", ruleSpecFields},
	{"root", ruleRoot},
	{"capabilities", ruleCapabilities},
	{"no_new_privileges", ruleNoNewPrivileges},
	{"user", ruleUser},
	{"readonly_rootfs", ruleReadonlyRootfs},
	{"tmp", ruleTmp},
	{"home", ruleHome},
	{"scratch", ruleScratch},
	{"mounts", ruleMounts},
	{"host_mounts", ruleHostMounts},
	{"workspace", ruleWorkspace},
	{"masked_paths", ruleMaskedPaths},
	{"mount_order", ruleMountOrder},
	{"devices", ruleDevices},
	{"network", ruleNetwork},
	{"namespaces", ruleNamespaces},
	{"cgroups_path", ruleCgroupsPath},
	{"seccomp", ruleSeccomp},
	{"pids", rulePids},
	{"memory", ruleMemory},
	{"cpu", ruleCPU},
	{"blkio", ruleBlkio},
	{"hugetlb", ruleHugetlb},
	{"environment", ruleEnvironment},
	{"egress", ruleEgress},
	{"cwd", ruleCwd},
	{"sysctl", ruleSysctl},
	{"ipc_limits", ruleIPCLimits},
	{"hooks", ruleHooks},
	{"annotations", ruleAnnotations},
	{"rlimits", ruleRlimits},
	{"scheduling", ruleScheduling},
	{"security_labels", ruleSecurityLabels},
	{"oom_score_adj", ruleOOMScoreAdj},
}

// Apply applies every rule to a copy of s and returns the rewritten spec
// and all decisions. It returns a *RefusalError when any rule refused. In
// audit mode the caller hands over the original spec instead.
func Apply(c *Context, s *rspec.Spec) (*rspec.Spec, []Decision, error) {
	if ds := overlongLists(s); len(ds) > 0 {
		return nil, ds, &RefusalError{Profile: c.Profile.Name, Decisions: ds}
	}
	out := Clone(s)
	var all []Decision
	for _, r := range Rules {
		all = append(all, r.Apply(c, out)...)
	}
	if refused(all) {
		return nil, all, &RefusalError{Profile: c.Profile.Name, Decisions: all}
	}
	return out, all, nil
}

func refused(ds []Decision) bool {
	for _, d := range ds {
		if d.Action == Refused {
			return true
		}
	}
	return false
}
