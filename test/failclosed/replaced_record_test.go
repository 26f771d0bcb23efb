package failclosed

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// runcState is runc's state of id under the held create's root.
func runcState(t *testing.T, root, id string) (status string, pid int) {
	t.Helper()
	out, err := exec.Command("runc", "--root", filepath.Join(root, "runc"), "state", id).Output()
	if err != nil {
		return "", 0
	}
	var st struct {
		Status string `json:"status"`
		Pid    int    `json:"pid"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("runc state %s: %v: %s", id, err, out)
	}
	return st.Status, st.Pid
}

// plainRunc is a configuration whose runc backend is runc itself.
func plainRunc(t *testing.T) string {
	t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[backends.runc]\npath = %q\n", runc)), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestStaleCreateLeavesNewerAlone: a create (A) is held after its
// backend's create; meanwhile its container is deleted (delete --force)
// and another create (B) of the same id finishes. When A goes on, its
// init is gone and it fails, and what it removes must be its own only:
// B's container, cgroup and record stay, and B starts. Before, A's undo
// deleted the id's backend container, cgroup and record: B's.
func TestStaleCreateLeavesNewerAlone(t *testing.T) {
	a := startHeldCreate(t)
	bulkhead := binaries.Bulkhead(t)
	cfg := plainRunc(t)
	global := []string{"--root", a.root, "--config", cfg}
	if r := (binaries.Cmd{}).Run(t, bulkhead, append(global, "delete", "--force", a.id)...); r.Code != 0 {
		t.Fatalf("delete --force of the held create's container: exit %d\n%s", r.Code, r.Stderr)
	}
	b := bundle.New(t, []string{"sleep", "300"})
	create := exec.Command(bulkhead, append(global, "create", "--bundle", b, a.id)...)
	var stderr strings.Builder
	create.Stderr = &stderr
	// The created init holds the create's stderr: its exit status is the
	// answer, not the wait for its output.
	create.WaitDelay = 5 * time.Second
	if err := create.Run(); !create.ProcessState.Success() {
		t.Fatalf("the second create of %s: %v\n%s", a.id, err, stderr.String())
	}
	_, newer := runcState(t, a.root, a.id)
	if err := a.release(t); a.cmd.ProcessState.Success() {
		t.Fatalf("the held create succeeded (%v) though its container was deleted:\n%s", err, a.stderr.String())
	}
	if !strings.Contains(a.stderr.String(), "deleted while its create ran") {
		t.Errorf("the held create's error does not say its container was deleted meanwhile:\n%s", a.stderr.String())
	}
	if status, pid := runcState(t, a.root, a.id); status != "created" || pid != newer {
		t.Fatalf("after the stale create ended: runc has %s as %q with init %d, want the second create's, created, init %d", a.id, status, pid, newer)
	}
	if r := (binaries.Cmd{}).Run(t, bulkhead, append(global, "start", a.id)...); r.Code != 0 {
		t.Errorf("start of the second create's container: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := (binaries.Cmd{}).Run(t, bulkhead, append(global, "delete", "--force", a.id)...); r.Code != 0 {
		t.Errorf("delete --force: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestStartOnlyTheVerifiedInit: the record of a container names a
// verified init that has ended, while runc holds a created container of
// that id which no verification saw (a stale create resumed and
// recorded its own init over a later create that was killed). start must
// refuse it, and the unverified init stay unstarted. Before, start handed
// it to runc's start.
func TestStartOnlyTheVerifiedInit(t *testing.T) {
	h := startHeldCreate(t)
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.release(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.root, "bulkhead", h.id, "record.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["init_pid"], rec["init_start"] = gone.Process.Pid, 1
	if data, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	global := []string{"--root", h.root, "--config", h.cfg}
	r := (binaries.Cmd{}).Run(t, binaries.Bulkhead(t), append(global, "start", h.id)...)
	if r.Code == 0 || !strings.Contains(r.Stderr, "verified at create") {
		t.Errorf("start of a container whose verified init is gone: exit %d, want a refusal naming it\n%s", r.Code, r.Stderr)
	}
	if status, _ := runcState(t, h.root, h.id); status != "created" {
		t.Errorf("runc state of the unverified container after start: %q, want created, its init never started", status)
	}
}

// TestStaleDeleteLeavesNewerAlone: a delete --force (D1) is held after its
// backend's delete; meanwhile another delete removes the record and a
// newer create of the same id is started. When D1 goes on, what is kept
// under the id is the newer container's: its record (which its
// max_lifetime watchdog and every verb go by) and its cgroup stay. Before,
// D1 read the record again after the backend's delete and removed the
// newer one.
func TestStaleDeleteLeavesNewerAlone(t *testing.T) {
	needRunc(t)
	bulkhead := binaries.Bulkhead(t)
	root := t.TempDir()
	plain := []string{"--root", root, "--config", plainRunc(t)}
	id := fmt.Sprintf("stale-del-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	b := bundle.New(t, []string{"sleep", "300"})
	t.Cleanup(func() { exec.Command(bulkhead, append(plain, "delete", "--force", id)...).Run() })
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bulkhead, append(plain, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		// A created init holds create's stderr: the exit status answers.
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Run(); !cmd.ProcessState.Success() {
			t.Fatalf("%s: %v\n%s", args, err, stderr.String())
		}
	}
	run("create", "--bundle", b, id)
	run("start", id)

	holdCfg, holdDir := holdingConfig(t, "delete")
	d1 := startHeld(t, exec.Command(bulkhead, "--root", root, "--config", holdCfg, "delete", "--force", id),
		"the held delete", filepath.Join(holdDir, "created"), filepath.Join(holdDir, "go"))
	run("delete", "--force", id)
	run("create", "--bundle", b, id)
	run("start", id)
	_, newer := runcState(t, root, id)

	d1.release(t)
	data, err := os.ReadFile(filepath.Join(root, "bulkhead", id, "record.json"))
	if err != nil {
		t.Fatalf("the newer container's record after the stale delete: %v\nthe stale delete said:\n%s", err, d1.stderr.String())
	}
	var rec struct {
		InitPid int `json:"init_pid"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || rec.InitPid != newer {
		t.Errorf("the record after the stale delete names init %d (%v), want the newer container's %d", rec.InitPid, err, newer)
	}
	if status, pid := runcState(t, root, id); status != "running" || pid != newer {
		t.Errorf("runc state after the stale delete: %q, init %d; want the newer container running, init %d", status, pid, newer)
	}
	if cg := runtime.DefaultCgroupsPath(root, id); !cgroups.Exists(cg) {
		t.Errorf("the newer container's cgroup %s is gone", cg)
	}
}
