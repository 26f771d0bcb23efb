package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleMemory(t *testing.T) {
	for _, tc := range []struct {
		name               string
		mem                *rspec.LinuxMemory
		action             Action
		limit, reservation int64
	}{
		{"absent", nil, Added, 256 * mib, 0},
		{"unlimited", &rspec.LinuxMemory{Limit: i64(-1), Swap: i64(-1)}, Tightened, 256 * mib, 0},
		{"10 GiB with swap", &rspec.LinuxMemory{Limit: i64(10 << 30), Swap: i64(20 << 30), Reservation: i64(8 << 30)}, Tightened, 256 * mib, 256 * mib},
		{"64m kept, swap removed", &rspec.LinuxMemory{Limit: i64(64 * mib), Swap: i64(-1), Reservation: i64(32 * mib)}, Kept, 64 * mib, 32 * mib},
		{"oom killer disabled", &rspec.LinuxMemory{Limit: i64(64 * mib), DisableOOMKiller: new(true)}, Kept, 64 * mib, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := hostileSpec()
			s.Linux.Resources = &rspec.LinuxResources{Memory: tc.mem}
			ds := ruleMemory(testContext(), s)
			wantDecision(t, ds, "linux.resources.memory.limit", tc.action)
			m := s.Linux.Resources.Memory
			if *m.Limit != tc.limit || *m.Swap != tc.limit {
				t.Fatalf("limit %d swap %d, want both %d", *m.Limit, *m.Swap, tc.limit)
			}
			if tc.reservation != 0 && *m.Reservation != tc.reservation {
				t.Fatalf("reservation %d, want %d", *m.Reservation, tc.reservation)
			}
			if m.DisableOOMKiller != nil {
				t.Fatal("OOM killer still disabled")
			}
		})
	}
}
