package specs

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A pin is bulkhead's own only where its container's record is beside it.
func TestIsOwnPin(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "bulkhead", "c1")
	for _, d := range []string{"pins/1/sub", "ws/0/lower/sub", "ws/0/merged", "ws/0/upper"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pin := filepath.Join(state, "pins", "1")
	if !isOwnPin(pin, pin) {
		t.Errorf("%s without a record and not mounted (deleted since the mount table was read): taken for a place", pin)
	}
	if gone := filepath.Join(root, "bulkhead", "c2", "pins", "0"); !isOwnPin(gone, gone) {
		t.Errorf("%s, whose container's state is gone: taken for a place", gone)
	}
	// A directory named like a pin below another mount is whoever made it.
	if isOwnPin(pin, "/") {
		t.Errorf("%s, a path on / without a record: taken for a pin", pin)
	}
	if os.Geteuid() == 0 {
		// Still mounted without a record: not a container's pin.
		if err := unix.Mount("none", pin, "tmpfs", 0, "size=64k"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(pin, 0) })
		if isOwnPin(pin, pin) {
			t.Errorf("%s mounted without a record: taken for a pin", pin)
		}
	} else {
		t.Log("not root: a mount without a record is not tried")
	}
	if err := os.WriteFile(filepath.Join(state, "record.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		pin: true, filepath.Join(pin, "sub"): true,
		filepath.Join(state, "ws/0/lower"): true, filepath.Join(state, "ws/0/lower/sub"): true,
		filepath.Join(state, "ws/0/merged"): false, filepath.Join(state, "ws/0/upper"): false, filepath.Join(state, "ws"): false,
		filepath.Join(state, "pins"): false, filepath.Join(state, "bundle"): false,
	} {
		if got := isOwnPin(p, p); got != want {
			t.Errorf("isOwnPin(%s) = %v, want %v", p, got, want)
		}
	}
}
