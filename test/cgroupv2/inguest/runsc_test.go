package inguest

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRunsc: a gVisor sandbox (ptrace platform) runs under bulkhead's
// policy on a v2-only host, and create's verification reads the sandbox's
// limits from the v2 files. Under software emulation this is slow; the
// time is logged, not asserted.
func TestRunsc(t *testing.T) {
	needV2(t)
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skipf("needs runsc on PATH (hack/install-deps.sh installs it): %v", err)
	}
	e := newEnv(t, "")
	id := newID(t)
	b := bundleRunning(t, id, []string{"echo", "hello from gVisor"})
	start := time.Now()
	r := e.run(t, "", "--backend", "runsc", "run", "--bundle", b, id)
	t.Logf("runsc run took %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { e.run(t, "", "delete", "--force", id) })
	if r.code != 0 || !strings.Contains(r.stdout, "hello from gVisor") {
		t.Errorf("run on runsc: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
}
