package specs

import (
	"errors"
	"path"
	"slices"
)

// CgroupSharedAncestor returns the first group above the cgroupfs path p
// (the root aside) whose limits a container there would share with
// processes that are not its own, or "". A group above holds its
// children's processes within its limits (pids, memory, cpu), so a
// caller who names a new group below another tenant's group or pod takes
// from that one's limits, and can exhaust them. Such a group is accepted
// only when it is one of the profile's cgroup_parents (where the engines
// put every tenant's containers side by side), holds no process at all
// (a parent the caller made for this container, a pod's group before its
// sandbox starts), or is the group of this container's own pod. The rule
// and the create's re-check under the cgroup lock both ask this, so check
// and create agree.
func CgroupSharedAncestor(c *Context, p string) (string, error) {
	if c.CgroupPopulated == nil {
		return "", errors.New("whether the groups above it hold processes cannot be checked here")
	}
	pod := ""
	if c.PodCgroupParent != nil {
		pod = c.PodCgroupParent()
	}
	var above []string
	for a := path.Dir(p); a != "/" && a != "."; a = path.Dir(a) {
		above = append(above, a)
	}
	slices.Reverse(above)
	for _, a := range above {
		if a == pod || slices.Contains(c.Profile.CgroupParents, a) {
			continue
		}
		busy, err := c.CgroupPopulated(a)
		if err != nil {
			return "", err
		}
		if busy {
			return a, nil
		}
	}
	return "", nil
}
