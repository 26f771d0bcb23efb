package specs

import (
	"fmt"
	"math"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func ruleCPU(c *Context, s *rspec.Spec) []Decision {
	r := ensureResources(s)
	return append(clampShares(c.Profile, r), clampCPU(c.Profile, r, false)...)
}

// defaultShares is the kernel's weight of a cgroup nobody weighted.
const defaultShares = 1024

// clampShares holds cpu.shares at 1024 per CPU of the profile (at least
// 1024): a larger weight gives the container first claim on the host's
// CPUs whenever they are busy, beside the host's own top-level groups.
func clampShares(prof *Profile, r *rspec.LinuxResources) []Decision {
	if r.CPU == nil || r.CPU.Shares == nil {
		return nil
	}
	if *r.CPU.Shares == 1 {
		// The kernel holds a weight at 2 at least; runc reads 2 back,
		// fails, and an update fails after it changed the group.
		return []Decision{{Rule: "cpu", Field: "linux.resources.cpu.shares", Action: Refused, Before: "1", Layer: LayerNone,
			Why: "cpu.shares 1 is below the kernel's minimum of 2, on which runc fails after changing the group; set 2 or more, or leave it out"}}
	}
	ceiling := uint64(defaultShares * max(1, math.Ceil(prof.CPUs)))
	if *r.CPU.Shares <= ceiling {
		return nil
	}
	before := fmtU64p(r.CPU.Shares)
	r.CPU.Shares = u64(ceiling)
	return []Decision{{Rule: "cpu", Field: "linux.resources.cpu.shares", Action: Tightened, Before: before,
		After: fmtU64p(r.CPU.Shares), Layer: LayerCPU, Why: "a weight above 1024 per CPU of the profile runs ahead of the host's own groups"}}
}

// clampCPU holds quota/period at or below the profile's cpus. The
// caller's period is kept; the quota scales with it. For `update`, where
// absent means "leave as is", a quota without a period gets the profile's
// period, since the current period is not known here.
const maxCPUPeriod = 1000000

// minCPUPeriod is the kernel's least period and quota, 1 ms: runc writes
// a smaller one, fails, and an update fails after it changed the group.
const minCPUPeriod = 1000

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
	if *cpu.Period < minCPUPeriod {
		return append(ds, Decision{Rule: rule, Field: "linux.resources.cpu.period", Action: Refused, Before: fmtU64p(cpu.Period), Layer: LayerNone,
			Why: "the kernel's least cpu period is 1000 µs, and runc fails on a smaller one after changing the group; set 1000 or more"})
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
	if *cpu.Quota < minCPUPeriod {
		return append(ds, Decision{Rule: rule, Field: "linux.resources.cpu.quota", Action: Refused, Before: fmtI64p(quota), Layer: LayerNone,
			Why: fmt.Sprintf("a quota of %d µs is below the kernel's least, 1000 µs, on which runc fails after changing the group; set a quota of 1000 or more, or a longer period", *cpu.Quota)})
	}
	ds = append(ds, d)
	if cpu.Burst != nil && *cpu.Burst > 0 {
		ds = append(ds, Decision{Rule: rule, Field: "linux.resources.cpu.burst", Action: Removed,
			Before: fmtU64p(cpu.Burst), Layer: LayerCPU, Why: "a burst lets one period use more than the quota"})
		cpu.Burst = nil
	}
	return ds
}
