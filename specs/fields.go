package specs

import (
	"reflect"
	"strconv"
	"strings"
)

// Class says how the policy treats one field of the runtime-spec. Every
// field reachable from rspec.Spec has one (TestEveryFieldClassified), so a
// field that no rule looks at cannot pass through: the spec_fields rule
// refuses any value at a path the table does not know.
type Class string

const (
	// Forced: the profile's value replaces the caller's.
	Forced Class = "forced"
	// Clamped: the caller's value is kept up to the profile's ceiling (or
	// down to its floor), never raised.
	Clamped Class = "clamped"
	// Allowlisted: a value on the rule's allowlist is kept; any other is
	// removed or refused.
	Allowlisted Class = "allowlisted"
	// Denied: any value other than the field's zero value is refused.
	Denied Class = "refused"
	// Contained: the workload's own choice, which acts only inside the
	// boundary the other fields hold (its argv, its terminal, its hostname
	// in its own UTS namespace).
	Contained Class = "contained"
)

// FieldClass is the classification of one field path. Paths use the JSON
// names of config.json; "[]" stands for every element of a list and "{}"
// for every value of a map.
type FieldClass struct {
	Path  string `json:"path"`
	Class Class  `json:"class"`
	// Rule is the specs.Rules entry that enforces the class; spec_fields
	// itself for Denied fields.
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// Fields classifies every field of runtime-spec v1.3.0. A Denied entry
// also covers everything below it; any other class is given per leaf, so a
// field added below a forced or allowlisted struct has no class until
// someone decides one.
var Fields = []FieldClass{
	{"ociVersion", Contained, "spec_fields", "the version the engine wrote; runc's validator checks it"},

	{"process.terminal", Contained, "spec_fields", "a pty for the workload"},
	{"process.consoleSize.height", Contained, "spec_fields", "the workload's terminal size"},
	{"process.consoleSize.width", Contained, "spec_fields", "the workload's terminal size"},
	{"process.user.uid", Clamped, "user", "ids outside the profile's range (root included) become the profile's uid"},
	{"process.user.gid", Clamped, "user", "ids outside the profile's range (root included) become the profile's gid"},
	{"process.user.umask", Contained, "spec_fields", "permissions of the workload's own new files"},
	{"process.user.additionalGids[]", Allowlisted, "user", "supplementary groups outside the profile's range are dropped: a group can open host files"},
	{"process.user.username", Denied, "spec_fields", "Windows only"},
	{"process.args[]", Contained, "spec_fields", "the workload's command, run inside the boundary"},
	{"process.commandLine", Denied, "spec_fields", "Windows only"},
	{"process.env[]", Allowlisted, "environment", "variables whose name or value looks like a credential are removed"},
	{"process.cwd", Allowlisted, "cwd", "an absolute path that does not resolve (through the image's or a bind's links) under /proc, /dev or /sys"},
	{"process.capabilities.bounding[]", Forced, "capabilities", "empty"},
	{"process.capabilities.effective[]", Forced, "capabilities", "empty"},
	{"process.capabilities.inheritable[]", Forced, "capabilities", "empty"},
	{"process.capabilities.permitted[]", Forced, "capabilities", "empty"},
	{"process.capabilities.ambient[]", Forced, "capabilities", "empty"},
	{"process.rlimits[].type", Allowlisted, "rlimits", "only limits on the allowlist; RLIMIT_RTPRIO and RLIMIT_RTTIME are 0"},
	{"process.rlimits[].hard", Clamped, "rlimits", "each limit has a ceiling"},
	{"process.rlimits[].soft", Clamped, "rlimits", "each limit has a ceiling"},
	{"process.noNewPrivileges", Forced, "no_new_privileges", "true"},
	{"process.apparmorProfile", Allowlisted, "security_labels", "the engines' confining profiles only; never unconfined"},
	{"process.oomScoreAdj", Clamped, "oom_score_adj", "raised to at least 500; above 1000 refused"},
	{"process.scheduler.policy", Allowlisted, "scheduling", "SCHED_OTHER, SCHED_BATCH or SCHED_IDLE; no realtime or deadline policy"},
	{"process.scheduler.nice", Clamped, "scheduling", "not below 0"},
	{"process.scheduler.priority", Denied, "spec_fields", "a static priority exists only for realtime policies"},
	{"process.scheduler.flags[]", Denied, "spec_fields", "scheduler flags change how the host schedules (utilisation clamps, reclaim)"},
	{"process.scheduler.runtime", Denied, "spec_fields", "deadline scheduling"},
	{"process.scheduler.deadline", Denied, "spec_fields", "deadline scheduling"},
	{"process.scheduler.period", Denied, "spec_fields", "deadline scheduling"},
	{"process.selinuxLabel", Allowlisted, "security_labels", "only container types; never a privileged or unconfined one"},
	{"process.ioPriority.class", Allowlisted, "scheduling", "best-effort or idle; no realtime I/O class"},
	{"process.ioPriority.priority", Contained, "spec_fields", "a level within the allowed class"},
	{"process.execCPUAffinity.initial", Contained, "spec_fields", "narrows the CPUs an exec starts on"},
	{"process.execCPUAffinity.final", Contained, "spec_fields", "narrows the CPUs an exec runs on"},

	{"root.path", Allowlisted, "root", "inside the bundle, judged by what is mounted there (plain storage or containerd's snapshots, no other container's writable layer), or the engine's own layer for this container"},
	{"root.readonly", Forced, "readonly_rootfs", "true"},
	{"hostname", Contained, "sysctl", "set in the container's own UTS namespace; refused in a joined one"},
	{"domainname", Contained, "sysctl", "set in the container's own UTS namespace; refused in a joined one"},

	{"mounts[].destination", Allowlisted, "mounts", "kernel filesystems only at their own place (proc at /proc, sysfs at /sys); below /dev only devpts at /dev/pts, mqueue at /dev/mqueue, tmpfs or bind at /dev/shm, bind at /dev/termination-log"},
	{"mounts[].type", Allowlisted, "mounts", "bind, tmpfs, proc, sysfs, mqueue, devpts, cgroup"},
	{"mounts[].source", Allowlisted, "host_mounts", "a bind source below the profile's bind_roots, or the engine's own file for this container, on plain storage; never a socket or FIFO or a tree holding one"},
	{"mounts[].options[]", Allowlisted, "mounts", "per filesystem type; binds ro,nosuid,nodev and not recursive, tmpfs noexec,nosuid,nodev with a size"},
	{"mounts[].uidMappings", Denied, "spec_fields", "an idmapped mount makes host files appear owned by the sandbox"},
	{"mounts[].gidMappings", Denied, "spec_fields", "an idmapped mount makes host files appear owned by the sandbox"},

	{"hooks", Allowlisted, "hooks", "hooks run on the host as root: only the operator's hooks_allowed, and Docker's libnetwork-setkey with the arguments dockerd writes"},
	{"annotations{}", Allowlisted, "annotations", "only keys on the allowlist reach the backend; none that joins or relaxes"},

	{"linux.uidMappings", Denied, "spec_fields", "user namespaces are not part of the profile"},
	{"linux.gidMappings", Denied, "spec_fields", "user namespaces are not part of the profile"},
	{"linux.sysctl{}", Allowlisted, "sysctl", "only sysctls of a namespace the container has of its own"},
	{"linux.resources.devices[].allow", Forced, "devices", "deny-all first, then the allowed nodes"},
	{"linux.resources.devices[].type", Forced, "devices", "deny-all first, then the allowed nodes"},
	{"linux.resources.devices[].major", Forced, "devices", "deny-all first, then the allowed nodes"},
	{"linux.resources.devices[].minor", Forced, "devices", "deny-all first, then the allowed nodes"},
	{"linux.resources.devices[].access", Forced, "devices", "deny-all first, then the allowed nodes"},
	{"linux.resources.memory.limit", Clamped, "memory", "at most the profile's memory"},
	{"linux.resources.memory.reservation", Clamped, "memory", "at most the limit"},
	{"linux.resources.memory.swap", Forced, "memory", "equal to the limit: no swap"},
	{"linux.resources.memory.kernel", Denied, "spec_fields", "kernel memory limits are deprecated and fail on current kernels"},
	{"linux.resources.memory.kernelTCP", Denied, "spec_fields", "kernel memory limits are deprecated"},
	{"linux.resources.memory.swappiness", Contained, "spec_fields", "how the container's own cgroup reclaims"},
	{"linux.resources.memory.disableOOMKiller", Forced, "memory", "false: the memory limit ends in an OOM kill, not a hang"},
	{"linux.resources.memory.useHierarchy", Contained, "spec_fields", "accounting of the container's own cgroup"},
	{"linux.resources.memory.checkBeforeUpdate", Contained, "spec_fields", "an update check that only refuses"},
	{"linux.resources.cpu.shares", Clamped, "cpu", "at most 1024 per CPU of the profile"},
	{"linux.resources.cpu.quota", Clamped, "cpu", "at most the profile's cpus"},
	{"linux.resources.cpu.burst", Denied, "spec_fields", "burst lets the container run past its quota"},
	{"linux.resources.cpu.period", Clamped, "cpu", "at most 1 s, so the quota bites"},
	{"linux.resources.cpu.realtimeRuntime", Denied, "spec_fields", "no realtime CPU time"},
	{"linux.resources.cpu.realtimePeriod", Denied, "spec_fields", "no realtime CPU time"},
	{"linux.resources.cpu.cpus", Contained, "spec_fields", "narrows the CPUs the container runs on"},
	{"linux.resources.cpu.mems", Contained, "spec_fields", "narrows the memory nodes the container uses"},
	{"linux.resources.cpu.idle", Contained, "spec_fields", "lowers the container's own priority"},
	{"linux.resources.pids.limit", Clamped, "pids", "at most the profile's pids_limit"},
	{"linux.resources.blockIO.weight", Clamped, "blkio", "at most 19: io.weight 91 after runc's conversion on cgroup v2, below every default weight"},
	{"linux.resources.blockIO.leafWeight", Clamped, "blkio", "at most 100, the lowest default weight (BFQ's)"},
	{"linux.resources.blockIO.weightDevice[].major", Contained, "spec_fields", "a relative weight on one device"},
	{"linux.resources.blockIO.weightDevice[].minor", Contained, "spec_fields", "a relative weight on one device"},
	{"linux.resources.blockIO.weightDevice[].weight", Clamped, "blkio", "at most 100, the lowest default weight (BFQ's)"},
	{"linux.resources.blockIO.weightDevice[].leafWeight", Clamped, "blkio", "at most 100, the lowest default weight (BFQ's)"},
	{"linux.resources.blockIO.throttleReadBpsDevice[].major", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleReadBpsDevice[].minor", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleReadBpsDevice[].rate", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleWriteBpsDevice[].major", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleWriteBpsDevice[].minor", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleWriteBpsDevice[].rate", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleReadIOPSDevice[].major", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleReadIOPSDevice[].minor", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleReadIOPSDevice[].rate", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleWriteIOPSDevice[].major", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleWriteIOPSDevice[].minor", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.blockIO.throttleWriteIOPSDevice[].rate", Contained, "spec_fields", "a throttle only slows the container"},
	{"linux.resources.hugepageLimits[].pageSize", Allowlisted, "hugetlb", "only the host's huge page sizes: the backend makes a cgroup file name of it"},
	{"linux.resources.hugepageLimits[].limit", Contained, "spec_fields", "a hugetlb limit only restricts"},
	{"linux.resources.network", Denied, "spec_fields", "a net_cls class id or net_prio priority marks the container's traffic for the host's firewall and queues"},
	{"linux.resources.rdma{}.hcaHandles", Contained, "spec_fields", "an RDMA limit only restricts"},
	{"linux.resources.rdma{}.hcaObjects", Contained, "spec_fields", "an RDMA limit only restricts"},
	{"linux.resources.unified", Denied, "spec_fields", "raw cgroup v2 files would bypass the profile's ceilings; use the typed resources"},
	{"linux.cgroupsPath", Allowlisted, "cgroups_path", "a new cgroup: never one that exists already or lies below one holding processes, never the root, at most 16 groups deep"},
	{"linux.namespaces[].type", Allowlisted, "namespaces", "pid, network, mount, ipc, uts, cgroup; no user or time namespace"},
	{"linux.namespaces[].path", Allowlisted, "namespaces", "only a namespace of this container's own pod sandbox"},
	{"linux.devices[].path", Allowlisted, "devices", "only null, zero, full, random, urandom, tty, ptmx"},
	{"linux.devices[].type", Allowlisted, "devices", "only null, zero, full, random, urandom, tty, ptmx"},
	{"linux.devices[].major", Allowlisted, "devices", "only null, zero, full, random, urandom, tty, ptmx"},
	{"linux.devices[].minor", Allowlisted, "devices", "only null, zero, full, random, urandom, tty, ptmx"},
	{"linux.devices[].fileMode", Contained, "spec_fields", "permissions of an allowed node"},
	{"linux.devices[].uid", Contained, "spec_fields", "owner of an allowed node"},
	{"linux.devices[].gid", Contained, "spec_fields", "group of an allowed node"},
	{"linux.netDevices", Denied, "spec_fields", "moving a host network device into the sandbox gives it a network"},
	{"linux.seccomp.defaultAction", Forced, "seccomp", "the profile's default-deny filter"},
	{"linux.seccomp.defaultErrnoRet", Forced, "seccomp", "the profile's default-deny filter"},
	{"linux.seccomp.architectures[]", Forced, "seccomp", "the native ABIs only"},
	{"linux.seccomp.flags[]", Forced, "seccomp", "the profile's default-deny filter"},
	{"linux.seccomp.listenerPath", Forced, "seccomp", "no user-space notifier: it would decide syscalls outside the kernel"},
	{"linux.seccomp.listenerMetadata", Forced, "seccomp", "no user-space notifier"},
	{"linux.seccomp.syscalls[].names[]", Clamped, "seccomp", "the profile's default-deny filter, narrowed where the caller's denies more"},
	{"linux.seccomp.syscalls[].action", Clamped, "seccomp", "the profile's default-deny filter, narrowed where the caller's denies more"},
	{"linux.seccomp.syscalls[].errnoRet", Clamped, "seccomp", "the profile's default-deny filter, narrowed where the caller's denies more"},
	{"linux.seccomp.syscalls[].args[].index", Clamped, "seccomp", "the profile's default-deny filter, narrowed where the caller's denies more"},
	{"linux.seccomp.syscalls[].args[].value", Clamped, "seccomp", "the profile's default-deny filter, narrowed where the caller's denies more"},
	{"linux.seccomp.syscalls[].args[].valueTwo", Clamped, "seccomp", "the profile's default-deny filter, narrowed where the caller's denies more"},
	{"linux.seccomp.syscalls[].args[].op", Clamped, "seccomp", "the profile's default-deny filter, narrowed where the caller's denies more"},
	{"linux.rootfsPropagation", Allowlisted, "mounts", "private or slave: nothing the container mounts reaches the host"},
	{"linux.maskedPaths[]", Clamped, "masked_paths", "Docker's masked paths are always there; the caller may add more"},
	{"linux.readonlyPaths[]", Clamped, "masked_paths", "Docker's read-only paths are always there; the caller may add more"},
	{"linux.mountLabel", Allowlisted, "security_labels", "only container types; never a privileged or unconfined one"},
	{"linux.intelRdt", Denied, "spec_fields", "cache and memory-bandwidth classes are host-wide resources"},
	{"linux.memoryPolicy", Denied, "spec_fields", "NUMA policy is not part of the profile"},
	{"linux.personality.domain", Allowlisted, "spec_fields", "LINUX only: LINUX32 changes what uname and the ABI report"},
	{"linux.personality.flags[]", Denied, "spec_fields", "personality flags such as ADDR_NO_RANDOMIZE weaken the workload's own hardening"},
	{"linux.timeOffsets", Denied, "spec_fields", "time namespaces are not part of the profile"},

	{"solaris", Denied, "spec_fields", "not a Linux container"},
	{"windows", Denied, "spec_fields", "not a Linux container"},
	{"vm", Denied, "spec_fields", "bulkhead's backends run Linux containers, not virtual machines"},
	{"zos", Denied, "spec_fields", "not a Linux container"},
	{"freebsd", Denied, "spec_fields", "not a Linux container"},
}

// judgedWhole are the non-leaf entries whose rule judges each element as
// a whole: a hook is allowed by its executable, whatever else it carries.
var judgedWhole = map[string]bool{"hooks": true}

var fieldIndex = func() map[string]FieldClass {
	m := map[string]FieldClass{}
	for _, f := range Fields {
		m[f.Path] = f
	}
	return m
}()

// Classify returns the class of a leaf path: its own entry, or the Denied
// or judgedWhole entry above it. ok is false for a path no entry covers.
func Classify(path string) (FieldClass, bool) {
	if f, ok := fieldIndex[path]; ok {
		return f, true
	}
	for p := path; ; {
		i := strings.LastIndexAny(p, ".[{")
		if i < 0 {
			return FieldClass{}, false
		}
		p = p[:i]
		if f, ok := fieldIndex[p]; ok && (f.Class == Denied || judgedWhole[p]) {
			return f, true
		}
	}
}

// jsonName is a struct field's member name in config.json, "" for one
// that is not encoded, and whether it is embedded without a name of its
// own (its fields then belong to the parent, as encoding/json has it).
func jsonName(f reflect.StructField) (name string, embedded bool) {
	tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if tag == "-" || !f.IsExported() && !f.Anonymous {
		return "", false
	}
	if f.Anonymous && tag == "" {
		return "", true
	}
	if tag == "" {
		tag = f.Name
	}
	return tag, false
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// LeafPaths lists every leaf path of type t, in the notation of Fields.
func LeafPaths(t reflect.Type) []string {
	var out []string
	leafPaths(t, "", &out)
	return out
}

func leafPaths(t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, embedded := jsonName(f)
			switch {
			case embedded:
				leafPaths(f.Type, path, out)
			case name != "":
				leafPaths(f.Type, joinPath(path, name), out)
			}
		}
	case reflect.Slice, reflect.Array:
		leafPaths(t.Elem(), path+"[]", out)
	case reflect.Map:
		leafPaths(t.Elem(), path+"{}", out)
	default:
		*out = append(*out, path)
	}
}

// setLeaf is one leaf of a value that is not its zero value.
type setLeaf struct {
	Path  string // the Fields notation
	Where string // the concrete place, with indexes and keys
	Value reflect.Value
}

// setLeaves lists the leaves of v that hold something other than their
// zero value: a field the caller did not set cannot do anything.
func setLeaves(v reflect.Value, path, where string, out *[]setLeaf) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, embedded := jsonName(t.Field(i))
			switch {
			case embedded:
				setLeaves(v.Field(i), path, where, out)
			case name != "":
				setLeaves(v.Field(i), joinPath(path, name), joinPath(where, name), out)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			setLeaves(v.Index(i), path+"[]", where+"["+strconv.Itoa(i)+"]", out)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			setLeaves(iter.Value(), path+"{}", where+"["+iter.Key().String()+"]", out)
		}
	default:
		if !v.IsZero() {
			*out = append(*out, setLeaf{Path: path, Where: where, Value: v})
		}
	}
}
