package runtime

import (
	"strconv"

	"bulkhead.dev/bulkhead/specs"
)

// probeLimitArgs are the probe's flags for the profile's own limits: the
// probe judges cpu, pids, memory and tmp-size against them and pushes its
// pids and memory attempts past them. Without them it would hold every
// profile to the default profile's numbers, failing a job profile that
// grants more (tests: 2 CPUs, 1536m) and never reaching a limit above
// the default's.
func probeLimitArgs(prof *specs.Profile) ([]string, error) {
	mem, err := prof.MemoryBytes()
	if err != nil {
		return nil, err
	}
	tmp, err := prof.TmpBytes()
	if err != nil {
		return nil, err
	}
	return []string{
		"-cpus", strconv.FormatFloat(prof.CPUs, 'g', -1, 64),
		"-memory-limit", strconv.FormatInt(mem, 10),
		"-pids-limit", strconv.FormatInt(prof.PidsLimit, 10),
		"-tmp-size", strconv.FormatInt(tmp, 10),
	}, nil
}
