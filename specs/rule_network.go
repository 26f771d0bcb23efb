package specs

import rspec "github.com/opencontainers/runtime-spec/specs-go"

func ruleNetwork(c *Context, s *rspec.Spec) []Decision {
	const rule, field = "network", "linux.namespaces[network]"
	l := ensureLinux(s)
	if c.Profile.Network != NetworkNone {
		i := namespaceIndex(l, rspec.NetworkNamespace)
		before := "host network (no namespace)"
		if i >= 0 {
			before = nsString(l.Namespaces[i])
		}
		return []Decision{notEnforced(rule, field, before)}
	}
	const why = "a new network namespace has only loopback: every other destination is unreachable (ENETUNREACH)"
	var ds []Decision
	// A second entry would decide which namespace runc joins; keep one.
	i := namespaceIndex(l, rspec.NetworkNamespace)
	for j := len(l.Namespaces) - 1; j > i && i >= 0; j-- {
		if l.Namespaces[j].Type == rspec.NetworkNamespace {
			ds = append(ds, Decision{Rule: rule, Field: field, Action: Removed, Before: nsString(l.Namespaces[j]),
				Layer: LayerNetns, Why: "duplicate network namespace entry"})
			l.Namespaces = append(l.Namespaces[:j], l.Namespaces[j+1:]...)
		}
	}
	if i < 0 && s.Annotations[AnnotationCRIContainerType] == "sandbox" {
		// A pod the engine holds on the host's network it goes on serving
		// there, whatever namespace its processes get: port-forward,
		// hostPort and probes reached the host's loopback services.
		return append(ds, Decision{Rule: rule, Field: field, Action: Refused, Before: "host network (no namespace)",
			Layer: LayerNone, Why: "a pod sandbox on the host's network: the engine would go on acting for the pod in the host's namespace " +
				"(port-forward and probes reach the host's loopback), not in the loopback-only one bulkhead gives it; run the pod without hostNetwork"})
	}
	if i < 0 {
		l.Namespaces = append(l.Namespaces, rspec.LinuxNamespace{Type: rspec.NetworkNamespace})
		return append(ds, Decision{Rule: rule, Field: field, Action: Added, Before: "host network (no namespace)",
			After: "new namespace", Layer: LayerNetns, Why: why})
	}
	ns := &l.Namespaces[i]
	switch {
	case ns.Path == "":
		return append(ds, Decision{Rule: rule, Field: field, Action: Kept, Before: "new namespace",
			After: "new namespace", Layer: LayerNetns, Why: why})
	case c.joinable(ns.Type, ns.Path):
		return append(ds, Decision{Rule: rule, Field: field, Action: Kept, Before: ns.Path, After: ns.Path,
			Layer: LayerNetns, Why: "the pod sandbox's namespace, which bulkhead created under this policy"})
	}
	before := ns.Path
	ns.Path = ""
	return append(ds, Decision{Rule: rule, Field: field, Action: Tightened, Before: before, After: "new namespace",
		Layer: LayerNetns, Why: "joining " + before + " would share another network stack; " + why})
}

func namespaceIndex(l *rspec.Linux, t rspec.LinuxNamespaceType) int {
	for i, ns := range l.Namespaces {
		if ns.Type == t {
			return i
		}
	}
	return -1
}
