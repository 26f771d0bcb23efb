package specs

import rspec "github.com/opencontainers/runtime-spec/specs-go"

func ruleCPU(c *Context, s *rspec.Spec) []Decision {
	return clampCPU(c.Profile, ensureResources(s), false)
}

// clampCPU holds quota/period at or below the profile's cpus. The
// caller's period is kept; the quota scales with it. For `update`, where
// absent means "leave as is", a quota without a period gets the profile's
// period, since the current period is not known here.
const maxCPUPeriod = 1000000

func clampCPU(prof *Profile, r *rspec.LinuxResources, update bool) []Decision {
	const rule = "cpu"
	var quota *int64
	var period *uint64
	if r.CPU != nil {
		quota, period = r.CPU.Quota, r.CPU.Period
	}
	if prof.CPUs <= 0 {
		return []Decision{notEnforced(rule, "linux.resources.cpu.quota", fmtI64p(quota))}
	}
	if update && (quota == nil || *quota == 0) && (period == nil || *period == 0) {
		return nil
	}
	if r.CPU == nil {
		r.CPU = &rspec.LinuxCPU{}
	}
	cpu := r.CPU
	var ds []Decision
	if period == nil || *period == 0 {
		_, def := prof.CPUQuota()
		cpu.Period = u64(def)
		ds = append(ds, Decision{Rule: rule, Field: "linux.resources.cpu.period", Action: Added,
			Before: fmtU64p(period), After: fmtU64p(cpu.Period), Layer: LayerCPU,
			Why: "the quota is counted per period"})
	}
	if *cpu.Period > maxCPUPeriod {
		ds = append(ds, Decision{Rule: rule, Field: "linux.resources.cpu.period", Action: Tightened,
			Before: fmtU64p(cpu.Period), After: fmtInt(maxCPUPeriod), Layer: LayerCPU,
			Why: "the kernel accepts periods up to one second"})
		cpu.Period = u64(maxCPUPeriod)
	}
	max := int64(prof.CPUs * float64(*cpu.Period))
	d := Decision{Rule: rule, Field: "linux.resources.cpu.quota", Action: Kept, Before: fmtI64p(quota),
		After: fmtI64p(quota), Layer: LayerCPU, Why: "CPU time past the quota is throttled (cpu.stat)"}
	switch {
	case quota == nil:
		d.Action = Added
	case *quota <= 0 || *quota > max:
		d.Action = Tightened
	}
	if d.Action != Kept {
		cpu.Quota = i64(max)
		d.After = fmtInt(max)
	}
	ds = append(ds, d)
	if cpu.Burst != nil && *cpu.Burst > 0 {
		ds = append(ds, Decision{Rule: rule, Field: "linux.resources.cpu.burst", Action: Removed,
			Before: fmtU64p(cpu.Burst), Layer: LayerCPU, Why: "a burst lets one period use more than the quota"})
		cpu.Burst = nil
	}
	return ds
}
