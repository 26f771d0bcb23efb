package test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestRootfsOverlayLayersAllJudged: an overlay's layers are read from
// mountinfo as the kernel shows them, in every form. The new mount API's
// lowerdir+= hid a layer of the host's /etc behind containerd's snapshot
// layout; at dockerd's layer path an overlay of /etc passed on the path
// and dockerd's record alone; and dockerd's relative names (it mounts
// from its store when its options would not fit a page) hid the upper
// layer from the walk for sockets, so a host service bound through the
// overlay was reached by a runc job. Each is refused; dockerd's own
// layout, relative names included, runs.
func TestRootfsOverlayLayersAllJudged(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, g []string) {
		run := func(b, id string) result {
			return bulkhead(t, "", append(g, "run", "--bundle", b, id)...)
		}
		hostOnly := t.TempDir()
		if err := os.WriteFile(filepath.Join(hostOnly, "secret"), []byte("HOST-ONLY\n"), 0o644); err != nil {
			t.Fatal(err)
		}

		// containerd's layout, a layer of the host's added by lowerdir+=.
		snaps := filepath.Join(t.TempDir(), "io.containerd.snapshotter.v1.overlayfs", "snapshots")
		dirs := func(ds ...string) {
			for _, d := range ds {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		image := filepath.Join(snaps, "1", "fs")
		upper, work := filepath.Join(snaps, "2", "fs"), filepath.Join(snaps, "2", "work")
		dirs(image, upper, work)
		if err := bundle.Rootfs(image); err != nil {
			t.Fatal(err)
		}
		plus := bundle.New(t, []string{"cat", "/secret"})
		if out, err := exec.Command("mount", "-t", "overlay", "overlay", "-o",
			"lowerdir+="+image+",lowerdir+="+hostOnly+",upperdir="+upper+",workdir="+work, filepath.Join(plus, "rootfs")).CombinedOutput(); err != nil {
			t.Fatalf("mount with lowerdir+=: %v: %s", err, out)
		}
		t.Cleanup(func() { _ = unix.Unmount(filepath.Join(plus, "rootfs"), unix.MNT_DETACH) })
		if r := run(plus, uniqueID("root-lowerdir-plus-"+backend)); r.code == 0 || strings.Contains(r.stdout, "HOST-ONLY") {
			t.Fatalf("an overlay of a host directory added by lowerdir+=: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
		}

		// containerd's layout where the snapshotter's root is itself an
		// overlay: its "snapshots" are whatever that overlay shows (an
		// overlay of the host's / showed the host's /etc).
		viewRoot := filepath.Join(t.TempDir(), "io.containerd.snapshotter.v1.overlayfs")
		shown, empty := t.TempDir(), t.TempDir()
		dirs(viewRoot, filepath.Join(shown, "snapshots", "1", "fs"), filepath.Join(shown, "snapshots", "2", "fs"))
		if err := bundle.Rootfs(filepath.Join(shown, "snapshots", "1", "fs")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shown, "snapshots", "2", "fs", "secret"), []byte("HOST-ONLY\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mountAt(t, "overlay", viewRoot, "lowerdir="+shown+":"+empty, 0)
		viewed := bundle.New(t, []string{"cat", "/secret"})
		mountAt(t, "overlay", filepath.Join(viewed, "rootfs"),
			"lowerdir="+filepath.Join(viewRoot, "snapshots", "2", "fs")+":"+filepath.Join(viewRoot, "snapshots", "1", "fs"), 0)
		if r := run(viewed, uniqueID("root-snapshotter-view-"+backend)); r.code == 0 || strings.Contains(r.stdout, "HOST-ONLY") {
			t.Fatalf("snapshots of a snapshotter root that is an overlay: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
		}

		// dockerd's layout under a data root of the test's: its record
		// names layer for container id.
		data := filepath.Join(t.TempDir(), "docker")
		store := filepath.Join(data, "overlay2")
		layer := strings.Repeat("ab", 32)
		id := uniqueID("root-docker-" + backend)
		dirs(filepath.Join(data, "image", "overlay2", "layerdb", "mounts", id), filepath.Join(store, "l"),
			filepath.Join(store, "img", "diff"), filepath.Join(store, "empty", "diff"), filepath.Join(store, layer, "diff"), filepath.Join(store, layer, "work"),
			filepath.Join(store, layer, "merged"))
		if err := os.WriteFile(filepath.Join(data, "image", "overlay2", "layerdb", "mounts", id, "mount-id"), []byte(layer), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := bundle.Rootfs(filepath.Join(store, "img", "diff")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../img/diff", filepath.Join(store, "l", "IMG")); err != nil {
			t.Fatal(err)
		}
		merged := filepath.Join(store, layer, "merged")
		b := bundle.New(t, []string{"cat", "/secret"}, func(s *rspec.Spec) { s.Root.Path = merged })
		mountIn := func(options string) {
			t.Helper()
			cmd := exec.Command("mount", "-t", "overlay", "overlay", "-o", options, layer+"/merged")
			cmd.Dir = store
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("mount %s: %v: %s", options, err, out)
			}
		}
		unmount := func() { _ = unix.Unmount(merged, unix.MNT_DETACH) }
		t.Cleanup(unmount)

		mountIn("lowerdir=l/IMG:" + hostOnly)
		if r := run(b, id); r.code == 0 || !strings.Contains(r.stderr, "which is not a directory of dockerd's store") {
			t.Fatalf("an overlay of a host directory at dockerd's layer: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
		}
		unmount()

		// The same store seen through an overlay mounted over it.
		storeView := t.TempDir()
		mountAt(t, "overlay", store, "lowerdir="+store+":"+storeView, 0)
		mountIn("lowerdir=l/IMG:empty/diff")
		if r := run(b, id); r.code == 0 || !strings.Contains(r.stderr, "is not on plain storage") {
			t.Fatalf("dockerd's layer in a store that is an overlay: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
		}
		unmount()
		if err := unix.Unmount(store, unix.MNT_DETACH); err != nil {
			t.Fatal(err)
		}

		// Another container's writable layer in the store, below.
		victim := filepath.Join(store, "victim")
		dirs(filepath.Join(victim, "diff"), filepath.Join(victim, "work"), filepath.Join(victim, "merged"))
		vcmd := exec.Command("mount", "-t", "overlay", "overlay", "-o", "lowerdir=l/IMG,upperdir=victim/diff,workdir=victim/work", "victim/merged")
		vcmd.Dir = store
		if out, err := vcmd.CombinedOutput(); err != nil {
			t.Fatalf("mount the victim's layer: %v: %s", err, out)
		}
		t.Cleanup(func() { _ = unix.Unmount(filepath.Join(victim, "merged"), unix.MNT_DETACH) })
		for _, lower := range []string{"victim/diff", "victim/diff/sub"} {
			if err := os.MkdirAll(filepath.Join(victim, "merged", "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			mountIn("lowerdir=" + lower + ":l/IMG")
			if r := run(b, id); r.code == 0 || !strings.Contains(r.stderr, "is in the writable layer of the overlay at "+filepath.Join(victim, "merged")) {
				t.Fatalf("another container's writable layer (%s) below dockerd's layer: exit %d\nstdout: %s\nstderr: %s\nwant it refused", lower, r.code, r.stdout, r.stderr)
			}
			unmount()
		}

		// A relative name through a link and "..": the kernel resolves
		// x/../etc from the store as /etc where x leads to a directory of
		// the host's /; cleaned as text it named the store's own etc.
		dirs(filepath.Join(store, "etc"))
		if err := os.Symlink("/etc", filepath.Join(store, "x")); err != nil {
			t.Fatal(err)
		}
		mountIn("lowerdir=x/../etc:l/IMG")
		if r := run(b, id); r.code == 0 || !strings.Contains(r.stderr, "which is not a directory of dockerd's store") {
			t.Fatalf("a layer named x/../etc through a link: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
		}
		unmount()

		// As dockerd mounts a layer when its options are long: relative
		// names from the store.
		mountIn("lowerdir=l/IMG,upperdir=" + layer + "/diff,workdir=" + layer + "/work")
		// A socket's path has at most 107 bytes: bound through a link.
		short := filepath.Join(os.TempDir(), fmt.Sprintf("bh-merged-%d-%s", os.Getpid(), backend))
		if err := os.Symlink(merged, short); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(short)
		sock := filepath.Join(merged, "svc.sock")
		l, err := net.Listen("unix", filepath.Join(short, "svc.sock"))
		if err != nil {
			t.Fatal(err)
		}
		if r := run(b, id); r.code == 0 || !strings.Contains(r.stderr, sock+" is a socket or a FIFO") {
			t.Fatalf("a host service's socket bound through dockerd's layer mounted by relative names: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
		}
		l.Close()
		s, err := bundle.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		s.Process.Args = []string{"echo", "ok"}
		if err := bundle.Write(b, s); err != nil {
			t.Fatal(err)
		}
		if r := run(b, id); r.code != 0 || strings.TrimSpace(r.stdout) != "ok" {
			t.Fatalf("dockerd's layer mounted by relative names: exit %d\nstdout: %s\nstderr: %s\nwant it run", r.code, r.stdout, r.stderr)
		}
		unmount()

		// Nothing mounted at merged, but a host directory holding one
		// bound at the layer's <id> above it: not the store's own.
		elsewhere := t.TempDir()
		dirs(filepath.Join(elsewhere, "merged"))
		if err := bundle.Rootfs(filepath.Join(elsewhere, "merged")); err != nil {
			t.Fatal(err)
		}
		mountAt(t, filepath.Join(elsewhere), filepath.Join(store, layer), "", unix.MS_BIND)
		if r := run(b, id); r.code == 0 || !strings.Contains(r.stderr, "is neither dockerd's layer mounted there nor a directory on the mount of dockerd's store") {
			t.Fatalf("a host directory bound above dockerd's layer path: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
		}
	})
}
