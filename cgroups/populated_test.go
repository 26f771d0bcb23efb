package cgroups

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPopulatedFixture: a pod's group holds no process itself, only in its
// containers' groups below, and is populated all the same; a group whose
// whole subtree is empty, and one that does not exist, are not.
func TestPopulatedFixture(t *testing.T) {
	root := t.TempDir()
	group := func(path, procs string) {
		dir := filepath.Join(root, path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(procs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	group("/", "1\n")
	group("/pod", "")
	group("/pod/victim", "4242\n")
	group("/empty", "")
	group("/empty/child", "")
	for path, want := range map[string]bool{"/pod": true, "/pod/victim": true, "pod": true,
		"/empty": false, "/empty/child": false, "/absent": false, "/pod/absent": false} {
		got, err := Populated(path, WithV2Mountpoint(root))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got != want {
			t.Errorf("Populated(%s) = %v, want %v", path, got, want)
		}
	}
}
