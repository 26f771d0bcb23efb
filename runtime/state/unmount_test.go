package state

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveTreeRelative: a tree named by a relative path (a --root given
// as one) is unmounted before it is removed, so what a bind below it
// shows of the host stays; RemoveAll would otherwise delete it through the
// mount.
func TestRemoveTreeRelative(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: bind-mounts a host directory below the tree")
	}
	base := t.TempDir()
	host := filepath.Join(base, "host")
	precious := filepath.Join(host, "precious.txt")
	pin := filepath.Join(base, "state", "c1", "pins", "0")
	for _, d := range []string{host, pin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(precious, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(host, pin, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(pin, unix.MNT_DETACH) })
	t.Chdir(base)

	if err := RemoveTree(filepath.Join("state", "c1")); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Fatalf("the host file behind the bind is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "state", "c1")); !os.IsNotExist(err) {
		t.Fatalf("tree still there: %v", err)
	}
}

// TestRegistryDirAbsolute: a registry opened on a relative root names its
// containers' directories absolutely, as every path derived from them
// (pins, the bundle handed over) must be.
func TestRegistryDirAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	reg, err := OpenRegistry("rel")
	if err != nil {
		t.Fatal(err)
	}
	if d := reg.Dir("c1"); !filepath.IsAbs(d) {
		t.Errorf("Dir = %s, want an absolute path", d)
	}
	if d := View("rel").Dir("c1"); !filepath.IsAbs(d) {
		t.Errorf("View Dir = %s, want an absolute path", d)
	}
}
