package backend

import (
	"errors"
	"slices"
	"strings"
)

// ErrGVisorFlags marks a configured runsc whose args GVisorFlagRefusal
// refuses.
var ErrGVisorFlags = errors.New("runsc flags that open the sandbox's boundary")

// gvisorFlags are the runsc global flags that leave a sandbox's boundary
// as bulkhead plans and verifies it, with the values each may take (nil:
// any; boolean flags take true or false, or no value). Every other flag
// is refused: in the configuration's backend args, and in a running
// sandbox's own command line, which create's verification reads. runsc
// renders every flag that differs from its default there, so a flag an
// operator's args or a wrapper added is seen: --host-uds=all let a job
// connect, as uid 65534, to host sockets, where runsc answered as root,
// and every check said ok.
var gvisorFlags = map[string][]string{
	// Where runsc keeps state and writes its logs: host files of root's.
	// Not strace's or the packet logs: they write what the job does, its
	// data too, to the host without a bound (200 MB written to /dev/null
	// made an 811 MB log), readable by others.
	"root": nil, "log": nil, "log-format": nil, "debug": boolValues, "debug-log": nil, "debug-log-format": nil,
	"panic-log": nil, "alsologtostderr": boolValues, "debug-command": nil,
	// The same logs as descriptors runsc opened on the host for the sandbox.
	"log-fd": nil, "debug-log-fd": nil, "panic-log-fd": nil, "debug-to-user-log": boolValues,
	"traceback": nil, "ref-leak-mode": nil,
	// How the Sentry runs and reads its files: gVisor's own choices.
	"platform": {"ptrace", "kvm", "systrap"}, "file-access": {"exclusive", "shared"},
	"file-access-mounts": {"exclusive", "shared"}, "directfs": boolValues, "lisafs": boolValues, "vfs2": boolValues,
	"dcache": nil, "watchdog-action": nil, "panic-signal": nil, "cpu-num-from-quota": boolValues,
	// What bulkhead passes itself: the boundary. An overlay takes the
	// job's writes (a workspace's too) out of the capped layers bulkhead
	// exports into memory or a host file no cgroup counts, and profiling
	// loosens the sandbox's own seccomp filter on the host.
	"network": {"none"}, "oci-seccomp": {"true"}, "rootless": {"false"}, "systemd-cgroup": boolValues,
	"overlay2": {"none"}, "overlay": {"false"}, "profile": {"false"},
}

var boolValues = []string{"true", "false"}

// isBoolean tells whether allowed are values of a boolean flag.
func isBoolean(allowed []string) bool {
	return len(allowed) > 0 && !slices.ContainsFunc(allowed, func(v string) bool { return v != "true" && v != "false" })
}

// GVisorFlagRefusal is why a runsc global flag of args is not one
// gvisorFlags allows, "" when each is. A value goes with its flag
// (--name=value): a separate word could be read as either.
func GVisorFlagRefusal(args []string) string {
	for _, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		allowed, known := gvisorFlags[name]
		if !hasValue && isBoolean(allowed) {
			// A boolean flag alone is set.
			value, hasValue = "true", true
		}
		switch {
		case !strings.HasPrefix(a, "-"):
			return a + " is no flag: give each runsc flag as --name=value"
		case !known:
			return a + " is not a runsc flag bulkhead knows to keep the sandbox's boundary (it allows " + strings.Join(sortedFlagNames(), ", ") + ")"
		case !hasValue && allowed != nil:
			return a + " takes a value: give it as --" + name + "=" + allowed[0]
		case hasValue && allowed != nil && !slices.Contains(allowed, value):
			return a + ": --" + name + " may be only " + strings.Join(allowed, " or ")
		}
	}
	return ""
}

func sortedFlagNames() []string {
	var names []string
	for n := range gvisorFlags {
		names = append(names, "--"+n)
	}
	slices.Sort(names)
	return names
}
