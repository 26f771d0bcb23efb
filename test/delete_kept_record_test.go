package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/test/bundle"
)

// A delete that finds processes still in the container's cgroup after the
// backend let go of it (a backend create that a killed create left
// running finishes its sandbox later) fails and keeps the record, so that
// a delete again finds the id and asks the backend again; it removed the
// record, and the id was then unknown to bulkhead while the backend ran
// a sandbox under it.
func TestDeleteKeepsTheRecordWhileItsCgroupRuns(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runc"}
	id := uniqueID("keptrecord")
	must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "300"}), id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })

	// The backend forgets the container, and a process appears in the
	// cgroup bulkhead chose for it.
	if out, err := exec.Command("runc", "--root", filepath.Join(root, "runc"), "delete", "--force", id).CombinedOutput(); err != nil {
		t.Fatalf("runc delete: %v: %s", err, out)
	}
	dir := filepath.Join("/sys/fs/cgroup", runtime.DefaultCgroupsPath(root, id))
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		dir = filepath.Join("/sys/fs/cgroup/pids", runtime.DefaultCgroupsPath(root, id))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }
	t.Cleanup(stop)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}

	r := bulkhead(t, "", append(g, "delete", "--force", id)...)
	if r.code == 0 || !strings.Contains(r.stderr, "contains running processes") && !strings.Contains(r.stderr, "busy") {
		t.Fatalf("delete with a process in %s: exit %d, stderr %q; want it failed, naming the cgroup", dir, r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); err != nil {
		t.Fatalf("the failed delete removed the record (%v): a delete again could not find %s\n%s", err, id, r.stderr)
	}

	stop()
	must(t, append(g, "delete", "--force", id)...)
	assertGone(t, root, "runc", id)
}
