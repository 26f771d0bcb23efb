package specs

import rspec "github.com/opencontainers/runtime-spec/specs-go"

// requiredNamespaces are new for every container; the network namespace
// is the network rule's.
var requiredNamespaces = []rspec.LinuxNamespaceType{
	rspec.PIDNamespace, rspec.IPCNamespace, rspec.UTSNamespace, rspec.MountNamespace, rspec.CgroupNamespace,
}

// podSharedNamespaces are those a pod's containers may join from its
// sandbox, as CRI shares them. A mount namespace is never shared: runc
// would mount the container's root and pivot into it inside the other
// namespace, whoever runs there; nor a cgroup namespace, which CRI makes
// per container.
var podSharedNamespaces = []rspec.LinuxNamespaceType{
	rspec.PIDNamespace, rspec.IPCNamespace, rspec.UTSNamespace, rspec.NetworkNamespace,
}

func ruleNamespaces(c *Context, s *rspec.Spec) []Decision {
	l := ensureLinux(s)
	var ds []Decision
	for _, ns := range l.Namespaces {
		if ns.Type == rspec.NetworkNamespace {
			continue
		}
		if !hasNamespaceType(requiredNamespaces, ns.Type) {
			ds = append(ds, Decision{Rule: "namespaces", Field: "linux.namespaces[" + string(ns.Type) + "]", Action: Refused,
				Before: nsString(ns), Layer: LayerNone,
				Why: "only pid, network, mount, ipc, uts and cgroup namespaces are part of the profile; a user namespace gives the job every capability over what it owns there; remove it"})
			continue
		}
		d := Decision{Rule: "namespaces", Field: "linux.namespaces[" + string(ns.Type) + "]", Action: Kept,
			Before: nsString(ns), After: nsString(ns), Layer: LayerNamespaces}
		switch {
		case ns.Path == "":
			d.Why = "a new namespace of its own"
		case !hasNamespaceType(podSharedNamespaces, ns.Type):
			d.Action, d.After = Refused, ""
			d.Why = "a container never joins another's " + string(ns.Type) + " namespace (" + ns.Path +
				"): the backend would set up this container's root in it; remove the path"
		case c.joinable(ns.Type, ns.Path):
			d.Why = "the pod sandbox's namespace, which bulkhead created under this policy"
		default:
			d.Action, d.After = Refused, ""
			d.Why = "joining the " + string(ns.Type) + " namespace at " + ns.Path +
				" shares it with a process other than this pod's running sandbox under this policy, or one in the host's namespace " +
				"(runsc's sandbox process runs in the host's pid namespace); remove the path, or run the pod's sandbox under bulkhead " +
				"(on runsc, without sharing its pid namespace)"
		}
		ds = append(ds, d)
	}
	for _, t := range requiredNamespaces {
		if namespaceIndex(l, t) < 0 {
			l.Namespaces = append(l.Namespaces, rspec.LinuxNamespace{Type: t})
			ds = append(ds, Decision{Rule: "namespaces", Field: "linux.namespaces[" + string(t) + "]",
				Action: Added, Before: "host namespace", After: "new namespace", Layer: LayerNamespaces,
				Why: "the host's " + string(t) + " namespace would be shared with the sandbox"})
		}
	}
	return ds
}

func nsString(ns rspec.LinuxNamespace) string {
	if ns.Path == "" {
		return "new namespace"
	}
	return ns.Path
}

func hasNamespaceType(types []rspec.LinuxNamespaceType, t rspec.LinuxNamespaceType) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}
