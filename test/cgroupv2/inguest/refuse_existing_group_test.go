package inguest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExistingEmptyGroupRefused: an empty group the host set up with a
// limit of its own is no container's fresh cgroup; the create is refused
// and the group keeps its pids.max.
func TestExistingEmptyGroupRefused(t *testing.T) {
	needV2(t)
	e := newEnv(t, "")
	id := newID(t)
	dir := filepath.Join("/sys/fs/cgroup", cgroupsPath(id))
	// The parent hands pids to its children, as runc's containers have it.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control"), []byte("+pids"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte("1000"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.run(t, "", "create", "--bundle", sleeper(t, id), id); r.code == 0 {
		e.run(t, "", "delete", "--force", id)
		t.Fatalf("create in the existing group %s succeeded; want refused", dir)
	}
	if got := file(t, dir, "pids.max"); got != "1000" {
		t.Errorf("the host's group has pids.max %s, want 1000", got)
	}
}
