package specs

import (
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ruleMountOrder puts every mount after the mounts of its parent
// directories. runc mounts in the order of the spec, so a mount at /tmp
// that comes after the caller's /tmp/data hides it; the tmpfs mounts the
// rules add are appended, and would hide a caller's deeper bind. The
// engines sort their own lists the same way before they hand them over
// (containerd's and moby's orderedMounts: by the number of path
// components, stable), so two mounts at one depth, and two at one
// destination, keep the caller's order and the later still wins.
func ruleMountOrder(c *Context, s *rspec.Spec) []Decision {
	if slices.IsSortedFunc(s.Mounts, compareMountDepth) {
		return nil
	}
	before := mountDestinations(s.Mounts)
	slices.SortStableFunc(s.Mounts, compareMountDepth)
	return []Decision{{Rule: "mount_order", Field: "mounts", Action: Tightened,
		Before: before, After: mountDestinations(s.Mounts), Layer: LayerNone,
		Why: "runc mounts in order: a parent mounted after its child hides it, so parents come first"}}
}

func compareMountDepth(a, b rspec.Mount) int {
	return mountDepth(a.Destination) - mountDepth(b.Destination)
}

// mountDepth is the number of components of a destination; "/" has none.
func mountDepth(dst string) int {
	p := cleanAbs(dst)
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

func mountDestinations(ms []rspec.Mount) string {
	dsts := make([]string, len(ms))
	for i, m := range ms {
		dsts[i] = m.Destination
	}
	return fmtList(dsts)
}
