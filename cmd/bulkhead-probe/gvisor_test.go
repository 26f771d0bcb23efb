package main

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMountinfoReadOnly(t *testing.T) {
	const mi = `22 1 0:20 / / ro,relatime - overlay overlay rw
23 22 0:21 / /tmp rw,nosuid,nodev,noexec - tmpfs tmpfs rw,size=16384k
24 22 0:22 / /workspace ro,nosuid,nodev - ext4 /dev/vda1 rw
`
	for path, want := range map[string]bool{"/": true, "/etc": true, "/etc/passwd": true, "/tmp": false, "/tmp/x": false, "/tmpfoo": true, "/workspace/a": true} {
		if got := mountinfoReadOnlyIn(mi, path); got != want {
			t.Errorf("%s: read-only %v, want %v", path, got, want)
		}
	}
	if mountinfoReadOnlyIn("", "/") {
		t.Errorf("empty mountinfo must not read as read-only")
	}
	// The last "/" listed is the one on top.
	if mountinfoReadOnlyIn("1 0 0:1 / / ro - x x rw\n2 1 0:2 / / rw - y y rw\n", "/etc") {
		t.Errorf("the mount on top is rw")
	}
}

// TestNetworkNeverConnectsWithInterfaces runs the network control in the
// test's own network namespace. Where interfaces other than lo exist (a
// developer machine, CI), it must FAIL at once with the list, without a
// connection attempt: the target would be this host's gateway.
func TestNetworkNeverConnectsWithInterfaces(t *testing.T) {
	ifs, _, err := interfaces()
	if err != nil {
		t.Skipf("cannot list interfaces: %v", err)
	}
	if len(ifs) == 1 && ifs[0] == "lo" {
		t.Skip("only lo here: the no-connect path cannot be shown")
	}
	start := time.Now()
	// A target that would hang for the whole dial timeout if it were
	// tried: the control must not even try.
	r := checkNetwork(&probeEnv{netTarget: "192.0.2.1:80", gvisor: true})
	if r.Pass || !strings.HasPrefix(r.Observed, "interfaces ") || !strings.Contains(r.Detail, "no connection attempted") {
		t.Errorf("%+v", r)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("took %s: a connection was attempted", d)
	}
}

// Under gVisor with -host-stops-cpu the spin lasts until the host's word
// (SIGUSR1), which comes once its cpu.stat shows the quota biting; the
// word is not the verdict, the host's counters are, so the line stays
// skipped either way.
func TestSpinForHostStopsOnTheHostsWord(t *testing.T) {
	env := &probeEnv{gvisor: true, cpuEnough: make(chan os.Signal, 1)}
	signal.Notify(env.cpuEnough, syscall.SIGUSR1)
	defer signal.Stop(env.cpuEnough)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	}()
	start := time.Now()
	r := spinForHost(env, Result{})
	if took := time.Since(start); took >= cpuDeadline {
		t.Fatalf("spun %s: the host's word did not end the spin", took)
	}
	if !r.Skipped || r.Pass || !strings.Contains(r.Detail, "until the host saw the quota bite") {
		t.Errorf("result %+v", r)
	}
}

// A word the host sent while an earlier attempt ran is not about the cpu
// spin: it does not end it.
func TestSpinForHostIgnoresAnEarlierWord(t *testing.T) {
	env := &probeEnv{gvisor: true, cpuEnough: make(chan os.Signal, 1)}
	env.cpuEnough <- syscall.SIGUSR1
	go func() {
		time.Sleep(time.Second)
		env.cpuEnough <- syscall.SIGUSR1
	}()
	start := time.Now()
	r := spinForHost(env, Result{})
	if took := time.Since(start); took < time.Second {
		t.Fatalf("spun %s: a word sent before the spin ended it", took)
	}
	if !strings.Contains(r.Detail, "until the host saw the quota bite") {
		t.Errorf("result %+v", r)
	}
}
