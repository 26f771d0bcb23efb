package specs

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRuleRlimits(t *testing.T) {
	runRule(t, ruleRlimits, []ruleCase{
		{name: "absent core added", want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "process.rlimits[RLIMIT_CORE]", Added)
			wantRlimit(t, s, "RLIMIT_CORE", 0, 0)
		}},
		{name: "unlimited core and huge nofile", spec: func(s *rspec.Spec) {
			s.Process.Rlimits = []rspec.POSIXRlimit{
				{Type: "RLIMIT_CORE", Soft: ^uint64(0), Hard: ^uint64(0)},
				{Type: "RLIMIT_NOFILE", Soft: 1 << 30, Hard: 1 << 30},
				{Type: "RLIMIT_NPROC", Soft: 20, Hard: 20},
			}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "process.rlimits[RLIMIT_CORE]", Tightened)
			wantDecision(t, ds, "process.rlimits[RLIMIT_NOFILE]", Tightened)
			wantRlimit(t, s, "RLIMIT_CORE", 0, 0)
			wantRlimit(t, s, "RLIMIT_NOFILE", maxNofile, maxNofile)
			wantRlimit(t, s, "RLIMIT_NPROC", 20, 20)
		}},
		{name: "soft above hard refused", spec: func(s *rspec.Spec) {
			s.Process.Rlimits = []rspec.POSIXRlimit{{Type: "RLIMIT_NPROC", Soft: 100000, Hard: 10}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantDecision(t, ds, "process.rlimits[RLIMIT_NPROC]", Refused)
		}},
		{name: "a type twice refused", spec: func(s *rspec.Spec) {
			s.Process.Rlimits = []rspec.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 10, Hard: 10}, {Type: "RLIMIT_NOFILE", Soft: 1 << 20, Hard: 1 << 20}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			for _, d := range ds {
				if d.Field == "process.rlimits[RLIMIT_NOFILE]" && d.Action == Refused {
					return
				}
			}
			t.Fatalf("the second RLIMIT_NOFILE is not refused: %s", dump(ds))
		}},
		{name: "stricter nofile kept", spec: func(s *rspec.Spec) {
			s.Process.Rlimits = []rspec.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 1024, Hard: 4096}}
		}, want: func(t *testing.T, s *rspec.Spec, ds []Decision) {
			wantRlimit(t, s, "RLIMIT_NOFILE", 1024, 4096)
		}},
	})
}

func wantRlimit(t *testing.T, s *rspec.Spec, typ string, soft, hard uint64) {
	t.Helper()
	for _, r := range s.Process.Rlimits {
		if r.Type == typ {
			if r.Soft != soft || r.Hard != hard {
				t.Fatalf("%s = %d/%d, want %d/%d", typ, r.Soft, r.Hard, soft, hard)
			}
			return
		}
	}
	t.Fatalf("%s missing", typ)
}

// A limit the spec leaves out is the caller's, passed on by the backend:
// core dumps, realtime priority, nice and message queues are set to 0
// when absent, and a
// value the spec gives (within its ceiling) is kept.
func TestRlimitsSetWhenAbsent(t *testing.T) {
	p := &rspec.Process{Rlimits: []rspec.POSIXRlimit{{Type: "RLIMIT_NICE", Soft: 10, Hard: 10}}}
	clampRlimits(p)
	got := map[string][2]uint64{}
	for _, r := range p.Rlimits {
		got[r.Type] = [2]uint64{r.Soft, r.Hard}
	}
	want := map[string][2]uint64{"RLIMIT_NICE": {10, 10}, "RLIMIT_CORE": {0, 0}, "RLIMIT_RTPRIO": {0, 0}, "RLIMIT_MSGQUEUE": {0, 0}}
	if len(got) != len(want) {
		t.Fatalf("rlimits %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
}
