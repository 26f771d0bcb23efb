package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestExecIntoPausedContainerRefused: runc's `exec --ignore-paused` starts
// its init in the frozen container, where it stays half set up and cannot
// be verified; the backend's exec timed out, the caller was told it
// failed, and the process ran unverified once the container was resumed.
// The exec is refused before anything starts, and after resume only the
// init runs.
func TestExecIntoPausedContainerRefused(t *testing.T) {
	needRunc(t)
	root, id, _ := running(t, nil)
	// runc 1.1's cgroup v1 freezer gives up ("unable to freeze") when the
	// group does not settle while the machine is busy, and thaws it
	// again: pausing again is what an engine does.
	for i := 0; ; i++ {
		r := bulkhead(t, "", nil, "--root", root, "pause", id)
		if r.code == 0 {
			break
		}
		if i == 4 || !strings.Contains(r.stderr, "unable to freeze") {
			t.Fatalf("pause: exit %d\n%s", r.code, r.stderr)
		}
		time.Sleep(time.Second)
	}
	r := bulkhead(t, "", nil, "--root", root, "exec", "-d", "--ignore-paused", id, "sleep", "300")
	if r.code == 0 || !strings.Contains(r.stderr, "exec --ignore-paused refused") {
		t.Errorf("exec --ignore-paused into a paused container: exit %d, want a refusal naming the flag\n%s", r.code, r.stderr)
	}
	must(t, nil, "--root", root, "resume", id)
	var pids []int
	if err := json.Unmarshal([]byte(must(t, nil, "--root", root, "ps", "--format", "json", id)), &pids); err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 {
		t.Errorf("processes after resume %v, want only the init", pids)
	}
}
