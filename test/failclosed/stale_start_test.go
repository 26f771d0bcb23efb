package failclosed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	real, err := exec.LookPath("runsc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "runsc")
	script := fmt.Sprintf("#!/bin/sh\n# A runsc whose start waits for the test.\ncase \" $* \" in *\" start \"*) touch %q; while [ ! -e %q ]; do sleep 0.05; done ;; esac\nexec %q \"$@\"\n",
		filepath.Join(dir, "reached"), filepath.Join(dir, "go"), real)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	config := func(name, path string) string {
		cfg := filepath.Join(dir, name)
		toml := fmt.Sprintf("default_profile = \"gvisor\"\naudit_log = %q\n[backends.runsc]\npath = %q\nargs = [\"--platform=ptrace\"]\n",
			filepath.Join(dir, "audit.jsonl"), path)
		if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	held, plain := config("held.toml", wrapper), config("plain.toml", real)
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
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(dir, "go"), nil, 0o600)
		exec.Command(bulkhead, "--config", plain, "--root", root, "delete", "--force", id).Run()
	})
	must("create", "--bundle", b, id)

	stale := exec.Command(bulkhead, "--config", held, "--root", root, "start", id)
	var stderr strings.Builder
	stale.Stderr = &stderr
	if err := stale.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- stale.Wait() }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "reached")); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the start ended (%v) before its backend's start:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the start did not reach its backend's start in 60 s:\n%s", stderr.String())
		}
	}
	must("delete", "--force", id)
	must("create", "--bundle", b, id)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the held start did not end within 2 minutes:\n%s", stderr.String())
	}
	if stale.ProcessState.Success() || !strings.Contains(stderr.String(), "not the one verified") {
		t.Errorf("the stale start: %v, want a failure saying it started another container\n%s", stale.ProcessState, stderr.String())
	}
	out, _ := exec.Command(real, "--root", filepath.Join(root, "runsc"), "state", id).Output()
	if strings.Contains(string(out), `"running"`) {
		t.Errorf("the other container runs after the stale start:\n%s", out)
	}
}
