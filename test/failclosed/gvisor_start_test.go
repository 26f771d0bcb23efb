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
	dir := t.TempDir()
	real, wrapper := wrappedRunsc(t, dir, "A runsc whose start does nothing.", `*" start "*) exit 0 ;;`)
	config := gvisorConfig(t, dir, "config.toml", wrapper)
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

// TestStartRefusedWithoutProfile: a gVisor container whose profile was
// removed from the configuration between create and start cannot be
// verified after start, so it must not start; the refusal names the
// profile and what to do.
func TestStartRefusedWithoutProfile(t *testing.T) {
	binaries.NeedRoot(t, "runsc")
	runsc, err := exec.LookPath("runsc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	backends := fmt.Sprintf("[backends.runsc]\npath = %q\nargs = [\"--platform=ptrace\"]\n", runsc)
	write := func(toml string) {
		if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("default_profile = \"sandboxed\"\n" + backends + "[profiles.sandboxed]\nbackend = \"runsc\"\n")
	b := bundle.New(t, []string{"sleep", "600"})
	root := filepath.Join(dir, "state")
	id := fmt.Sprintf("start-noprofile-%d", os.Getpid())
	t.Cleanup(func() {
		binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--config", config, "--root", root, "delete", "--force", id)
	})
	if r := (binaries.Cmd{}).Run(t, binaries.Bulkhead(t), "--config", config, "--root", root, "create", "--bundle", b, id); r.Code != 0 {
		t.Fatalf("create: exit %d: %s", r.Code, r.Stderr)
	}
	write(backends)
	r := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--config", config, "--root", root, "start", id)
	if r.Code == 0 || !strings.Contains(r.Stderr, `profile "sandboxed"`) {
		t.Fatalf("start without the container's profile: exit %d, stderr %q; want a refusal naming the profile", r.Code, r.Stderr)
	}
	st := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), "--config", config, "--root", root, "state", id)
	if !strings.Contains(st.Stdout, `"status": "created"`) && !strings.Contains(st.Stdout, `"status":"created"`) {
		t.Errorf("after a refused start the container is not still created: %s %s", st.Stdout, st.Stderr)
	}
	t.Logf("exit %d: %s", r.Code, strings.TrimSpace(r.Stderr))
}

// wrappedRunsc writes dir/runsc: a runsc that matches its arguments
// against the shell case arms given (why says what they do) before it
// runs the real one. It returns the real runsc and the wrapper.
func wrappedRunsc(t *testing.T, dir, why, arms string) (real, wrapper string) {
	t.Helper()
	real, err := exec.LookPath("runsc")
	if err != nil {
		t.Fatal(err)
	}
	wrapper = filepath.Join(dir, "runsc")
	script := fmt.Sprintf("#!/bin/sh\n# %s\ncase \" $* \" in %s esac\nexec %q \"$@\"\n", why, arms, real)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return real, wrapper
}

// gvisorConfig writes the configuration dir/name: the gvisor profile by
// default, on the runsc at path (ptrace platform), auditing to
// dir/audit.jsonl.
func gvisorConfig(t *testing.T, dir, name, path string) string {
	t.Helper()
	cfg := filepath.Join(dir, name)
	toml := fmt.Sprintf("default_profile = \"gvisor\"\naudit_log = %q\n[backends.runsc]\npath = %q\nargs = [\"--platform=ptrace\"]\n",
		filepath.Join(dir, "audit.jsonl"), path)
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}
