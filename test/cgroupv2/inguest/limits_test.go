package inguest

import (
	"strconv"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/cgroups"
)

// TestLimitsFromV2Files: after create the container's cgroup holds the
// profile's limits in pids.max, memory.max, memory.swap.max and cpu.max,
// and bulkhead's reader gives what those files say, with memory.swap.max
// (swap alone on v2) turned into memory plus swap as the OCI field means.
// A caller's stricter values are kept.
func TestLimitsFromV2Files(t *testing.T) {
	needV2(t)
	mib := int64(1 << 20)
	cases := []struct {
		name   string
		mutate func(*rspec.Spec)
		pids   string
		memory string
		swap   string
		cpu    string
		limits cgroups.Limits
	}{
		{"default", nil, "64", strconv.FormatInt(256*mib, 10), "0", "100000 100000",
			cgroups.Limits{Version: 2, PidsMax: 64, MemoryMax: 256 * mib, MemorySwapMax: 256 * mib, CPUQuota: 100000, CPUPeriod: 100000}},
		{"stricter", func(s *rspec.Spec) {
			pids, mem, quota, period := int64(10), 64*mib, int64(25000), uint64(100000)
			s.Linux.Resources.Pids = &rspec.LinuxPids{Limit: &pids}
			s.Linux.Resources.Memory = &rspec.LinuxMemory{Limit: &mem, Swap: &mem}
			s.Linux.Resources.CPU = &rspec.LinuxCPU{Quota: &quota, Period: &period}
		}, "10", strconv.FormatInt(64*mib, 10), "0", "25000 100000",
			cgroups.Limits{Version: 2, PidsMax: 10, MemoryMax: 64 * mib, MemorySwapMax: 64 * mib, CPUQuota: 25000, CPUPeriod: 100000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, "")
			id := newID(t)
			var mutate []func(*rspec.Spec)
			if c.mutate != nil {
				mutate = append(mutate, c.mutate)
			}
			pid := e.created(t, sleeper(t, id, mutate...), id)
			dir := groupDir(t, pid)
			t.Logf("cgroup %s", dir)
			for name, want := range map[string]string{"pids.max": c.pids, "memory.max": c.memory, "memory.swap.max": c.swap, "cpu.max": c.cpu} {
				if got := file(t, dir, name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			g, err := cgroups.ForPID(pid)
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.Limits()
			if err != nil {
				t.Fatal(err)
			}
			if got != c.limits {
				t.Errorf("read %+v\nwant %+v", got, c.limits)
			}
			ev, err := g.Events()
			if err != nil {
				t.Errorf("events: %v", err)
			}
			t.Logf("limits %+v, events %+v", got, ev)
		})
	}
}
