package ctrtest

import (
	"fmt"
	"strings"

	"bulkhead.dev/bulkhead/specs"
)

// BulkheadConfig is the bulkhead configuration of the tests' private
// containerds: ctr puts a container at /<namespace>/<id>, so the test
// namespace's group holds every test container side by side, and those
// of other test runs on the host, like the engines' grouping parents. It
// is declared one for each built-in profile a test may run under.
func BulkheadConfig() string {
	var b strings.Builder
	b.WriteString("# Written by the containerd tests.\n")
	for _, profile := range []string{"default", "gvisor", "tests", "formatter", "install"} {
		fmt.Fprintf(&b, "\n[profiles.%s]\n%s", profile, CgroupParents())
	}
	return b.String()
}

// CgroupParents is the cgroup_parents line of a profile under which ctr
// runs test containers: the test namespace's group and the defaults.
func CgroupParents() string {
	parents := append([]string{"/" + Namespace}, specs.DefaultCgroupParents...)
	quoted := make([]string, len(parents))
	for i, p := range parents {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("cgroup_parents = [%s]\n", strings.Join(quoted, ", "))
}
