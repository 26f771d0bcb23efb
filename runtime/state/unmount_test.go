package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// hostBesideState lays out base/host, a host directory holding
// precious.txt, and base/state/c1/pins/0, a container's pin to bind it on.
func hostBesideState(t *testing.T) (base, host, precious string) {
	t.Helper()
	base = t.TempDir()
	host = filepath.Join(base, "host")
	precious = filepath.Join(host, "precious.txt")
	for _, d := range []string{host, filepath.Join(base, "state", "c1", "pins", "0")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(precious, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	return base, host, precious
}

// TestRemoveTreeRelative: a tree named by a relative path (a --root given
// as one) is unmounted before it is removed, so what a bind below it
// shows of the host stays; RemoveAll would otherwise delete it through the
// mount.
func TestRemoveTreeRelative(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: bind-mounts a host directory below the tree")
	}
	base, host, precious := hostBesideState(t)
	pin := filepath.Join(base, "state", "c1", "pins", "0")
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

// TestRemoveWithinStopsAtAMount: a bind below the tree, of the same
// filesystem as the tree or another's, stops the removal with EBUSY and
// keeps every file it shows; without it, the tree goes. A mount that
// arrives below a state directory after its unmount (RemoveTree) must
// never be emptied through.
func TestRemoveWithinStopsAtAMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts below the tree")
	}
	base, host, precious := hostBesideState(t)
	tree := filepath.Join(base, "state", "c1")
	if err := os.MkdirAll(filepath.Join(tree, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(tree, "a", "b", "f"), filepath.Join(tree, "record.json")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(host, filepath.Join(tree, "a", "link")); err != nil {
		t.Fatal(err)
	}
	pin := filepath.Join(tree, "pins", "0")
	for name, mount := range map[string]func() error{
		"bind of the same filesystem": func() error { return unix.Mount(host, pin, "", unix.MS_BIND, "") },
		"tmpfs": func() error {
			if err := unix.Mount("tmpfs", pin, "tmpfs", 0, "size=1m"); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(pin, "precious.txt"), []byte("keep"), 0o644)
		},
	} {
		if err := mount(); err != nil {
			t.Fatal(err)
		}
		err := removeWithin(tree)
		if !errors.Is(err, unix.EBUSY) {
			t.Errorf("%s below the tree: %v, want EBUSY", name, err)
		}
		if _, serr := os.Stat(filepath.Join(pin, "precious.txt")); serr != nil {
			t.Errorf("%s below the tree: its file is gone: %v", name, serr)
		}
		if err := unix.Unmount(pin, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(tree, "pins", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := removeWithin(tree); err != nil {
		t.Fatalf("with nothing mounted below: %v", err)
	}
	if _, err := os.Lstat(tree); !os.IsNotExist(err) {
		t.Errorf("the tree is still there: %v", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("the host file a link below the tree led to is gone: %v", err)
	}
}
