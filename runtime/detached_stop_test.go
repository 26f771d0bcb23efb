package runtime

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/egresshost"
)

// TestStopBrokerEndsTheServingProgram: the root broker becomes
// bulkhead-egress-broker in the same process, so delete must know that
// command line as the container's broker, and only for its own id. A
// shell stands in for the broker, started under the broker's command
// line.
func TestStopBrokerEndsTheServingProgram(t *testing.T) {
	start := func(id string) *exec.Cmd {
		cmd := &exec.Cmd{Path: "/bin/sh", Args: []string{filepath.Join("/usr/local/bin", egresshost.BrokerBinary),
			"-c", "sleep 60; :", "--serve-fds", "3,4,5,6,-1", "--ready-fd", "3", id}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	other := start("other-container")
	own := start("own-container")
	done := make(chan error, 1)
	go func() { done <- own.Wait() }()
	if err := stopBroker(own.Process.Pid, "own-container"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the serving broker of own-container still runs after stopBroker")
	}
	if err := stopBroker(other.Process.Pid, "own-container"); err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(other.Process.Pid, 0); err != nil {
		t.Fatalf("another container's broker was stopped: %v", err)
	}
}
