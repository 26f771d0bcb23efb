package failclosed

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCallerPidFileNotTrusted: whoever may write the directory of the
// caller's --pid-file puts another process's pid there between the
// backend's create and bulkhead's verification. bulkhead must verify the
// container's own init and leave the pid file naming it, and the file
// must not exist before the init is verified. Before, the backend wrote
// the caller's file and bulkhead read the init's pid back from it: the
// process it named was the one verified.
func TestCallerPidFileNotTrusted(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "init.pid")
	h := startHeldCreate(t, "--pid-file", pidFile)
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("the caller's pid file exists before its init is verified (%v)", err)
	}
	decoy := exec.Command("sleep", "300")
	if err := decoy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { decoy.Process.Kill(); decoy.Wait() })
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(decoy.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The created init holds the create's stderr: its exit status is
	// the answer, not the wait for its output.
	if err := h.release(t); !h.cmd.ProcessState.Success() {
		t.Fatalf("create with a pid file swapped under it: %v\n%s", err, h.stderr.String())
	}
	out, err := exec.Command("runc", "--root", filepath.Join(h.root, "runc"), "state", h.id).Output()
	if err != nil {
		t.Fatalf("runc state: %v", err)
	}
	var st struct {
		Pid    int    `json:"pid"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &st); err != nil || st.Status != "created" || st.Pid <= 0 {
		t.Fatalf("runc state of %s: %v %s; want it created", h.id, err, out)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(data)); got != strconv.Itoa(st.Pid) {
		t.Errorf("the caller's pid file says %s, the container's init is %d (the decoy was %d)", got, st.Pid, decoy.Process.Pid)
	}
	if ents, _ := os.ReadDir(filepath.Dir(pidFile)); len(ents) != 1 {
		t.Errorf("beside the pid file: %d entries, want only it", len(ents))
	}
}
