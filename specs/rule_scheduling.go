package specs

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ruleScheduling(c *Context, s *rspec.Spec) []Decision {
	return limitScheduling(ensureProcess(s))
}

// limitScheduling keeps the job among the host's ordinary processes: no
// realtime or deadline policy (which would starve the host), no nice below
// 0, no realtime I/O class. The realtime rlimits are the rlimits rule's,
// the realtime cgroup runtime is refused by spec_fields.
func limitScheduling(p *rspec.Process) []Decision {
	var ds []Decision
	if sch := p.Scheduler; sch != nil {
		switch sch.Policy {
		case "", rspec.SchedOther, rspec.SchedBatch, rspec.SchedIdle:
		default:
			ds = append(ds, Decision{Rule: "scheduling", Field: "process.scheduler.policy", Action: Refused,
				Before: string(sch.Policy), Layer: LayerNone,
				Why: "realtime and deadline policies run ahead of every host process; use SCHED_OTHER, SCHED_BATCH or SCHED_IDLE"})
		}
		if sch.Nice < 0 {
			ds = append(ds, Decision{Rule: "scheduling", Field: "process.scheduler.nice", Action: Tightened,
				Before: fmt.Sprint(sch.Nice), After: "0", Layer: LayerNone,
				Why: "a negative nice runs the job ahead of the host's processes"})
			sch.Nice = 0
		}
	}
	if io := p.IOPriority; io != nil {
		switch io.Class {
		case rspec.IOPRIO_CLASS_BE, rspec.IOPRIO_CLASS_IDLE:
		default:
			ds = append(ds, Decision{Rule: "scheduling", Field: "process.ioPriority.class", Action: Refused,
				Before: string(io.Class), Layer: LayerNone,
				Why: "the realtime I/O class runs ahead of every host process's I/O; use IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE"})
		}
	}
	return ds
}
