package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/moby/sys/mountinfo"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/seccompexec"
	"bulkhead.dev/bulkhead/runtime/state"
)

// TestPinOfSharedSourceIsPrivate pins a shared host directory: a mount
// made below the source afterwards (by the host, or by a containerd
// client's next task binding the same directory) does not reach the pin,
// and unmounting the pins, as delete does, leaves that mount in place.
func TestPinOfSharedSourceIsPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("pins are bind mounts: needs root")
	}
	tmp := t.TempDir()
	src, flagDir, pins := filepath.Join(tmp, "src"), filepath.Join(tmp, "flag"), filepath.Join(tmp, "pins")
	for _, d := range []string{filepath.Join(src, "sub"), flagDir, pins} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(flagDir, "flag"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mount := func(src, dst string, flags uintptr) {
		t.Helper()
		if err := unix.Mount(src, dst, "", flags, ""); err != nil {
			t.Fatalf("mount %s on %s: %v", src, dst, err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(dst, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				t.Errorf("unmount %s: %v", dst, err)
			}
		})
	}
	mount(src, src, unix.MS_BIND)
	if err := unix.Mount("", src, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}

	target := filepath.Join(pins, "0")
	if _, err := pinPath(src, target, func(string, int, *unix.Stat_t) (string, pinAs) { return "", pinWritable }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = state.UnmountUnder(pins) })
	mount(flagDir, filepath.Join(src, "sub"), unix.MS_BIND)

	if _, err := os.Stat(filepath.Join(src, "sub", "flag")); err != nil {
		t.Fatalf("the host does not see its own mount: %v", err)
	}
	if _, err := os.Stat(filepath.Join(target, "sub", "flag")); !os.IsNotExist(err) {
		t.Errorf("a mount made below the source after the pin reached the pin (%v)", err)
	}
	if err := state.UnmountUnder(pins); err != nil {
		t.Fatal(err)
	}
	if mounted, err := mountinfo.Mounted(filepath.Join(src, "sub")); err != nil || !mounted {
		t.Errorf("unmounting the pins unmounted the host's mount below the source (mounted %v, %v)", mounted, err)
	}
}

// TestReadOnlyPin: the pin of a read-only bind is itself read-only, so a
// backend running as root (runsc's gofer making a nested bind's mount
// point) cannot write into the host's source through it; the source
// mount's other attributes (noexec here) stay on the pin.
func TestReadOnlyPin(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("pins are bind mounts: needs root")
	}
	tmp := t.TempDir()
	src, pins := filepath.Join(tmp, "src"), filepath.Join(tmp, "pins")
	for _, d := range []string{src, pins} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(src, src, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(src, unix.MNT_DETACH) })
	if err := unix.Mount("", src, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOEXEC, ""); err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{true, false} {
		target := filepath.Join(pins, strconv.FormatBool(readOnly))
		if _, err := pinPath(src, target, func(string, int, *unix.Stat_t) (string, pinAs) {
			return "", map[bool]pinAs{true: pinReadOnly, false: pinWritable}[readOnly]
		}); err != nil {
			t.Fatal(err)
		}
		err := os.Mkdir(filepath.Join(target, "made-by-a-backend"), 0o755)
		if readOnly && !errors.Is(err, unix.EROFS) {
			t.Errorf("a mkdir through the read-only pin: %v, want EROFS", err)
		}
		if !readOnly && err != nil {
			t.Errorf("a mkdir through the writable pin: %v", err)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(target, &st); err != nil {
			t.Fatal(err)
		}
		if readOnly && st.Flags&(unix.ST_RDONLY|unix.ST_NOSUID|unix.ST_NODEV|unix.ST_NOEXEC) != unix.ST_RDONLY|unix.ST_NOSUID|unix.ST_NODEV|unix.ST_NOEXEC {
			t.Errorf("read-only pin's flags %#x: want ro, nosuid, nodev and the source's noexec", st.Flags)
		}
	}
	if err := state.UnmountUnder(pins); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "made-by-a-backend")); err != nil {
		t.Errorf("the writable pin's mkdir is not in the source: %v", err)
	}
}

// Every pin of a read-only bind is read-only, bulkhead's own programs'
// too; the root filesystem's stays writable for runc to make the mount
// points the image lacks.
func TestPlannedPinsReadOnly(t *testing.T) {
	ro := []string{"bind", "ro", "nosuid", "nodev"}
	s := &rspec.Spec{Root: &rspec.Root{Path: "/bundle/rootfs"}, Mounts: []rspec.Mount{
		{Destination: "/data", Type: "bind", Source: "/srv/data", Options: ro},
		{Destination: seccompexec.Path, Type: "bind", Source: "/usr/local/bin/bulkhead-seccomp-exec", Options: ro},
		{Destination: egressForwarderPath, Type: "bind", Source: "/usr/local/bin/bulkhead-egress-forward", Options: ro},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs"},
	}}
	pins, _ := planPins(s, nil, func(p string) string { return p }, "/run/bulkhead/bulkhead/x")
	if len(pins) != 4 {
		t.Fatalf("%d pins, want the root and three binds", len(pins))
	}
	for _, p := range pins {
		if p.ReadOnly == p.Root {
			t.Errorf("pin of %s (%s): read-only %v", p.Source, p.Field, p.ReadOnly)
		}
	}
}
