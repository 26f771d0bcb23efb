package test

import (
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/bundle"
)

// A job that swaps a directory of its own with links into /proc and /sys
// while execs are made there lands no exec in those trees on runc: the
// cwd rule resolves the path, the job swaps the link, and the directory
// runc is handed is judged where it lies, not where the path once led.
// runsc resolves an exec's cwd in gVisor's own tree, whose /proc holds no
// host descriptor.
func TestExecCwdSwappedIntoRuntimeTrees(t *testing.T) {
	needRoot(t, "runc")
	g := []string{"--root", stateRoot(t), "--backend", "runc"}
	swap := "cd /tmp && mkdir D && while :; do mv D v; mv v D; ln -s /proc/1 P; mv P v; rm v; ln -s /sys/fs/cgroup P; mv P v; rm v; done"
	id := uniqueID("cwd-race")
	must(t, append(g, "run", "--detach", "--bundle", bundle.New(t, []string{"sh", "-c", swap}), id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	refused := 0
	for i, end := 0, time.Now().Add(3*time.Minute); refused < 3 && time.Now().Before(end); i++ {
		r := bulkhead(t, "", append(g, "exec", "--cwd", "/tmp/v", id, "sh", "-c", "pwd -P")...)
		cwd := strings.TrimSpace(r.stdout)
		if r.code == 0 && (strings.HasPrefix(cwd, "/proc") || strings.HasPrefix(cwd, "/sys") || strings.HasPrefix(cwd, "/dev")) {
			t.Fatalf("exec %d --cwd /tmp/v ran in %s", i, cwd)
		}
		if r.code != 0 && (strings.Contains(r.stderr, "under /proc when opened") || strings.Contains(r.stderr, "under /sys when opened")) {
			refused++
		}
	}
	if refused == 0 {
		t.Errorf("in 3 minutes of execs no path led into /proc or /sys once the rule had resolved it: the race was not run")
	}
}
