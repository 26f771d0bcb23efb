package specs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"
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
	// A mount the table showed at the pin, by an id no mount has now.
	shown := func(p string) *mountinfo.Info { return &mountinfo.Info{ID: -1, Mountpoint: p} }
	if !isOwnPin(pin, shown(pin)) {
		t.Errorf("%s without a record and not mounted (deleted since the mount table was read): taken for a place", pin)
	}
	if gone := filepath.Join(root, "bulkhead", "c2", "pins", "0"); !isOwnPin(gone, shown(gone)) {
		t.Errorf("%s, whose container's state is gone: taken for a place", gone)
	}
	// A directory named like a pin below another mount is whoever made it.
	if isOwnPin(pin, shown("/")) {
		t.Errorf("%s, a path on / without a record: taken for a pin", pin)
	}
	if os.Geteuid() == 0 {
		// Still mounted without a record: not a container's pin; nor when
		// a mount made above it since hides it and the record's place.
		if err := unix.Mount("none", pin, "tmpfs", 0, "size=64k"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(pin, 0) })
		ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(pin))
		if err != nil || len(ms) != 1 {
			t.Fatalf("the test's mount at %s: %v %v", pin, ms, err)
		}
		if isOwnPin(pin, ms[0]) {
			t.Errorf("%s mounted without a record: taken for a pin", pin)
		}
		if err := unix.Mount("none", state, "tmpfs", 0, "size=64k"); err != nil {
			t.Fatal(err)
		}
		if isOwnPin(pin, ms[0]) {
			t.Errorf("%s mounted without a record, hidden under a mount above it: taken for a pin", pin)
		}
		if err := unix.Unmount(state, 0); err != nil {
			t.Fatal(err)
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
		if got := isOwnPin(p, shown(p)); got != want {
			t.Errorf("isOwnPin(%s) = %v, want %v", p, got, want)
		}
	}
}
