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

// boundedLists are the caller's lists and their bounds: the three whose
// entries are judged against one another at MaxListEntries, and the
// others, whose cost grows with their length only (1.2 million
// environment entries cost 2 s and half a GiB of root's memory), well
// above what a kernel or an engine takes (execve's 2 MiB of arguments
// and environment, NGROUPS_MAX).
var boundedLists = []struct {
	field string
	max   int
	count func(*rspec.Spec) int
}{
	{"mounts", MaxListEntries, func(s *rspec.Spec) int { return len(s.Mounts) }},
	{"linux.maskedPaths", MaxListEntries, func(s *rspec.Spec) int { return linuxLen(s, func(l *rspec.Linux) int { return len(l.MaskedPaths) }) }},
	{"linux.readonlyPaths", MaxListEntries, func(s *rspec.Spec) int { return linuxLen(s, func(l *rspec.Linux) int { return len(l.ReadonlyPaths) }) }},
	{"linux.devices", MaxListEntries, func(s *rspec.Spec) int { return linuxLen(s, func(l *rspec.Linux) int { return len(l.Devices) }) }},
	{"linux.resources.devices", MaxListEntries, func(s *rspec.Spec) int {
		return linuxLen(s, func(l *rspec.Linux) int {
			if l.Resources == nil {
				return 0
			}
			return len(l.Resources.Devices)
		})
	}},
	{"linux.sysctl", MaxListEntries, func(s *rspec.Spec) int { return linuxLen(s, func(l *rspec.Linux) int { return len(l.Sysctl) }) }},
	{"annotations", 4 * MaxListEntries, func(s *rspec.Spec) int { return len(s.Annotations) }},
	{"process.args", 32 * MaxListEntries, func(s *rspec.Spec) int { return processLen(s, func(p *rspec.Process) int { return len(p.Args) }) }},
	{"process.env", 32 * MaxListEntries, func(s *rspec.Spec) int { return processLen(s, func(p *rspec.Process) int { return len(p.Env) }) }},
	{"process.user.additionalGids", 64 * MaxListEntries, func(s *rspec.Spec) int {
		return processLen(s, func(p *rspec.Process) int { return len(p.User.AdditionalGids) })
	}},
}

func linuxLen(s *rspec.Spec, n func(*rspec.Linux) int) int {
	if s.Linux == nil {
		return 0
	}
	return n(s.Linux)
}

func processLen(s *rspec.Spec, n func(*rspec.Process) int) int {
	if s.Process == nil {
		return 0
	}
	return n(s.Process)
}

// overlongLists are the refusals of the lists of s longer than their
// bounds, judged before any rule runs.
func overlongLists(s *rspec.Spec) []Decision {
	var ds []Decision
	for _, l := range boundedLists {
		if n := l.count(s); n > l.max {
			ds = append(ds, Decision{Rule: "spec_fields", Field: l.field, Action: Refused, Before: strconv.Itoa(n) + " entries", Layer: LayerNone,
				Why: "at most " + strconv.Itoa(l.max) + " entries: each is judged, as root outside any cgroup, so their number " +
					"must not choose how long create computes; give fewer"})
		}
	}
	return ds
}
