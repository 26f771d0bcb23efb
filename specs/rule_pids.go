package specs

import rspec "github.com/opencontainers/runtime-spec/specs-go"

func rulePids(c *Context, s *rspec.Spec) []Decision {
	return clampPids(c.Profile, ensureResources(s), false)
}

// clampPids holds linux.resources.pids.limit at or below the profile's.
// For `update`, an absent or zero limit means "leave as is" (runc update
// changes only what it is given), so only a value is clamped.
func clampPids(prof *Profile, r *rspec.LinuxResources, update bool) []Decision {
	const rule, field = "pids", "linux.resources.pids.limit"
	var cur *int64
	if r.Pids != nil {
		cur = r.Pids.Limit
	}
	if prof.PidsLimit <= 0 {
		return []Decision{notEnforced(rule, field, fmtI64p(cur))}
	}
	if update && (cur == nil || *cur == 0) {
		return nil
	}
	d := Decision{Rule: rule, Field: field, Action: Kept, Before: fmtI64p(cur), After: fmtI64p(cur),
		Layer: LayerPids, Why: "fork and clone past the limit fail (EAGAIN)"}
	switch {
	case cur == nil:
		d.Action = Added
	case *cur <= 0:
		d.Action = Tightened // 0 and -1 mean no limit to runc
	case *cur > prof.PidsLimit:
		d.Action = Tightened
	default:
		return []Decision{d}
	}
	r.Pids = &rspec.LinuxPids{Limit: i64(prof.PidsLimit)}
	d.After = fmtInt(prof.PidsLimit)
	return []Decision{d}
}
