package inguest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecStaysInTheGroup: runc compares `exec --cgroup` paths as text,
// so `../<group>-host` reached a sibling group with no limits. On v2 too
// the exec is refused and the sibling gets no process; a sub-group of the
// container's own still takes one.
func TestExecStaysInTheGroup(t *testing.T) {
	needV2(t)
	e := newEnv(t, "")
	id := newID(t)
	dir := groupDir(t, e.created(t, sleeper(t, id), id))
	sibling, sub := dir+"-host", filepath.Join(dir, "sub")
	for _, d := range []string{sibling, sub} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Registered after created's delete, so it runs before it: remove
	// the groups once the container is gone.
	t.Cleanup(func() {
		e.run(t, "", "delete", "--force", id)
		os.Remove(sub)
		os.Remove(sibling)
	})
	r := e.run(t, "", "exec", "-d", "--cgroup", "../"+filepath.Base(sibling), id, "sleep", "30")
	if procs := file(t, sibling, "cgroup.procs"); r.code == 0 || procs != "" {
		t.Fatalf("exec --cgroup into the sibling %s: exit %d, stderr %q, processes there %q; want refused and none", sibling, r.code, r.stderr, procs)
	}
	if !strings.Contains(r.stderr, "--cgroup") {
		t.Errorf("the refusal does not name --cgroup: %q", r.stderr)
	}
	if r := e.run(t, "", "exec", "-d", "--cgroup", "sub", id, "sleep", "1"); r.code != 0 {
		t.Fatalf("exec into the container's own sub-group: exit %d: %s", r.code, r.stderr)
	}
}
