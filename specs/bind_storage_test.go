package specs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
)

// A bind source is bound only from plain storage: a proc, sysfs or cgroup
// mounted below a bind root, an overlay over /etc, a FUSE daemon's files
// are refused, each saying why; the host's own overlay root is its files.
func TestStorageRefusal(t *testing.T) {
	for _, c := range []struct {
		fstype, mountpoint, want string
	}{
		{"ext4", "/", ""},
		{"xfs", "/srv", ""},
		{"tmpfs", "/tmp", ""},
		{"nfs4", "/mnt/share", ""},
		{"overlay", "/", ""},
		{"proc", "/srv/p", "kernel interface"},
		{"sysfs", "/srv/s", "kernel interface"},
		{"cgroup2", "/srv/c", "kernel interface"},
		{"overlay", "/srv/o", "its layers'"},
		{"fuse.sshfs", "/mnt/remote", "request to a process on the host"},
		{"fuse", "/srv/f", "request to a process on the host"},
		{"nsfs", "/srv/ns", "no rule about paths can judge"},
		{"", "/srv/x", "no rule about paths can judge"},
	} {
		why := storageRefusal(c.mountpoint+"/x", &mountinfo.Info{FSType: c.fstype, Mountpoint: c.mountpoint, Source: "src"})
		if (why == "") != (c.want == "") || !strings.Contains(why, c.want) {
			t.Errorf("%s at %s: %q, want %q", c.fstype, c.mountpoint, why, c.want)
		}
	}
	// A containerd root of the test's, as the snapshotter lays it out.
	if os.Geteuid() != 0 {
		t.Skip("needs root: containerd's snapshots are root's")
	}
	dir := t.TempDir()
	snap := filepath.Join(dir, "containerd", "io.containerd.snapshotter.v1.overlayfs", "snapshots") + "/"
	for _, n := range []string{"1", "7", "11", "12"} {
		layout(t, snap+n, "fs/", "work/")
	}
	// Made to look like snapshots: a link to /, a user's directory.
	if err := os.MkdirAll(snap+"2", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", snap+"2/fs"); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "user", "io.containerd.snapshotter.v1.overlayfs", "snapshots") + "/"
	layout(t, users+"3", "fs/")
	if err := os.Chown(filepath.Join(dir, "user"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		options string
		allowed bool
	}{
		{"ro,lowerdir=" + snap + "12/fs:" + snap + "11/fs", true},
		{"rw,lowerdir=" + snap + "1/fs,upperdir=" + snap + "7/fs,workdir=" + snap + "7/work,uuid=on,fsync=volatile", true},
		{"rw,lowerdir=" + snap + "12/fs,upperdir=/srv/u,workdir=/srv/w", false},
		{"ro,lowerdir=" + snap + "12/fs:/etc", false},
		{"ro,lowerdir=" + snap + "12/fs/../../../../../etc", false},
		{"ro,lowerdir=" + snap + "2/fs:" + snap + "12/fs", false},
		{"ro,lowerdir=" + users + "3/fs:" + snap + "12/fs", false},
		{"ro,lowerdir=" + strings.Replace(snap, "/containerd/", "//containerd/", 1) + "12/fs", false},
		{"ro", false},
	} {
		why := storageRefusal("/run/x/image-volumes/a/b", &mountinfo.Info{FSType: "overlay", Mountpoint: "/run/x/image-volumes/a/b", VFSOptions: c.options})
		if (why == "") != c.allowed {
			t.Errorf("an overlay of %s: %q, want allowed %v", c.options, why, c.allowed)
		}
	}
	if storageRefusal("/x", nil) == "" {
		t.Error("a source whose mount is not known was bound")
	}
}

// TestOverlayLayers: every way the kernel shows an overlay's layers in
// mountinfo names them all; a form this reading cannot be sure of says so.
func TestOverlayLayers(t *testing.T) {
	for _, tc := range []struct {
		options     string
		lower       []string
		upper, work string
		ok          bool
	}{
		{"rw,lowerdir=/l1:/l2,upperdir=/u,workdir=/w,index=off", []string{"/l1", "/l2"}, "/u", "/w", true},
		// The new mount API's one layer per key, data-only layers too.
		{"rw,lowerdir+=/l1,lowerdir+=/etc,datadir+=/d,upperdir=/u,workdir=/w", []string{"/l1", "/etc", "/d"}, "/u", "/w", true},
		// dockerd's relative names, when its options would not fit a page.
		{"lowerdir=l/A:l/B,upperdir=abc/diff,workdir=abc/work", []string{"l/A", "l/B"}, "abc/diff", "abc/work", true},
		// The kernel's octal escapes of ',' and ' '.
		{`lowerdir+=/a\054b,upperdir=/u\040v,workdir=/w`, []string{"/a,b"}, "/u v", "/w", true},
		// A backslash left (an escaped ':' of lowerdir=) is not read.
		{`lowerdir=/a\\:b:/c,upperdir=/u,workdir=/w`, []string{`/a\:b`, "/c"}, "/u", "/w", false},
	} {
		lower, upper, work, ok := overlayLayers(tc.options)
		if ok != tc.ok || upper != tc.upper || work != tc.work || (tc.ok && !slices.Equal(lower, tc.lower)) {
			t.Errorf("%s: %q %q %q %v, want %q %q %q %v", tc.options, lower, upper, work, ok, tc.lower, tc.upper, tc.work, tc.ok)
		}
	}
	if imageLayersOnly("lowerdir+=/etc,upperdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/2/fs") {
		t.Error("an overlay of /etc by lowerdir+= passed for image layers")
	}
}
