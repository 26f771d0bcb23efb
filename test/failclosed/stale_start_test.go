package failclosed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestStaleStartStartsNothingElse: a start on runsc is held before its
// backend's start acts (runsc starts by id); meanwhile the container is
// deleted and another create takes the id. When the start goes on, runsc
// starts the other container, which that start never checked: bulkhead's
// start must fail and kill it. Before, the start took the verified
// sandbox, gone, for one that had ended, and succeeded.
func TestStaleStartStartsNothingElse(t *testing.T) {
	binaries.NeedRoot(t, "runsc")
	dir := t.TempDir()
	real, wrapper := wrappedRunsc(t, dir, "A runsc whose start waits for the test.",
		fmt.Sprintf(`*" start "*) touch %q; while [ ! -e %q ]; do sleep 0.05; done ;;`, filepath.Join(dir, "reached"), filepath.Join(dir, "go")))
	held, plain := gvisorConfig(t, dir, "held.toml", wrapper), gvisorConfig(t, dir, "plain.toml", real)
	root := filepath.Join(dir, "state")
	id := fmt.Sprintf("stale-start-%d", os.Getpid())
	b := bundle.New(t, []string{"sleep", "600"})
	bulkhead := binaries.Bulkhead(t)
	must := func(args ...string) {
		t.Helper()
		if r := (binaries.Cmd{}).Run(t, bulkhead, append([]string{"--config", plain, "--root", root}, args...)...); r.Code != 0 {
			t.Fatalf("%s: exit %d\n%s", args, r.Code, r.Stderr)
		}
	}
	t.Cleanup(func() { exec.Command(bulkhead, "--config", plain, "--root", root, "delete", "--force", id).Run() })
	must("create", "--bundle", b, id)

	stale := startHeld(t, exec.Command(bulkhead, "--config", held, "--root", root, "start", id),
		"the held start", filepath.Join(dir, "reached"), filepath.Join(dir, "go"))
	must("delete", "--force", id)
	must("create", "--bundle", b, id)
	stale.release(t)
	if stale.cmd.ProcessState.Success() || !strings.Contains(stale.stderr.String(), "not the one verified") {
		t.Errorf("the stale start: %v, want a failure saying it started another container\n%s", stale.cmd.ProcessState, stale.stderr.String())
	}
	out, _ := exec.Command(real, "--root", filepath.Join(root, "runsc"), "state", id).Output()
	if strings.Contains(string(out), `"running"`) {
		t.Errorf("the other container runs after the stale start:\n%s", out)
	}
}
