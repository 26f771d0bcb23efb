package specs

import rspec "github.com/opencontainers/runtime-spec/specs-go"

func ruleMemory(c *Context, s *rspec.Spec) []Decision {
	return clampMemory(c.Profile, ensureResources(s), false)
}

// clampMemory holds the memory limit at or below the profile's and sets
// swap (the OCI value is memory+swap) equal to it, so that the sandbox
// cannot grow into swap. For `update`, absent or zero values mean "leave
// as is"; a swap-only update is dropped, since swap follows the limit.
func clampMemory(prof *Profile, r *rspec.LinuxResources, update bool) []Decision {
	const rule = "memory"
	ceiling, err := prof.MemoryBytes()
	if err != nil {
		return []Decision{{Rule: rule, Field: "linux.resources.memory", Action: Refused,
			Layer: LayerNone, Why: "profile: " + err.Error()}}
	}
	var limit *int64
	if r.Memory != nil {
		limit = r.Memory.Limit
	}
	if ceiling <= 0 {
		return []Decision{notEnforced(rule, "linux.resources.memory.limit", fmtI64p(limit))}
	}
	m := r.Memory
	if update {
		if m == nil {
			return nil
		}
		if limit == nil || *limit == 0 {
			var ds []Decision
			if m.Swap != nil && *m.Swap != 0 {
				ds = append(ds, Decision{Rule: rule, Field: "linux.resources.memory.swap", Action: Removed,
					Before: fmtI64p(m.Swap), After: "unchanged", Layer: LayerMemory,
					Why: "swap stays equal to the memory limit; update the limit instead"})
				m.Swap = nil
			}
			ds = append(ds, clampReservation(m, ceiling)...)
			return ds
		}
	}
	if m == nil {
		m = &rspec.LinuxMemory{}
		r.Memory = m
	}
	var ds []Decision
	d := Decision{Rule: rule, Field: "linux.resources.memory.limit", Action: Kept, Before: fmtI64p(limit),
		After: fmtI64p(limit), Layer: LayerMemory, Why: "allocations past the limit get the sandbox OOM-killed"}
	switch {
	case limit == nil:
		d.Action = Added
	case *limit <= 0 || *limit > ceiling:
		d.Action = Tightened
	}
	if d.Action != Kept {
		m.Limit = i64(ceiling)
		d.After = fmtInt(ceiling)
	}
	ds = append(ds, d)
	swap := Decision{Rule: rule, Field: "linux.resources.memory.swap", Action: Kept, Before: fmtI64p(m.Swap),
		After: fmtInt(*m.Limit), Layer: LayerMemory, Why: "memory+swap equals the limit: no swap"}
	if m.Swap == nil {
		swap.Action = Added
	} else if *m.Swap != *m.Limit {
		swap.Action = Tightened
	}
	m.Swap = i64(*m.Limit)
	ds = append(ds, swap)
	ds = append(ds, clampReservation(m, *m.Limit)...)
	if m.DisableOOMKiller != nil && *m.DisableOOMKiller {
		m.DisableOOMKiller = nil
		ds = append(ds, Decision{Rule: rule, Field: "linux.resources.memory.disableOOMKiller", Action: Removed,
			Before: "true", Layer: LayerMemory,
			Why: "a sandbox at its limit must be killed (and counted in oom_kill), not frozen"})
	}
	return ds
}

func clampReservation(m *rspec.LinuxMemory, limit int64) []Decision {
	if m.Reservation == nil || *m.Reservation <= limit {
		return nil
	}
	before := fmtI64p(m.Reservation)
	m.Reservation = i64(limit)
	return []Decision{{Rule: "memory", Field: "linux.resources.memory.reservation", Action: Tightened,
		Before: before, After: fmtInt(limit), Layer: LayerMemory, Why: "a soft limit above the hard limit means nothing"}}
}
