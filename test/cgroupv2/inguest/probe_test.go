package inguest

import (
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
)

// TestProbe: `bulkhead probe` on runc holds every control, and the
// host evidence of the cgroup controls comes from the v2 files: pids.events
// max, memory.events oom_kill, cpu.stat nr_throttled, each grown.
func TestProbe(t *testing.T) {
	needV2(t)
	e := newEnv(t, "")
	r := e.run(t, "", "probe", "--backend", "runc", "--format", "json")
	var rep struct {
		Pass     bool `json:"pass"`
		Finished bool `json:"finished"`
		Controls []struct {
			Name     string `json:"name"`
			Observed string `json:"observed"`
			Layer    string `json:"layer"`
			Evidence string `json:"host_evidence"`
			Pass     bool   `json:"pass"`
			Detail   string `json:"detail"`
		} `json:"controls"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("probe output is not one JSON report (%v):\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	if r.code != 0 || !rep.Pass || !rep.Finished {
		t.Errorf("probe: exit %d, pass %v, finished %v: %s", r.code, rep.Pass, rep.Finished, r.stderr)
	}
	evidence := map[string]*regexp.Regexp{
		"pids":   regexp.MustCompile(`^pids\.events max \+(\d+) \(pids\.max 64\)`),
		"memory": regexp.MustCompile(`^memory oom_kill \+(\d+)`),
		"cpu":    regexp.MustCompile(`^cpu\.stat nr_throttled \+(\d+)`),
	}
	seen := map[string]bool{}
	for _, c := range rep.Controls {
		t.Logf("%-5v %-13s %-30.30s %-24s %s %s", c.Pass, c.Name, c.Observed, c.Layer, c.Evidence, c.Detail)
		if !c.Pass {
			t.Errorf("control %s did not hold: %s %s", c.Name, c.Observed, c.Detail)
		}
		re, ok := evidence[c.Name]
		if !ok {
			continue
		}
		seen[c.Name] = true
		m := re.FindStringSubmatch(c.Evidence)
		if m == nil {
			t.Errorf("%s: host evidence %q is not from the v2 files", c.Name, c.Evidence)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n == 0 {
			t.Errorf("%s: host counter did not grow: %q", c.Name, c.Evidence)
		}
	}
	for name := range evidence {
		if !seen[name] {
			t.Errorf("no %s control in the report", name)
		}
	}
}
