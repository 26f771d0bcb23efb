package specs

import (
	"strconv"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// MaxMounts bounds the caller's mounts. Each is placed through the view
// of those before it and judged against the others, at create, at check
// and in create's verification, by root outside any cgroup: a caller's
// config.json must not choose how long create computes (8,000 tmpfs
// mounts took 3 s here, and the cost grows with the square). Engines
// hand a container tens of mounts.
const MaxMounts = 1024

// tooManyMounts is the refusal of a spec with more than MaxMounts
// mounts, judged before any rule runs.
func tooManyMounts(s *rspec.Spec) (Decision, bool) {
	if len(s.Mounts) <= MaxMounts {
		return Decision{}, false
	}
	return Decision{Rule: "mounts", Field: "mounts", Action: Refused, Before: strconv.Itoa(len(s.Mounts)) + " mounts", Layer: LayerNone,
		Why: "at most " + strconv.Itoa(MaxMounts) + " mounts: each is judged against the others, as root outside any cgroup, so their number " +
			"must not choose how long create computes; mount fewer (one directory holding what several binds would)"}, true
}
