package test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
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
	// The shell is the container's pid 1, which the kernel spares every
	// signal it has no handler for: it says when its trap is set, and only
	// then is SIGTERM sent. On a loaded machine the signal could come first.
	b := bundle.New(t, []string{"sh", "-c", `trap "exit 7" TERM; echo trapped; while :; do sleep 0.1; done`})
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(binaries.Bulkhead(t), "--root", root, "--backend", "runc", "run", "--bundle", b, id)
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		bulkhead(t, "", "--root", root, "delete", "--force", id)
	})
	first := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		first <- line
		io.Copy(io.Discard, r)
	}()
	select {
	case line := <-first:
		if line != "trapped\n" {
			t.Fatalf("the container's first line: %q, want \"trapped\"\nrun's stderr: %s", line, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("container %s did not set its trap within 60 s\nrun's stderr: %s", id, stderr.String())
	}
	if err := cmd.Process.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
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
