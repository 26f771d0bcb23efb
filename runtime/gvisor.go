package runtime

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/specs"
)

// gvisorThreads is the room a gVisor sandbox needs in the host's pids
// cgroup for its own Sentry and gofer threads: below about 128 runsc
// cannot start at all.
const gvisorThreads = 192

// translateForGVisor moves the process limit to where gVisor enforces it.
// On the host, pids.max counts the sandbox's own threads, so the cgroup
// gets the profile's limit plus room for them; inside, gVisor's kernel
// enforces RLIMIT_NPROC per sandbox, which carries the profile's limit.
func translateForGVisor(s *rspec.Spec, p *specs.Profile) {
	if s.Linux == nil || s.Linux.Resources == nil || s.Linux.Resources.Pids == nil || s.Linux.Resources.Pids.Limit == nil {
		return
	}
	limit := *s.Linux.Resources.Pids.Limit
	if limit <= 0 {
		return
	}
	host := limit + gvisorThreads
	s.Linux.Resources.Pids.Limit = &host
	if s.Process == nil {
		return
	}
	nproc := rspec.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: uint64(limit), Soft: uint64(limit)}
	for i, r := range s.Process.Rlimits {
		if r.Type == "RLIMIT_NPROC" {
			if r.Hard > nproc.Hard {
				s.Process.Rlimits[i] = nproc
			}
			return
		}
	}
	s.Process.Rlimits = append(s.Process.Rlimits, nproc)
}
