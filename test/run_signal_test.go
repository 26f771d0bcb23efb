package test

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// A signal to an attached `bulkhead run` reaches the container, as with
// runc run: the container's shell traps SIGTERM and exits 7, and run
// returns the container's status and leaves no container behind.
func TestRunForwardsSignalToContainer(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	id := uniqueID("run-signal")
	b := bundle.New(t, []string{"sh", "-c", `trap "exit 7" TERM; while :; do sleep 0.1; done`})
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binaries.Bulkhead(t), "--root", root, "--backend", "runc", "run", "--bundle", b, id)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		bulkhead(t, "", "--root", root, "delete", "--force", id)
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		r := bulkhead(t, "", "--root", root, "state", id)
		if strings.Contains(r.stdout, `"running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s not running after 30 s: %s %s\nrun's stderr: %s", id, r.stdout, r.stderr, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not end within 30 s of SIGTERM, or left its container holding its output\nstderr: %s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("run ended with %v (state %v), want the container's exit status 7\nstderr: %s", err, cmd.ProcessState, stderr.String())
	}
	if r := bulkhead(t, "", "--root", root, "state", id); r.code == 0 {
		t.Fatalf("container %s still known after run returned: %s", id, r.stdout)
	}
}
