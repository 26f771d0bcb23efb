package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime/probe/protocol"
)

func f64(v float64) *float64 { return &v }

// allPass is a probe run where every line passed, as on runc.
func allPass() map[string]Line {
	lines := map[string]Line{}
	for _, n := range protocol.Controls {
		lines[n] = Line{Control: n, Attempt: "try " + n, Observed: "EPERM", Layer: "x", Pass: true}
	}
	lines["pids"] = Line{Control: "pids", Observed: "EAGAIN", Layer: "pids cgroup", Pass: true}
	lines["memory"] = Line{Control: "memory", Observed: "SIGKILL", Layer: "memory cgroup", Pass: true}
	lines["cpu"] = Line{Control: "cpu", Observed: "ratio 1.01", Layer: "cpu cgroup", Pass: true, Value: f64(1.01)}
	return lines
}

func bitten() map[string]Sample {
	return map[string]Sample{
		"pids":   {After: cgroups.Events{PidsMax: 1}, OK: true},
		"memory": {After: cgroups.Events{OOMKills: 1, MemoryPeak: 256 << 20}, OK: true},
		"cpu":    {After: cgroups.Events{NrThrottled: 12, CPUUsage: 2 * time.Second}, OK: true, Wall: 2 * time.Second},
	}
}

// judge runs Judge on a run whose output ended (EOF).
func judge(lines map[string]Line, samples map[string]Sample, limits *cgroups.Limits, gvisor, hostFolderUnchanged bool) []Control {
	return Judge(Output{lines: lines, samples: samples, Finished: true, ended: true},
		Host{Limits: limits, GVisor: gvisor, HostFolderUnchanged: hostFolderUnchanged})
}

var testLimits = &cgroups.Limits{PidsMax: 64, MemoryMax: 256 << 20, CPUQuota: 100000, CPUPeriod: 100000}

func rowOf(rows []Control, name string) Control {
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	return Control{}
}

func TestJudgeProbeAllHold(t *testing.T) {
	rows := judge(allPass(), bitten(), testLimits, false, true)
	if len(rows) != len(protocol.Controls) {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if !r.Pass {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	if r := rowOf(rows, "pids"); r.Evidence != "pids.events max +1 (pids.max 64)" || r.Layer != "pids cgroup" {
		t.Errorf("pids row %+v", r)
	}
}

// Host evidence is required on runc: an EAGAIN without pids.events
// growing (RLIMIT_NPROC of a host uid, say) or a SIGKILL without an OOM
// kill is not the cgroup's doing.
func TestJudgeProbeNeedsHostEvidence(t *testing.T) {
	s := bitten()
	s["pids"] = Sample{OK: true}
	s["memory"] = Sample{OK: true}
	s["cpu"] = Sample{OK: true}
	lines := allPass()
	lines["cpu"] = Line{Control: "cpu", Observed: "ratio 1.01", Pass: true, Value: f64(1.01)}
	rows := judge(lines, s, testLimits, false, true)
	for _, n := range []string{"pids", "memory", "cpu"} {
		if r := rowOf(rows, n); r.Pass {
			t.Errorf("%s passed without host evidence: %+v", n, r)
		}
	}
	// A missing reading fails too.
	delete(s, "pids")
	if r := rowOf(judge(lines, s, testLimits, false, true), "pids"); r.Pass || r.Evidence != "no cgroup reading" {
		t.Errorf("%+v", r)
	}
}

// The cpu row needs the quota to have bitten and the usage to stay within
// it; a spin that never reached its quota is no evidence, whatever its
// ratio, and a cgroup without a quota fails.
func TestJudgeProbeCPU(t *testing.T) {
	cases := []struct {
		name   string
		sample Sample
		limits *cgroups.Limits
		pass   bool
		detail string
	}{
		{"bitten", Sample{After: cgroups.Events{NrThrottled: 3, CPUUsage: 2 * time.Second}, OK: true, Wall: 2 * time.Second}, testLimits, true, ""},
		{"never bitten", Sample{After: cgroups.Events{CPUUsage: time.Second}, OK: true, Wall: 20 * time.Second}, testLimits, false, "no evidence"},
		{"over quota", Sample{After: cgroups.Events{NrThrottled: 3, CPUUsage: 4 * time.Second}, OK: true, Wall: 2 * time.Second}, testLimits, false, "more CPU than the quota"},
		{"no quota", Sample{After: cgroups.Events{NrThrottled: 3, CPUUsage: time.Second}, OK: true, Wall: 2 * time.Second},
			&cgroups.Limits{PidsMax: 64, MemoryMax: 256 << 20, CPUQuota: cgroups.Unlimited, CPUPeriod: 100000}, false, "no CPU quota"},
		{"no reading", Sample{}, testLimits, false, ""},
		// 2 CPUs on the 2-CPU host of the test: the spin cannot pass the
		// quota, and a host's own CPUs bound it.
		{"quota of all the host's CPUs, never bitten", Sample{After: cgroups.Events{CPUUsage: 30 * time.Second}, OK: true, Wall: 20 * time.Second},
			&cgroups.Limits{PidsMax: 64, MemoryMax: 256 << 20, CPUQuota: 200000, CPUPeriod: 100000}, true, ""},
		{"quota of fewer than the host's CPUs, never bitten", Sample{After: cgroups.Events{CPUUsage: 10 * time.Second}, OK: true, Wall: 20 * time.Second},
			&cgroups.Limits{PidsMax: 64, MemoryMax: 256 << 20, CPUQuota: 150000, CPUPeriod: 100000}, false, "no evidence"},
	}
	defer func(f func() int) { hostCPUs = f }(hostCPUs)
	hostCPUs = func() int { return 2 }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := bitten()
			s["cpu"] = c.sample
			r := rowOf(judge(allPass(), s, c.limits, false, true), "cpu")
			if r.Pass != c.pass || (r.Result == Pass) != c.pass || !strings.Contains(r.Detail, c.detail) {
				t.Errorf("%+v", r)
			}
		})
	}
	// Under gVisor the probe's line is skipped and the host decides.
	lines := allPass()
	lines["cpu"] = Line{Control: "cpu", Observed: "ratio 2.1 (not judged: gVisor)", Skipped: true}
	if r := rowOf(judge(lines, bitten(), testLimits, true, true), "cpu"); !r.Pass || r.Result != Pass {
		t.Errorf("gVisor, throttled: %+v", r)
	}
	s := bitten()
	s["cpu"] = Sample{OK: true, Wall: 5 * time.Second}
	if r := rowOf(judge(lines, s, testLimits, true, true), "cpu"); r.Pass || r.Result != Fail {
		t.Errorf("gVisor, never throttled: %+v", r)
	}
}

// A control without a line fails with "no evidence"; a skipped one is
// neither pass nor fail, and the report does not pass with it.
func TestJudgeProbeMissingLineFails(t *testing.T) {
	for _, name := range protocol.Controls {
		lines := allPass()
		delete(lines, name)
		r := rowOf(judge(lines, bitten(), testLimits, false, true), name)
		if r.Pass || r.Result != Fail || r.Observed != "no line" || !strings.HasPrefix(r.Detail, "no evidence") {
			t.Errorf("%s without a line: %+v", name, r)
		}
	}
	lines := allPass()
	lines["workspace"] = Line{Control: "workspace", Observed: "skipped", Skipped: true, Detail: "/workspace is not mounted here"}
	rep := &Report{Finished: true, Controls: judge(lines, bitten(), testLimits, false, true)}
	if r := rowOf(rep.Controls, "workspace"); r.Pass || r.Result != Skipped {
		t.Errorf("a skipped control: %+v", r)
	}
	if got := rep.Skipped(); len(got) != 1 || got[0] != "workspace" || len(rep.Failed()) != 0 {
		t.Errorf("skipped %v, failed %v", got, rep.Failed())
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"result": "skipped"`) {
		t.Errorf("JSON lacks the skipped result:\n%s", b.String())
	}
}

// Under gVisor the memory attempt ends the sandbox: no line, and the
// host's oom_kill decides. pids holds by gVisor's RLIMIT_NPROC.
func TestJudgeProbeGVisor(t *testing.T) {
	lines := allPass()
	delete(lines, "memory")
	lines["pids"] = Line{Control: "pids", Observed: "EAGAIN", Layer: "gVisor (Sentry): RLIMIT_NPROC", Pass: true}
	lines["cpu"] = Line{Control: "cpu", Observed: "ratio 2.1 (not judged: gVisor)", Skipped: true, Value: f64(2.1)}
	s := bitten()
	s["pids"] = Sample{OK: true}
	rows := judge(lines, s, testLimits, true, true)
	for _, n := range []string{"pids", "memory", "cpu"} {
		if r := rowOf(rows, n); !r.Pass {
			t.Errorf("%s: %+v", n, r)
		}
	}
	if r := rowOf(rows, "memory"); r.Layer != layerMemoryGVisor || r.Observed != "sandbox ended" {
		t.Errorf("%+v", r)
	}
	// The sandbox ended at the limit with no host OOM kill counted:
	// gVisor's own accounting ended it; said so in the layer.
	s["memory"] = Sample{OK: true, After: cgroups.Events{MemoryPeak: 255 << 20}}
	if r := rowOf(judge(lines, s, testLimits, true, true), "memory"); !r.Pass || r.Layer != layerMemoryGVisorSentry {
		t.Errorf("sandbox ended at the limit without a host OOM kill: %+v", r)
	}
	// Ended short of the limit (a deadline, a kill): no evidence.
	s["memory"] = Sample{OK: true, After: cgroups.Events{MemoryPeak: 100 << 20}}
	if r := rowOf(judge(lines, s, testLimits, true, true), "memory"); r.Pass {
		t.Errorf("sandbox ended short of the limit, yet memory passed: %+v", r)
	}
	// An OOM kill with the group far below its limit is the host's or a
	// parent group's memory running out, not the limit.
	s["memory"] = Sample{OK: true, After: cgroups.Events{OOMKills: 1, MemoryPeak: 64 << 20}}
	if r := rowOf(judge(lines, s, testLimits, true, true), "memory"); r.Pass || !strings.Contains(r.Detail, "never reached its limit") {
		t.Errorf("an OOM kill below the limit, yet %+v", r)
	}
	// No limit at all: neither an end nor an OOM kill is the control's.
	unlimited := *testLimits
	unlimited.MemoryMax = cgroups.Unlimited
	for _, after := range []cgroups.Events{{}, {OOMKills: 1, MemoryPeak: 1 << 30}} {
		s["memory"] = Sample{OK: true, After: after}
		if r := rowOf(judge(lines, s, &unlimited, true, true), "memory"); r.Pass || !strings.Contains(r.Detail, "no limit") {
			t.Errorf("no memory limit, yet %+v", r)
		}
	}
	// The sandbox survived the allocation: the limit did not bite.
	lines["memory"] = Line{Control: "memory", Observed: "no kill", Pass: false}
	if r := rowOf(judge(lines, s, testLimits, true, true), "memory"); r.Pass {
		t.Errorf("the allocation went through, yet memory passed: %+v", r)
	}
	delete(lines, "memory")
	// Without -gvisor the same pids line needs pids.events.
	if r := rowOf(judge(lines, s, testLimits, false, true), "pids"); r.Pass {
		t.Errorf("%+v", r)
	}
}

func TestProbeReportOutput(t *testing.T) {
	rep := &Report{ID: "p", Profile: "default", Mode: "enforce", Backend: "runc", Finished: true,
		Controls: judge(allPass(), bitten(), testLimits, false, true)}
	rep.Controls[1].Pass = false
	rep.Controls[1].Result = Fail
	rep.Controls[1].Detail = "why"
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"CONTROL", "HOST EVIDENCE", "pids.events max +1", "FAILED: etc", "  etc: why"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Controls []map[string]any `json:"controls"`
	}
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "attempt", "observed", "layer", "host_evidence", "pass", "result"} {
		if _, ok := m.Controls[15][k]; !ok { // pids
			t.Errorf("json control lacks %q: %v", k, m.Controls[15])
		}
	}
}

// A write that went through inside holds only when the host folder is
// unchanged: a copy-on-write workspace, not a writable bind.
func TestJudgeWorkspaceWrite(t *testing.T) {
	lines := allPass()
	lines["workspace"] = Line{Control: "workspace", Observed: "written", Pass: false}
	if r := rowOf(judge(lines, bitten(), testLimits, false, true), "workspace"); !r.Pass || r.Layer != "copy-on-write workspace" {
		t.Errorf("unchanged host folder: %+v", r)
	}
	if r := rowOf(judge(lines, bitten(), testLimits, false, false), "workspace"); r.Pass || r.Evidence != "host folder CHANGED" {
		t.Errorf("changed host folder passed: %+v", r)
	}
}

// Under gVisor a memory row without a line passes only when the sandbox
// really ended: a sandbox kept alive past the allocation, whose line the
// host did not get before it stopped waiting, is no evidence.
func TestJudgeProbeGVisorMemoryAlive(t *testing.T) {
	lines := allPass()
	delete(lines, "memory")
	lines["pids"] = Line{Control: "pids", Observed: "EAGAIN", Layer: "gVisor (Sentry): RLIMIT_NPROC", Pass: true}
	out := Output{lines: lines, samples: bitten(), Finished: true, ended: false}
	r := rowOf(Judge(out, Host{Limits: testLimits, GVisor: true, HostFolderUnchanged: true}), "memory")
	if r.Pass || r.Result != Fail || r.Observed == "sandbox ended" || !strings.HasPrefix(r.Detail, "no evidence") {
		t.Errorf("sandbox alive, no memory line: %+v", r)
	}
	// A sandbox that ended before the done line never made the attempt.
	out = Output{lines: lines, samples: bitten(), Finished: false, ended: true}
	if r := rowOf(Judge(out, Host{Limits: testLimits, GVisor: true, HostFolderUnchanged: true}), "memory"); r.Pass || r.Observed == "sandbox ended" {
		t.Errorf("sandbox ended before done, memory: %+v", r)
	}
}

// fakeEvents counts readings; each reading shows one more OOM kill, so a
// sample taken at the end shows the kill.
func fakeEvents() func() (cgroups.Events, error) {
	var n uint64
	return func() (cgroups.Events, error) {
		n++
		return cgroups.Events{OOMKills: n, MemoryPeak: 256 << 20}, nil
	}
}

// Read tells a sandbox that ended (EOF) from one the host stopped
// waiting for, and the memory row follows.
func TestReadProbeGVisorEnd(t *testing.T) {
	feed := func(closeAfter bool) <-chan string {
		ch := make(chan string, len(protocol.Controls)+1)
		for n, l := range allPass() {
			if n == "memory" {
				continue
			}
			ch <- `{"control":"` + n + `","observed":"` + l.Observed + `","pass":true}`
		}
		ch <- protocol.Done
		if closeAfter {
			close(ch)
		}
		return ch
	}
	host := Host{Limits: testLimits, GVisor: true, HostFolderUnchanged: true}

	ended := Read(context.Background(), feed(true), fakeEvents(), true, time.Minute, nil)
	if !ended.Finished || !ended.ended {
		t.Fatalf("finished %v ended %v", ended.Finished, ended.ended)
	}
	if r := rowOf(Judge(ended, host), "memory"); !r.Pass || r.Observed != "sandbox ended" {
		t.Errorf("sandbox ended with an OOM kill: %+v", r)
	}

	// The sandbox stays alive: the wait after done runs out.
	alive := Read(context.Background(), feed(false), fakeEvents(), true, 50*time.Millisecond, nil)
	if !alive.Finished || alive.ended {
		t.Fatalf("finished %v ended %v", alive.Finished, alive.ended)
	}
	if r := rowOf(Judge(alive, host), "memory"); r.Pass || r.Result != Fail {
		t.Errorf("sandbox alive past the allocation, memory passed: %+v", r)
	}

	// The whole run's deadline: the same.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	timedOut := Read(ctx, feed(false), fakeEvents(), true, time.Minute, nil)
	if r := rowOf(Judge(timedOut, host), "memory"); r.Pass {
		t.Errorf("read timed out, memory passed: %+v", r)
	}
}

// On runc too a row holds only on the container's own limit: an OOM kill
// below the memory limit, or a refused fork with no pids limit, is a
// parent group's or the host's doing.
func TestJudgeProbeOwnLimits(t *testing.T) {
	s := bitten()
	s["memory"] = Sample{OK: true, After: cgroups.Events{OOMKills: 1, MemoryPeak: 64 << 20}}
	if r := rowOf(judge(allPass(), s, testLimits, false, true), "memory"); r.Pass {
		t.Errorf("an OOM kill below the memory limit passed: %+v", r)
	}
	noPids := *testLimits
	noPids.PidsMax = cgroups.Unlimited
	if r := rowOf(judge(allPass(), bitten(), &noPids, false, true), "pids"); r.Pass || !strings.Contains(r.Detail, "no limit") {
		t.Errorf("a refused fork without a pids limit: %+v", r)
	}
}

// Under gVisor the host tells the cpu attempt to stop once the
// container's nr_throttled grew by protocol.CPUBites since the last line,
// once for that wait, and never after the cpu line: the probe cannot see
// the host's cgroup, and a fixed spin on a busy host may never reach the
// quota.
func TestReadTellsCPUSpinToStop(t *testing.T) {
	var throttled, reads atomic.Uint64
	events := func() (cgroups.Events, error) {
		reads.Add(1)
		return cgroups.Events{NrThrottled: throttled.Load()}, nil
	}
	lines := make(chan string)
	stops := make(chan struct{}, 10)
	done := make(chan Output)
	go func() {
		done <- Read(context.Background(), lines, events, true, time.Minute, func() { stops <- struct{}{} })
	}()
	lines <- `{"control":"devices","observed":"ok","pass":true}`
	// The counters are read at the start and as the line is taken: only
	// then is the wait for the cpu line the one that counts.
	for reads.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	// Throttling short of the bites: no word.
	throttled.Add(protocol.CPUBites - 1)
	select {
	case <-stops:
		t.Fatal("told to stop before the quota bit protocol.CPUBites times")
	case <-time.After(5 * cpuPoll):
	}
	throttled.Add(1)
	select {
	case <-stops:
	case <-time.After(50 * cpuPoll):
		t.Fatal("the quota bit and the spin was not told to stop")
	}
	throttled.Add(10 * protocol.CPUBites)
	select {
	case <-stops:
		t.Fatal("told twice in one wait")
	case <-time.After(5 * cpuPoll):
	}
	lines <- `{"control":"cpu","observed":"ratio 1.00","pass":true,"skipped":true}`
	throttled.Add(10 * protocol.CPUBites)
	select {
	case <-stops:
		t.Fatal("told to stop after the cpu line")
	case <-time.After(5 * cpuPoll):
	}
	close(lines)
	out := <-done
	if s := out.samples["cpu"]; s.After.NrThrottled-s.Before.NrThrottled < protocol.CPUBites {
		t.Errorf("cpu sample %+v: the bites are not in it", s)
	}
}
