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
// runc run: the container's shell traps it and exits 7, and run returns
// the container's status and leaves no container behind. SIGUSR1, which
// the Go runtime would ignore in bulkhead, too: create asks only for the
// signals that would end it, run for every one once its container exists.
func TestRunForwardsSignalToContainer(t *testing.T) {
	needRoot(t, "runc")
	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGUSR1} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			root := stateRoot(t)
			id := uniqueID("run-signal")
			// The shell is the container's pid 1, which the kernel spares every
			// signal it has no handler for: it says when its trap is set, and only
			// then is the signal sent. On a loaded machine the signal could come first.
			b := bundle.New(t, []string{"sh", "-c", `trap "exit 7" ` + unix.SignalName(sig)[3:] + `; echo trapped; while :; do sleep 0.1; done`})
			cmd := exec.Command(binaries.Bulkhead(t), "--root", root, "--backend", "runc", "run", "--bundle", b, id)
			t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
			signalAttached(t, cmd, sig)
			if r := bulkhead(t, "", "--root", root, "state", id); r.code == 0 {
				t.Fatalf("container %s still known after run returned: %s", id, r.stdout)
			}
		})
	}
}

// An attached exec passes the caller's signals to its process, as runc
// exec does, SIGUSR1 among them. (On runsc bulkhead becomes runsc's exec,
// which passes none.)
func TestExecForwardsSignalToProcess(t *testing.T) {
	for _, backend := range []string{"runc"} {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			id := uniqueID("exec-signal-" + backend)
			g := []string{"--root", root, "--backend", backend}
			must(t, append(g, "run", "--detach", "--bundle", bundle.New(t, []string{"sleep", "300"}), id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			cmd := exec.Command(binaries.Bulkhead(t), append(g, "exec", id, "sh", "-c", `trap "exit 7" USR1; echo trapped; while :; do sleep 0.1; done`)...)
			signalAttached(t, cmd, unix.SIGUSR1)
		})
	}
}

// signalAttached starts cmd, an attached run or exec whose shell prints
// "trapped" once its trap is set, sends it sig then, and wants the shell's
// status 7 back.
func signalAttached(t *testing.T, cmd *exec.Cmd, sig unix.Signal) {
	t.Helper()
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
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
			t.Fatalf("the shell's first line: %q, want \"trapped\"\nstderr: %s", line, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the shell did not set its trap within 60 s\nstderr: %s", stderr.String())
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%v did not end within 30 s of %v, or left a process holding its output\nstderr: %s", cmd.Args[3:], sig, stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("ended with %v (state %v), want the shell's exit status 7\nstderr: %s", err, cmd.ProcessState, stderr.String())
	}
}
