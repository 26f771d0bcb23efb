package runtime

import (
	"fmt"
	"slices"
	"strings"

	"bulkhead.dev/bulkhead/cgroups"
)

// checkSubCgroups refuses an `exec --cgroup` that leaves the container's
// cgroup. runc joins the value to the container's group and accepts
// anything whose path starts with that group's as text, so `../NAME-x`
// lands in a sibling group such as a host service's /NAME-x, outside the
// container's pids, memory and cpu limits.
func checkSubCgroups(values []string) error {
	for _, v := range values {
		sub := v
		if i := strings.IndexByte(v, ':'); i >= 0 {
			sub = v[i+1:]
		}
		if slices.Contains(strings.Split(sub, "/"), "..") {
			return fmt.Errorf("exec --cgroup %q: a process runs in the container's cgroup or below it, never beside or above it", v)
		}
	}
	return nil
}

// verifyExecCgroup holds an exec'd process to the container's cgroup, in
// every hierarchy: whatever the backend made of its flags, a process
// elsewhere escapes the container's limits and its `kill --all`.
func verifyExecCgroup(pid, initPid int) error {
	if initPid <= 0 {
		return fmt.Errorf("cgroup: no init pid recorded to compare the exec'd process's cgroup with")
	}
	initGroups, err := cgroups.MembershipOf(initPid)
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	got, err := cgroups.MembershipOf(pid)
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	if err := got.Within(initGroups); err != nil {
		return fmt.Errorf("cgroup: process %d is outside the container's cgroup: %w", pid, err)
	}
	return nil
}
