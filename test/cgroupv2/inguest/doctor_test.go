package inguest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorCgroups: `bulkhead doctor` sees the v2-only layout as fit: cgroup
// v2, the pids, memory, cpu controllers enabled for child groups, the
// device filter as eBPF, swap accounting on. Other checks (runc's CVEs,
// the configuration file) concern the guest's packaging, not cgroups, and
// are only logged.
func TestDoctorCgroups(t *testing.T) {
	needV2(t)
	// A freshly booted host has no group below the root, and the root has
	// no memory.swap.max: swap accounting must still be found.
	var groups []string
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	for _, d := range ents {
		if d.IsDir() {
			groups = append(groups, d.Name())
		}
	}
	t.Logf("groups below the root before doctor: %v", groups)
	e := newEnv(t, "")
	r := e.run(t, "", "doctor", "--format", "json")
	var rep struct {
		Checks []struct {
			Name   string `json:"check"`
			Status string `json:"status"`
			Found  string `json:"found"`
			Fix    string `json:"fix"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor output is not one JSON report (%v):\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	want := map[string]bool{"cgroups": false, "cgroup pids": false, "cgroup memory": false, "cgroup cpu": false,
		"cgroup devices": false, "cgroup memory swap": false}
	for _, c := range rep.Checks {
		t.Logf("%-5s %-22s %s %s", c.Status, c.Name, c.Found, c.Fix)
		if _, ok := want[c.Name]; !ok {
			continue
		}
		want[c.Name] = true
		if c.Status != "ok" {
			t.Errorf("%s: %s: %s (%s)", c.Name, c.Status, c.Found, c.Fix)
		}
		if c.Name == "cgroups" && !strings.Contains(c.Found, "cgroup v2") {
			t.Errorf("cgroups: found %q, want cgroup v2", c.Found)
		}
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/bulkhead-doctor-*"); len(left) > 0 {
		t.Errorf("doctor left the groups it made to look: %v", left)
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("doctor has no %q check", name)
		}
	}
}
