package inguest

import (
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestUnifiedRefusedAtCreate: linux.resources.unified writes raw v2 files,
// so runc would apply them after the typed limits the policy clamped. No
// key is allowlisted: those that move processes (cgroup.procs,
// cgroup.threads), widen limits (*.burst, memory.high or memory.max above
// the ceiling, pids.max max) and even harmless ones are refused before
// anything runs, and nothing is left.
func TestUnifiedRefusedAtCreate(t *testing.T) {
	needV2(t)
	cases := map[string]map[string]string{
		"cgroup.procs":      {"cgroup.procs": "1"},
		"cgroup.threads":    {"cgroup.threads": "1"},
		"cgroup.subtree":    {"cgroup.subtree_control": "+cpu +memory"},
		"cpu.max.burst":     {"cpu.max.burst": "1000000"},
		"memory.high-above": {"memory.high": "1073741824"},
		"memory.high-max":   {"memory.high": "max"},
		"memory.high-below": {"memory.high": "1048576"},
		"memory.max":        {"memory.max": "max"},
		"memory.swap.max":   {"memory.swap.max": "max"},
		"pids.max":          {"pids.max": "max"},
		"cpu.max":           {"cpu.max": "max 100000"},
		"memory.oom.group":  {"memory.oom.group": "1"},
	}
	for name, unified := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "")
			id := newID(t)
			b := sleeper(t, id, func(s *rspec.Spec) { s.Linux.Resources.Unified = unified })
			orig := readConfig(t, b)
			r := e.run(t, "", "create", "--bundle", b, id)
			t.Cleanup(func() { e.run(t, "", "delete", "--force", id) })
			if r.code == 0 {
				t.Fatalf("create with unified %v succeeded", unified)
			}
			if !strings.Contains(r.stderr, "linux.resources.unified") {
				t.Errorf("the refusal does not name linux.resources.unified:\n%s", r.stderr)
			}
			e.assertNothingLeft(t, id)
			unchanged(t, b, orig)
		})
	}
}
