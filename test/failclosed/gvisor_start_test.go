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
	"bulkhead.dev/bulkhead/test/leftover"
)

// TestFailClosedGVisorStart: gVisor's sandbox arms its own seccomp filter
// and no_new_privs only when the workload starts. A runsc that says it
// started but never armed the sandbox (here: its start does nothing) must
// make bulkhead's start fail naming the control, and the container must
// be gone.
func TestFailClosedGVisorStart(t *testing.T) {
	binaries.NeedRoot(t, "runsc")
	real, err := exec.LookPath("runsc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "runsc")
	script := fmt.Sprintf("#!/bin/sh\n# A runsc whose start does nothing.\ncase \" $* \" in *\" start \"*) exit 0 ;; esac\nexec %q \"$@\"\n", real)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.toml")
	toml := fmt.Sprintf("default_profile = \"gvisor\"\naudit_log = %q\n[backends.runsc]\npath = %q\nargs = [\"--platform=ptrace\"]\n",
		filepath.Join(dir, "audit.jsonl"), wrapper)
	if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	b := bundle.New(t, []string{"sleep", "600"})
	root := filepath.Join(dir, "state")
	id := fmt.Sprintf("gvisor-start-%d", os.Getpid())
	r := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--config", config, "--root", root, "run", "--detach", "--bundle", b, id)
	if r.Code == 0 || !strings.Contains(r.Stderr, "verification after start: control seccomp") {
		t.Fatalf("run of an unarmed gVisor sandbox: exit %d, stderr %q; want a failure naming control seccomp", r.Code, r.Stderr)
	}
	if st := (binaries.Cmd{}).Run(t, real, "--root", filepath.Join(root, "runsc"), "state", id); st.Code == 0 {
		t.Errorf("runsc still has %s: %s", id, st.Stdout)
	}
	if p, left := leftover.Cgroup(b, root, id); left {
		t.Errorf("cgroup %s left behind", p)
	}
	if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); err == nil {
		t.Errorf("state of %s left behind", id)
	}
}
