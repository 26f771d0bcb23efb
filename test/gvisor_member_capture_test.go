package test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
)

// A gVisor pod's container is created by runsc at start and keeps start's
// stdout and stderr for its life. A caller that captures start's output
// in one pipe and reads it to its end (containerd's runc shim) would wait
// for ever and hold all the job writes in its memory, so such a start is
// refused and the container does not run.
func TestGVisorPodMemberRefusesACapturedStart(t *testing.T) {
	needRoot(t, "runsc")
	g := []string{"--root", stateRoot(t), "--backend", "runsc"}
	p := startPodSandbox(t, g, "capture")
	id := p.createMember(t, "capture", []string{"sh", "-c", "while :; do echo job-output; sleep 0.1; done"}, false)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := exec.CommandContext(ctx, binaries.Bulkhead(t), append(g, "start", id)...)
	start.Stdout, start.Stderr = w, w
	runErr := start.Run()
	w.Close()
	// The read ends once nothing holds the pipe: a container that runs
	// holds it for its life.
	if err := r.SetReadDeadline(time.Now().Add(60 * time.Second)); err != nil {
		t.Fatal(err)
	}
	out, readErr := io.ReadAll(r)
	if readErr != nil {
		t.Errorf("the caller's capture was still held 60 s after start returned (%v): the container keeps it", readErr)
	}
	if runErr == nil || !strings.Contains(string(out), "stdout and stderr are one pipe") {
		t.Fatalf("start with stdout and stderr one pipe: %v\n%s", runErr, out)
	}
	if strings.Contains(string(out), "job-output") {
		t.Fatalf("the job ran and wrote into the caller's capture:\n%s", out)
	}
	if s := containerState(t, g, id).Status; s == "running" {
		t.Fatalf("the refused container is %s", s)
	}
}
