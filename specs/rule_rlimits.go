package specs

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// maxNofile is the kernel's default fs.nr_open: beyond it the caller asks
// for more descriptors than an ordinary process may ever hold.
const maxNofile = 1048576

func ruleRlimits(c *Context, s *rspec.Spec) []Decision {
	return clampRlimits(ensureProcess(s))
}

// clampRlimits forbids core dumps, which would write the sandbox's memory
// (and any secret in it) to wherever the host's core_pattern points, and
// caps RLIMIT_NOFILE. Other limits are the caller's and only restrict it.
func clampRlimits(p *rspec.Process) []Decision {
	var ds []Decision
	core := false
	for i := range p.Rlimits {
		r := &p.Rlimits[i]
		field := "process.rlimits[" + r.Type + "]"
		before := fmt.Sprintf("soft=%d hard=%d", r.Soft, r.Hard)
		switch r.Type {
		case "RLIMIT_CORE":
			core = true
			d := Decision{Rule: "rlimits", Field: field, Action: Kept, Before: before,
				After: "soft=0 hard=0", Layer: LayerRlimit, Why: "no core dumps of sandbox memory on the host"}
			if r.Soft != 0 || r.Hard != 0 {
				d.Action = Tightened
				r.Soft, r.Hard = 0, 0
			}
			ds = append(ds, d)
		case "RLIMIT_NOFILE":
			if r.Soft <= maxNofile && r.Hard <= maxNofile {
				continue
			}
			r.Soft, r.Hard = min(r.Soft, maxNofile), min(r.Hard, maxNofile)
			ds = append(ds, Decision{Rule: "rlimits", Field: field, Action: Tightened, Before: before,
				After: fmt.Sprintf("soft=%d hard=%d", r.Soft, r.Hard), Layer: LayerRlimit,
				Why: "open files capped at the kernel's default nr_open"})
		}
	}
	if !core {
		p.Rlimits = append(p.Rlimits, rspec.POSIXRlimit{Type: "RLIMIT_CORE"})
		ds = append(ds, Decision{Rule: "rlimits", Field: "process.rlimits[RLIMIT_CORE]", Action: Added,
			Before: "unset", After: "soft=0 hard=0", Layer: LayerRlimit,
			Why: "no core dumps of sandbox memory on the host"})
	}
	return ds
}
