package specs

import (
	"strconv"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// MaxListEntries bounds the caller's lists whose entries are judged
// against one another or looked up one by one in the container: each
// mount is placed through the view of those before it, and each masked
// and read-only path is looked up in the running container, at create,
// at check and in create's verification, by root outside any cgroup. A
// caller's config.json must not choose how long create computes (8,000
// tmpfs mounts took 3 s here, 400,000 masked paths two minutes). Engines
// hand a container tens of each.
const MaxListEntries = 1024

// boundedLists are the lists MaxListEntries bounds.
var boundedLists = []struct {
	field string
	count func(*rspec.Spec) int
}{
	{"mounts", func(s *rspec.Spec) int { return len(s.Mounts) }},
	{"linux.maskedPaths", func(s *rspec.Spec) int {
		if s.Linux == nil {
			return 0
		}
		return len(s.Linux.MaskedPaths)
	}},
	{"linux.readonlyPaths", func(s *rspec.Spec) int {
		if s.Linux == nil {
			return 0
		}
		return len(s.Linux.ReadonlyPaths)
	}},
}

// overlongLists are the refusals of the lists of s longer than
// MaxListEntries, judged before any rule runs.
func overlongLists(s *rspec.Spec) []Decision {
	var ds []Decision
	for _, l := range boundedLists {
		if n := l.count(s); n > MaxListEntries {
			ds = append(ds, Decision{Rule: "spec_fields", Field: l.field, Action: Refused, Before: strconv.Itoa(n) + " entries", Layer: LayerNone,
				Why: "at most " + strconv.Itoa(MaxListEntries) + " entries: each is judged against the others or looked up in the container, as root " +
					"outside any cgroup, so their number must not choose how long create computes; give fewer"})
		}
	}
	return ds
}
