package main

import (
	"strings"
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
