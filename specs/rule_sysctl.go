package specs

import (
	"slices"
	"sort"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ruleSysctl keeps only sysctls that the kernel scopes to a namespace the
// container has of its own; any other key would be written to the host.
// The hostname and domainname are the UTS namespace's kernel.hostname and
// kernel.domainname, and are judged alike.
func ruleSysctl(c *Context, s *rspec.Spec) []Decision {
	l := ensureLinux(s)
	keys := make([]string, 0, len(l.Sysctl))
	for k := range l.Sysctl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ds []Decision
	for _, k := range keys {
		d := Decision{Rule: "sysctl", Field: "linux.sysctl[" + k + "]", Action: Kept, Before: l.Sysctl[k],
			After: l.Sysctl[k], Layer: LayerNamespaces}
		name := strings.ReplaceAll(k, "/", ".")
		ns, ok := sysctlNamespace(name)
		_, dotted := l.Sysctl[name]
		switch {
		case name != k && dotted:
			// The backend writes both to one file, in no set order: the
			// value a rule judged or set under the dotted name would
			// lose half the time.
			d.Action, d.After = Refused, ""
			d.Why = "sysctl " + k + " is " + name + " spelt with slashes, which the configuration sets too; set it once, as " + name
		case slices.Contains(strings.Split(name, "."), ""):
			// A backend writes the key as a path below /proc/sys, each
			// dot a slash: net/../kernel/core_pattern starts as a network
			// sysctl and names the host's core_pattern.
			d.Action, d.After = Refused, ""
			d.Why = "sysctl " + k + " has an empty, . or .. part, which a backend would resolve as a path to another sysctl; name it plainly, its parts joined by single dots"
		case !ok:
			d.Action, d.After = Refused, ""
			d.Why = "sysctl " + k + " is not namespaced: it would change the host kernel; remove it from the container's configuration"
		case !ownNamespace(l, ns):
			d.Action, d.After = Refused, ""
			d.Why = "sysctl " + k + " belongs to the " + string(ns) + " namespace, which this container shares; remove it or give the container its own " + string(ns) + " namespace"
		default:
			d.Why = "scoped to the container's own " + string(ns) + " namespace"
			if name != k {
				// One spelling for the rules after this one to read.
				delete(l.Sysctl, k)
				l.Sysctl[name] = d.After
				d.Action, d.After = Tightened, name+"="+d.After
				d.Why += "; written as " + name
			}
		}
		ds = append(ds, d)
	}
	for _, f := range []struct {
		field string
		value *string
	}{{"hostname", &s.Hostname}, {"domainname", &s.Domainname}} {
		if *f.value != "" && !ownNamespace(l, rspec.UTSNamespace) {
			ds = append(ds, Decision{Rule: "sysctl", Field: f.field, Action: Refused, Before: *f.value, Layer: LayerNone,
				Why: f.field + " is written into the uts namespace, which this container joins or shares; set it on the pod's sandbox, or remove it"})
		}
	}
	return ds
}

func sysctlNamespace(k string) (rspec.LinuxNamespaceType, bool) {
	switch {
	case strings.HasPrefix(k, "net."):
		return rspec.NetworkNamespace, true
	case strings.HasPrefix(k, "kernel.shm"), strings.HasPrefix(k, "kernel.msg"), k == "kernel.sem",
		strings.HasPrefix(k, "fs.mqueue."):
		return rspec.IPCNamespace, true
	case k == "kernel.hostname", k == "kernel.domainname":
		return rspec.UTSNamespace, true
	}
	return "", false
}

// ownNamespace: a new namespace of the container's own. A pod sandbox's,
// even one the container may join, is not: it is named by its init's
// pid, which the backend resolves only when it joins, and the backend
// writes sysctls and the hostname before bulkhead can verify which
// namespace that was. CRI sets them on the sandbox, never on a member.
func ownNamespace(l *rspec.Linux, t rspec.LinuxNamespaceType) bool {
	found := false
	for _, ns := range l.Namespaces {
		if ns.Type != t {
			continue
		}
		if ns.Path != "" {
			return false
		}
		found = true
	}
	return found
}
