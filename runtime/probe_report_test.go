package runtime

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/cgroups"
)

func f64(v float64) *float64 { return &v }

// allPass is a probe run where every line passed, as on runc.
func allPass() map[string]ProbeLine {
	lines := map[string]ProbeLine{}
	for _, n := range ProbeControls {
		lines[n] = ProbeLine{Control: n, Attempt: "try " + n, Observed: "EPERM", Layer: "x", Pass: true}
	}
	lines["pids"] = ProbeLine{Control: "pids", Observed: "EAGAIN", Layer: "pids cgroup", Pass: true}
	lines["memory"] = ProbeLine{Control: "memory", Observed: "SIGKILL", Layer: "memory cgroup", Pass: true}
	lines["cpu"] = ProbeLine{Control: "cpu", Observed: "ratio 1.01", Layer: "cpu cgroup", Pass: true, Value: f64(1.01)}
	return lines
}

func bitten() map[string]probeSample {
	return map[string]probeSample{
		"pids":   {After: cgroups.Events{PidsMax: 1}, OK: true},
		"memory": {After: cgroups.Events{OOMKills: 1}, OK: true},
		"cpu":    {After: cgroups.Events{NrThrottled: 12}, OK: true},
	}
}

var testLimits = &cgroups.Limits{PidsMax: 64, MemoryMax: 256 << 20, CPUQuota: 100000, CPUPeriod: 100000}

func rowOf(rows []ProbeControl, name string) ProbeControl {
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	return ProbeControl{}
}

func TestJudgeProbeAllHold(t *testing.T) {
	rows := judgeProbe(allPass(), bitten(), testLimits, false, true)
	if len(rows) != len(ProbeControls) {
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
	s["pids"] = probeSample{OK: true}
	s["memory"] = probeSample{OK: true}
	s["cpu"] = probeSample{OK: true}
	lines := allPass()
	lines["cpu"] = ProbeLine{Control: "cpu", Observed: "ratio 1.01", Pass: true, Value: f64(1.01)}
	rows := judgeProbe(lines, s, testLimits, false, true)
	for _, n := range []string{"pids", "memory", "cpu"} {
		if r := rowOf(rows, n); r.Pass {
			t.Errorf("%s passed without host evidence: %+v", n, r)
		}
	}
	// A missing reading fails too.
	delete(s, "pids")
	if r := rowOf(judgeProbe(lines, s, testLimits, false, true), "pids"); r.Pass || r.Evidence != "no cgroup reading" {
		t.Errorf("%+v", r)
	}
}

func TestJudgeProbeCPUContended(t *testing.T) {
	s := bitten()
	s["cpu"] = probeSample{OK: true}
	lines := allPass()
	lines["cpu"] = ProbeLine{Control: "cpu", Observed: "ratio 0.80", Pass: true, Value: f64(0.8)}
	if r := rowOf(judgeProbe(lines, s, testLimits, false, true), "cpu"); !r.Pass || !strings.Contains(r.Layer, "host busy") {
		t.Errorf("%+v", r)
	}
	if r := rowOf(judgeProbe(lines, s, testLimits, true, true), "cpu"); r.Pass {
		t.Errorf("gVisor needs nr_throttled: %+v", r)
	}
}

func TestJudgeProbeMissingLineFails(t *testing.T) {
	lines := allPass()
	delete(lines, "seccomp")
	r := rowOf(judgeProbe(lines, bitten(), testLimits, false, true), "seccomp")
	if r.Pass || r.Observed != "no line" {
		t.Errorf("%+v", r)
	}
	lines = allPass()
	lines["workspace"] = ProbeLine{Control: "workspace", Observed: "skipped", Pass: true, Skipped: true}
	if r := rowOf(judgeProbe(lines, bitten(), testLimits, false, true), "workspace"); r.Pass {
		t.Errorf("a skipped control passed: %+v", r)
	}
}

// Under gVisor the memory attempt ends the sandbox: no line, and the
// host's oom_kill decides. pids holds by gVisor's RLIMIT_NPROC.
func TestJudgeProbeGVisor(t *testing.T) {
	lines := allPass()
	delete(lines, "memory")
	lines["pids"] = ProbeLine{Control: "pids", Observed: "EAGAIN", Layer: "gVisor (Sentry): RLIMIT_NPROC", Pass: true}
	lines["cpu"] = ProbeLine{Control: "cpu", Observed: "ratio 2.1 (not judged: gVisor)", Skipped: true, Value: f64(2.1)}
	s := bitten()
	s["pids"] = probeSample{OK: true}
	rows := judgeProbe(lines, s, testLimits, true, true)
	for _, n := range []string{"pids", "memory", "cpu"} {
		if r := rowOf(rows, n); !r.Pass {
			t.Errorf("%s: %+v", n, r)
		}
	}
	if r := rowOf(rows, "memory"); r.Layer != layerMemoryGVisor || r.Observed != "sandbox ended" {
		t.Errorf("%+v", r)
	}
	// The sandbox ended with no host OOM kill counted: gVisor's own
	// accounting ended it; said so in the layer.
	s["memory"] = probeSample{OK: true}
	if r := rowOf(judgeProbe(lines, s, testLimits, true, true), "memory"); !r.Pass || r.Layer != layerMemoryGVisorSentry {
		t.Errorf("sandbox ended without a host OOM kill: %+v", r)
	}
	// The sandbox survived the allocation: the limit did not bite.
	lines["memory"] = ProbeLine{Control: "memory", Observed: "no kill", Pass: false}
	if r := rowOf(judgeProbe(lines, s, testLimits, true, true), "memory"); r.Pass {
		t.Errorf("the allocation went through, yet memory passed: %+v", r)
	}
	delete(lines, "memory")
	// Without -gvisor the same pids line needs pids.events.
	if r := rowOf(judgeProbe(lines, s, testLimits, false, true), "pids"); r.Pass {
		t.Errorf("%+v", r)
	}
}

func TestProbeReportOutput(t *testing.T) {
	rep := &ProbeReport{ID: "p", Profile: "default", Mode: "enforce", Backend: "runc", Finished: true,
		Controls: judgeProbe(allPass(), bitten(), testLimits, false, true)}
	rep.Controls[1].Pass = false
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
	for _, k := range []string{"name", "attempt", "observed", "layer", "host_evidence", "pass"} {
		if _, ok := m.Controls[15][k]; !ok { // pids
			t.Errorf("json control lacks %q: %v", k, m.Controls[15])
		}
	}
}

// A write that went through inside holds only when the host folder is
// unchanged: a copy-on-write workspace, not a writable bind.
func TestJudgeWorkspaceWrite(t *testing.T) {
	lines := allPass()
	lines["workspace"] = ProbeLine{Control: "workspace", Observed: "written", Pass: false}
	if r := rowOf(judgeProbe(lines, bitten(), testLimits, false, true), "workspace"); !r.Pass || r.Layer != "copy-on-write workspace" {
		t.Errorf("unchanged host folder: %+v", r)
	}
	if r := rowOf(judgeProbe(lines, bitten(), testLimits, false, false), "workspace"); r.Pass || r.Evidence != "host folder CHANGED" {
		t.Errorf("changed host folder passed: %+v", r)
	}
}
