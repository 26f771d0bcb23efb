package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

const mib = 1 << 20

func TestRulePids(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     *int64
		action Action
		want   int64
	}{
		{"absent", nil, Added, 64}, {"unlimited", i64(-1), Tightened, 64}, {"zero", i64(0), Tightened, 64},
		{"huge", i64(100000), Tightened, 64}, {"stricter kept", i64(10), Kept, 10}, {"equal", i64(64), Kept, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := hostileSpec()
			s.Linux.Resources = &rspec.LinuxResources{Pids: &rspec.LinuxPids{Limit: tc.in}}
			wantDecision(t, rulePids(testContext(), s), "linux.resources.pids.limit", tc.action)
			if got := *s.Linux.Resources.Pids.Limit; got != tc.want {
				t.Fatalf("pids %d, want %d", got, tc.want)
			}
		})
	}
}
