package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

// TestAttemptsPassTheLimit: the pids, memory and tmp-size attempts go
// past the limit they are given, and the default profile's keep the
// numbers it has always been probed with.
func TestAttemptsPassTheLimit(t *testing.T) {
	for _, tc := range []struct {
		limit, want int64
	}{
		{0, memCeiling},                          // no limit: the attempt shows it missing
		{defaultMemoryLimit, memCeiling},         // default: 1 GiB, as always
		{1536 << 20, 2304 << 20},                 // tests, install
		{1000 << 20, 1504 << 20},                 // whole steps
		{3 << 30, memMaxCeiling},                 // still past the limit, bounded
		{6 << 30, memMaxCeiling},                 // beyond the bound: cannot pass, see judgeMemoryEnd
		{memMaxCeiling + memStep, memMaxCeiling}, // never above the bound
	} {
		got := memoryCeiling(tc.limit)
		if got != tc.want || got%memStep != 0 {
			t.Errorf("memoryCeiling(%s) = %s, want %s", mib(tc.limit), mib(got), mib(tc.want))
		}
		if tc.limit > 0 && tc.limit < memMaxCeiling && got <= tc.limit {
			t.Errorf("memoryCeiling(%s) = %s does not pass the limit", mib(tc.limit), mib(got))
		}
	}
	for limit, want := range map[int64]int{0: maxChildren, defaultPidsLimit: maxChildren, 256: 384, 4096: maxChildrenCap} {
		if got := childrenCeiling(limit); got != want {
			t.Errorf("childrenCeiling(%d) = %d, want %d", limit, got, want)
		}
	}
	for size, want := range map[int64]int64{0: tmpWriteCap, defaultTmpSize: tmpWriteCap, 64 << 20: 192 << 20} {
		if got := tmpFillCap(size); got != want {
			t.Errorf("tmpFillCap(%s) = %s, want %s", mib(size), mib(got), mib(want))
		}
	}
	for ceiling, want := range map[int64]time.Duration{memCeiling: 9 * time.Second, 2304 << 20: 20250 * time.Millisecond, memMaxCeiling: memDeadlineCap} {
		if got := memDeadline(ceiling, true); got != want {
			t.Errorf("memDeadline(%s) = %s, want %s", mib(ceiling), got, want)
		}
	}
	// In line, the bound leaves a host touching 40 MiB/s (a loaded 2-core
	// one touched 90) the most the probe touches, within the run's 2 minutes.
	if got := memDeadline(memMaxCeiling, false); got < time.Duration(memMaxCeiling/(40<<20))*time.Second || got >= 2*time.Minute {
		t.Errorf("memDeadline(%s) in line = %s", mib(memMaxCeiling), got)
	}
	if memDeadlineCap >= 30*time.Second {
		t.Errorf("memDeadlineCap %s: the host stops waiting 30 s after the done line under gVisor", memDeadlineCap)
	}
}

// TestJudgeCPUQuota: the quota is held to the ceiling of the profile the
// probe was given, not the default's.
func TestJudgeCPUQuota(t *testing.T) {
	sec := time.Second
	for _, tc := range []struct {
		name            string
		quota, ceiling  float64
		used, allowed   time.Duration
		bites           uint64
		ok              bool
		why, noEvidence string
	}{
		{"default profile", 1, 1, sec, 2 * sec, 3, true, "", ""},
		{"tests profile's 2 CPUs", 2, 2, 3 * sec, 4 * sec, 3, true, "", ""},
		{"a smaller quota than the profile's", 0.5, 2, sec, 2 * sec, 3, true, "", ""},
		{"2 CPUs against the default's 1", 2, 1, 3 * sec, 4 * sec, 3, false, "the quota is above the policy's 1 CPU", ""},
		{"3 CPUs against the tests profile's 2", 3, 2, 3 * sec, 4 * sec, 3, false, "the quota is above the policy's 2 CPU", ""},
		{"1.5 CPUs against 1.25", 1.5, 1.25, sec, 2 * sec, 3, false, "the quota is above the policy's 1.25 CPU", ""},
		{"no quota", 0, 2, sec, 0, 0, false, "the cgroup has no CPU quota", ""},
		{"no quota, none in the profile", 0, 0, sec, 0, 0, false, "the cgroup has no CPU quota", ""},
		{"a quota, none in the profile", 2, 0, sec, 2 * sec, 3, true, "", ""},
		{"over the quota", 2, 2, 5 * sec, 4 * sec, 3, false, "more than the quota allows", ""},
		{"never throttled", 2, 2, sec, 4 * sec, 0, false, "", "no evidence"},
	} {
		why, ok := judgeCPUQuota(tc.quota, tc.ceiling, tc.used, tc.allowed, tc.bites)
		if ok != tc.ok || !strings.HasPrefix(why, tc.why) || !strings.HasPrefix(why, tc.noEvidence) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, ok, why, tc.ok, tc.why+tc.noEvidence)
		}
	}
}

// TestJudgeMemoryEnd: only a SIGKILL at or below the profile's limit is
// the limit's evidence; a child that finished its loop met no limit.
func TestJudgeMemoryEnd(t *testing.T) {
	const limit = 1536 << 20
	for _, tc := range []struct {
		name            string
		signaled        bool
		sig             syscall.Signal
		last, lim, ceil int64
		pass            bool
		detail          string
	}{
		{"killed below the tests profile's limit", true, syscall.SIGKILL, 1488 << 20, limit, memoryCeiling(limit), true, ""},
		{"killed below the default's", true, syscall.SIGKILL, 240 << 20, defaultMemoryLimit, memCeiling, true, ""},
		{"finished past the limit", false, 0, 2304 << 20, limit, memoryCeiling(limit), false, "no memory limit reached"},
		{"finished, no limit in the profile", false, 0, memCeiling, 0, memCeiling, false, "no memory limit reached"},
		{"killed past the limit", true, syscall.SIGKILL, 2048 << 20, limit, memoryCeiling(limit), false, "killed past the profile's limit of 1536 MiB"},
		{"another signal", true, syscall.SIGSEGV, 16 << 20, limit, memoryCeiling(limit), false, ""},
		{"a limit beyond the bound", false, 0, memMaxCeiling, 6 << 30, memoryCeiling(6 << 30), false, "above the most the probe touches"},
	} {
		r := Result{Detail: "child touched"}
		judgeMemoryEnd(&r, tc.signaled, tc.sig, tc.last, tc.lim, tc.ceil)
		wantLayer := protocol.LayerNone
		if tc.pass {
			wantLayer = protocol.LayerMemory
		}
		if r.Pass != tc.pass || r.Layer != wantLayer || !strings.Contains(r.Detail, tc.detail) {
			t.Errorf("%s: pass %v layer %q detail %q; want pass %v layer %q detail with %q", tc.name, r.Pass, r.Layer, r.Detail, tc.pass, wantLayer, tc.detail)
		}
	}
}

// TestPolicyFlags: a bare run expects the default profile's limits, and a
// negative limit is refused.
func TestPolicyFlags(t *testing.T) {
	if defaultPolicy != (policy{cpus: 1, memoryLimit: 256 << 20, pidsLimit: 64, tmpSize: 16 << 20}) {
		t.Errorf("defaultPolicy %+v is not the default profile's (runtime/default.toml)", defaultPolicy)
	}
	var out, errOut strings.Builder
	if code := run([]string{"-only", "environment", "-memory-limit", "-1"}, &out, &errOut); code != 2 {
		t.Errorf("-memory-limit -1: exit %d, want 2 (%s)", code, errOut.String())
	}
}
