package specs

import (
	"testing"
)

func TestRuleOOMScoreAdj(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     *int
		action Action
		want   int
	}{
		{"absent", nil, Added, 500},
		{"negative, as the CRI pause container asks", intp(-998), Tightened, 500},
		{"zero", intp(0), Tightened, 500},
		{"higher kept", intp(1000), Kept, 1000},
		{"above the kernel's range", intp(5000), Refused, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := hostileSpec()
			s.Process.OOMScoreAdj = tc.in
			ds := ruleOOMScoreAdj(testContext(), s)
			wantDecision(t, ds, "process.oomScoreAdj", tc.action)
			if *s.Process.OOMScoreAdj != tc.want {
				t.Fatalf("oomScoreAdj %d, want %d", *s.Process.OOMScoreAdj, tc.want)
			}
		})
	}
}
