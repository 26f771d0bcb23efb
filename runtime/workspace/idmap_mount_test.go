package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIDMappedLower: the lower layer shows the source's owner as the
// sandbox user and the other way round, every other owner as itself; it
// is read-only, nosuid and nodev whatever the source is; and the child
// that held the user namespace is reaped, not left as a zombie.
func TestIDMappedLower(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts an id-mapped clone of a directory")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	owners := map[string][2]int{"mine": {1000, 1000}, "theirs": {65534, 65534}, "roots": {0, 0}, "other": {1234, 1234}}
	for name, o := range owners {
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, o[0], o[1]); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(dir, "lower")
	if !kernelAtLeast(t, 5, 19) {
		t.Skip("needs Linux 5.19 or later: id-mapped lower layers of an overlay")
	}
	if err := mountIDMappedLower(src, target, idShift{UIDFrom: 1000, UIDTo: 65534, GIDFrom: 1000, GIDTo: 65534}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })

	want := map[string]uint32{"mine": 65534, "theirs": 1000, "roots": 0, "other": 1234}
	for name, uid := range want {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(target, name), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != uid || st.Gid != uid {
			t.Errorf("%s: owner %d:%d through the id map, want %d:%d", name, st.Uid, st.Gid, uid, uid)
		}
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(target, &sfs); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		flag int64
		name string
	}{{unix.ST_RDONLY, "ro"}, {unix.ST_NOSUID, "nosuid"}, {unix.ST_NODEV, "nodev"}} {
		if sfs.Flags&f.flag == 0 {
			t.Errorf("lower layer is not %s (statfs flags %#x)", f.name, sfs.Flags)
		}
	}
	if err := os.WriteFile(filepath.Join(target, "new"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write into the lower layer: %v, want EROFS", err)
	}
	// The source itself is unchanged.
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(src, "mine"), &st); err != nil || st.Uid != 1000 {
		t.Errorf("source owner after the mount: %d (%v), want 1000", st.Uid, err)
	}
	if kids := childrenOf(t, os.Getpid()); kids != "" {
		t.Errorf("children left after the id map: %s", kids)
	}
}

// childrenOf lists the children of every thread of pid.
func childrenOf(t *testing.T, pid int) string {
	t.Helper()
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			all = append(all, strings.TrimSpace(string(b)))
		}
	}
	return strings.Join(all, " ")
}

// kernelAtLeast tells whether the running kernel is major.minor or later.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		t.Fatalf("kernel release %q: %v", u.Release, err)
	}
	return ma > major || ma == major && mi >= minor
}
