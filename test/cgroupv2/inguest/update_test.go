package inguest

import (
	"strconv"
	"strings"
	"testing"
)

// TestUpdateCannotRaise: `update` with huge values, with -1 (unlimited),
// with a CPU burst or with raw v2 files in unified leaves pids.max,
// memory.max, memory.swap.max, cpu.max and cpu.max.burst within the
// profile's ceilings; unified is refused outright. A stricter update does
// apply, so the files are read after a real update, not a no-op.
func TestUpdateCannotRaise(t *testing.T) {
	needV2(t)
	e := newEnv(t, "")
	id := newID(t)
	pid := e.created(t, sleeper(t, id), id)
	dir := groupDir(t, pid)
	within := func(t *testing.T) {
		t.Helper()
		limits := map[string]string{}
		for _, f := range []string{"pids.max", "memory.max", "memory.swap.max", "cpu.max", "cpu.max.burst"} {
			limits[f] = file(t, dir, f)
		}
		t.Logf("after: %v", limits)
		atMost := func(name, s string, ceiling int64) {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n > ceiling {
				t.Errorf("%s = %q, above the ceiling %d", name, s, ceiling)
			}
		}
		atMost("pids.max", limits["pids.max"], 64)
		atMost("memory.max", limits["memory.max"], 256<<20)
		atMost("memory.swap.max", limits["memory.swap.max"], 0)
		atMost("cpu.max.burst", limits["cpu.max.burst"], 0)
		q := strings.Fields(limits["cpu.max"])
		if len(q) != 2 {
			t.Fatalf("cpu.max = %q", limits["cpu.max"])
		}
		quota, err1 := strconv.ParseInt(q[0], 10, 64)
		period, err2 := strconv.ParseInt(q[1], 10, 64)
		if err1 != nil || err2 != nil || quota > period {
			t.Errorf("cpu.max = %q: more than one CPU", limits["cpu.max"])
		}
	}
	t.Run("flags", func(t *testing.T) {
		r := e.run(t, "", "update", "--pids-limit", "100000", "--memory", "1t", "--memory-swap", "-1",
			"--cpu-quota", "10000000", "--cpu-period", "100000", id)
		if r.code != 0 {
			t.Errorf("update: exit %d, want the values clamped: %s", r.code, r.stderr)
		}
		within(t)
	})
	t.Run("burst", func(t *testing.T) {
		r := e.run(t, "", "update", "--cpu-burst", "1000000", id)
		t.Logf("exit %d: %s", r.code, r.stderr)
		within(t)
	})
	t.Run("huge", func(t *testing.T) {
		r := e.run(t, `{"pids":{"limit":9223372036854775807},"memory":{"limit":9223372036854771712,"swap":-1},"cpu":{"quota":9223372036854775807,"period":1000}}`,
			"update", "--resources", "-", id)
		t.Logf("exit %d: %s", r.code, r.stderr)
		within(t)
	})
	t.Run("unified", func(t *testing.T) {
		r := e.run(t, `{"unified":{"pids.max":"max","memory.max":"max","memory.swap.max":"max","cpu.max":"max 100000","cpu.max.burst":"1000000","cgroup.procs":"1"}}`,
			"update", "--resources", "-", id)
		if r.code == 0 || !strings.Contains(r.stderr, "unified") {
			t.Errorf("update with unified: exit %d, want a refusal naming unified: %s", r.code, r.stderr)
		}
		within(t)
	})
	t.Run("stricter", func(t *testing.T) {
		if r := e.run(t, "", "update", "--pids-limit", "32", id); r.code != 0 {
			t.Fatalf("update --pids-limit 32: exit %d: %s", r.code, r.stderr)
		}
		if got := file(t, dir, "pids.max"); got != "32" {
			t.Errorf("pids.max = %q after update --pids-limit 32", got)
		}
		within(t)
	})
}
