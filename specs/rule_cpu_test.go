package specs

import (
	"slices"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleCPU(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cpu           *rspec.LinuxCPU
		action        Action
		quota, period int64
	}{
		{"absent", nil, Added, 100000, 100000},
		{"unlimited", &rspec.LinuxCPU{Quota: i64(-1)}, Tightened, 100000, 100000},
		{"zero", &rspec.LinuxCPU{Quota: i64(0), Period: u64(100000)}, Tightened, 100000, 100000},
		{"four cpus", &rspec.LinuxCPU{Quota: i64(400000), Period: u64(100000)}, Tightened, 100000, 100000},
		{"caller's period kept", &rspec.LinuxCPU{Quota: i64(200000), Period: u64(50000)}, Tightened, 50000, 50000},
		{"half cpu kept", &rspec.LinuxCPU{Quota: i64(50000), Period: u64(100000)}, Kept, 50000, 100000},
		{"period too long", &rspec.LinuxCPU{Quota: i64(1 << 40), Period: u64(1 << 62)}, Tightened, 1000000, 1000000},
		{"burst", &rspec.LinuxCPU{Quota: i64(50000), Period: u64(100000), Burst: u64(500000)}, Kept, 50000, 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := hostileSpec()
			s.Linux.Resources = &rspec.LinuxResources{CPU: tc.cpu}
			ds := ruleCPU(testContext(), s)
			wantDecision(t, ds, "linux.resources.cpu.quota", tc.action)
			c := s.Linux.Resources.CPU
			if *c.Quota != tc.quota || int64(*c.Period) != tc.period || c.Burst != nil {
				t.Fatalf("quota %d period %d burst %v, want %d/%d", *c.Quota, *c.Period, c.Burst, tc.quota, tc.period)
			}
		})
	}
}

func TestResourcesNotEnforced(t *testing.T) {
	c := testContext()
	c.Profile.PidsLimit, c.Profile.Memory, c.Profile.CPUs = 0, "0", 0
	s := hostileSpec()
	rulePids(c, s)
	ruleMemory(c, s)
	ruleCPU(c, s)
	if r := s.Linux.Resources; r != nil && (r.Pids != nil || r.Memory != nil || r.CPU != nil) {
		t.Fatalf("resources set although not enforced: %+v", r)
	}
}

func TestRuleCPUShares(t *testing.T) {
	runRule(t, ruleCPU, []ruleCase{
		{name: "huge weight", spec: func(s *rspec.Spec) { ensureResources(s).CPU = &rspec.LinuxCPU{Shares: u64(262144)} },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "linux.resources.cpu.shares", Tightened)
				if *s.Linux.Resources.CPU.Shares != 1024 {
					t.Fatalf("shares %d", *s.Linux.Resources.CPU.Shares)
				}
			}},
		{name: "kubelet's small weight kept", spec: func(s *rspec.Spec) { ensureResources(s).CPU = &rspec.LinuxCPU{Shares: u64(102)} },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				if *s.Linux.Resources.CPU.Shares != 102 {
					t.Fatalf("shares %d", *s.Linux.Resources.CPU.Shares)
				}
			}},
	})
	r := &rspec.LinuxResources{CPU: &rspec.LinuxCPU{Shares: u64(131072)}}
	if _, err := ClampResources(testProfile(), r); err != nil || *r.CPU.Shares != 1024 {
		t.Fatalf("update: shares %d, %v", *r.CPU.Shares, err)
	}
	// Below the kernel's minimum runc fails after it changed the group
	// (update --cpu-share 1 left it half applied); nothing is handed over.
	runRule(t, ruleCPU, []ruleCase{
		{name: "weight below the kernel's minimum", spec: func(s *rspec.Spec) { ensureResources(s).CPU = &rspec.LinuxCPU{Shares: u64(1)} },
			want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
				wantDecision(t, ds, "linux.resources.cpu.shares", Refused)
			}},
	})
	if _, err := ClampResources(testProfile(), &rspec.LinuxResources{CPU: &rspec.LinuxCPU{Shares: u64(1)}}); err == nil {
		t.Fatal("update: cpu.shares 1 was handed over")
	}
}

// A period or quota below the kernel's least (1000 µs) makes runc fail
// after it changed the group (an update left cpu.shares changed); it is
// refused at create and at update, and so is a profile's ceiling that
// scales a short period below it.
func TestRuleCPUBelowTheKernelsLeast(t *testing.T) {
	for _, cpu := range []*rspec.LinuxCPU{
		{Period: u64(999), Quota: i64(50000)},
		{Period: u64(100000), Quota: i64(999)},
		{Period: u64(1500)}, // half a cpu of the profile scales it to 750
	} {
		prof := testProfile()
		if cpu.Quota == nil {
			prof.CPUs = 0.5
		}
		s := hostileSpec()
		ensureResources(s).CPU = cpu
		ds := clampCPU(prof, s.Linux.Resources, false)
		if !slices.ContainsFunc(ds, func(d Decision) bool { return d.Action == Refused }) {
			t.Errorf("period %v quota %v with %g cpus: %+v, want a refusal", fmtU64p(cpu.Period), fmtI64p(cpu.Quota), prof.CPUs, ds)
		}
		r := &rspec.LinuxResources{CPU: &rspec.LinuxCPU{Period: cpu.Period, Quota: cpu.Quota}}
		if _, err := ClampResources(prof, r); err == nil {
			t.Errorf("update: period %v quota %v was handed over", fmtU64p(cpu.Period), fmtI64p(cpu.Quota))
		}
	}
}
