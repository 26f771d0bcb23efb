package specs

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// maxNofile is the kernel's default fs.nr_open: beyond it the caller asks
// for more descriptors than an ordinary process may ever hold.
const maxNofile = 1048576

// unlimited is RLIM_INFINITY.
const unlimited = ^uint64(0)

// rlimitCeilings is the allowlist of rlimits with the highest value each
// may have. Limits that only restrict the job itself may be anything; the
// others are capped where a high value reaches past the sandbox: core
// dumps are written where the host's core_pattern points, realtime
// priority and time run ahead of the host, a nice limit above 20 allows a
// negative nice, and POSIX message queues are charged to the host uid
// every container runs as, so one job's queues (819200 bytes by default)
// left every other container on the host unable to open one.
var rlimitCeilings = map[string]uint64{
	"RLIMIT_AS": unlimited, "RLIMIT_CPU": unlimited, "RLIMIT_DATA": unlimited, "RLIMIT_FSIZE": unlimited,
	"RLIMIT_LOCKS": unlimited, "RLIMIT_MEMLOCK": unlimited, "RLIMIT_MSGQUEUE": 0, "RLIMIT_NICE": 20,
	"RLIMIT_NOFILE": maxNofile, "RLIMIT_NPROC": unlimited, "RLIMIT_RSS": unlimited, "RLIMIT_SIGPENDING": unlimited,
	"RLIMIT_STACK": unlimited, "RLIMIT_CORE": 0, "RLIMIT_RTPRIO": 0, "RLIMIT_RTTIME": 0,
}

// setWhenAbsent are the rlimits set to 0 when the spec does not name
// them: no core dumps, no realtime priority, no nice below the start's,
// no message queues.
var setWhenAbsent = []string{"RLIMIT_CORE", "RLIMIT_RTPRIO", "RLIMIT_NICE", "RLIMIT_MSGQUEUE"}

func ruleRlimits(c *Context, s *rspec.Spec) []Decision {
	return clampRlimits(ensureProcess(s))
}

// clampRlimits keeps only allowlisted rlimits, each at or below its
// ceiling, and forbids core dumps, which would write the sandbox's memory
// (and any secret in it) to wherever the host's core_pattern points.
func clampRlimits(p *rspec.Process) []Decision {
	var ds []Decision
	seen := map[string]bool{}
	for i := range p.Rlimits {
		r := &p.Rlimits[i]
		field := "process.rlimits[" + r.Type + "]"
		before := fmt.Sprintf("soft=%d hard=%d", r.Soft, r.Hard)
		ceiling, ok := rlimitCeilings[r.Type]
		refuse := func(why string) {
			ds = append(ds, Decision{Rule: "rlimits", Field: field, Action: Refused, Before: before, Layer: LayerNone, Why: why})
		}
		switch {
		case !ok:
			refuse("rlimit " + r.Type + " is not on the allowlist; remove it")
			continue
		case seen[r.Type]:
			// Which entry a backend applies last is its own: gVisor would
			// keep one the rules never judged.
			refuse("rlimit " + r.Type + " is given twice; keep one entry")
			continue
		case r.Soft > r.Hard:
			// The kernel refuses it (EINVAL); gVisor applies the soft limit
			// and lets the hard one, which the rules judged, pass unenforced.
			refuse(fmt.Sprintf("soft limit %d is above the hard limit %d; set soft at most hard", r.Soft, r.Hard))
			continue
		}
		seen[r.Type] = true
		d := Decision{Rule: "rlimits", Field: field, Action: Kept, Before: before, After: before, Layer: LayerRlimit,
			Why: rlimitWhy(r.Type)}
		if r.Soft > ceiling || r.Hard > ceiling {
			r.Soft, r.Hard = min(r.Soft, ceiling), min(r.Hard, ceiling)
			d.Action, d.After = Tightened, fmt.Sprintf("soft=%d hard=%d", r.Soft, r.Hard)
		}
		if d.Action != Kept || ceiling != unlimited {
			ds = append(ds, d)
		}
	}
	// A limit the spec does not set is the caller's, which the backend's
	// process passes on: a caller with RLIMIT_RTPRIO or RLIMIT_NICE above
	// the kernel's default would give the job realtime scheduling or a
	// negative nice without a capability.
	for _, t := range setWhenAbsent {
		if !seen[t] {
			p.Rlimits = append(p.Rlimits, rspec.POSIXRlimit{Type: t})
			ds = append(ds, Decision{Rule: "rlimits", Field: "process.rlimits[" + t + "]", Action: Added,
				Before: "unset", After: "soft=0 hard=0", Layer: LayerRlimit, Why: rlimitWhy(t)})
		}
	}
	return ds
}

// withinContainerRlimits holds an exec's rlimits to the container's own:
// a hard limit above the one its processes run under can only be raised
// with CAP_SYS_RESOURCE, which the job does not have, so the backend would
// fail the exec with an EPERM of its own instead of bulkhead saying why.
func withinContainerRlimits(p *rspec.Process, container []rspec.POSIXRlimit) []Decision {
	var ds []Decision
	for i := range p.Rlimits {
		r := &p.Rlimits[i]
		for _, own := range container {
			if own.Type != r.Type || r.Hard <= own.Hard {
				continue
			}
			before := fmt.Sprintf("soft=%d hard=%d", r.Soft, r.Hard)
			r.Soft, r.Hard = min(r.Soft, own.Hard), own.Hard
			ds = append(ds, Decision{Rule: "rlimits", Field: "process.rlimits[" + r.Type + "]", Action: Tightened,
				Before: before, After: fmt.Sprintf("soft=%d hard=%d", r.Soft, r.Hard), Layer: LayerRlimit,
				Why: "an exec gets no more than the container's own limit"})
		}
	}
	return ds
}

func rlimitWhy(t string) string {
	switch t {
	case "RLIMIT_CORE":
		return "no core dumps of sandbox memory on the host"
	case "RLIMIT_RTPRIO", "RLIMIT_RTTIME":
		return "no realtime scheduling, which runs ahead of every host process"
	case "RLIMIT_NICE":
		return "no nice below 0"
	case "RLIMIT_NOFILE":
		return "open files capped at the kernel's default nr_open"
	case "RLIMIT_MSGQUEUE":
		return "no POSIX message queues: their bytes count against the host uid every container shares, so one job's would deny every other's"
	}
	return "capped at its ceiling"
}
