package test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/core/snapshots/storage"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// TestRootfsJudgedByWhatIsMounted: an engine mounts the image at the
// bundle's rootfs before it calls the runtime, and a containerd client
// chooses those mounts (a task's rootfs). A rootfs inside the bundle was
// judged by its path alone: a bind of the host's / there, an overlay whose
// lower layer was a running container's writable layer, a bind of that
// layer, or an overlay of a user's directories named as snapshots (one a
// link to /, or a bind of a host directory at a snapshot's path) ran as the container's
// root on runc and runsc, and so did a filesystem image mounted there
// through a loop device (another tenant's blockfile snapshot). All are
// refused now, as is an overlay of snapshots for a bundle that is no
// containerd task's (whose snapshots they are cannot be told); an overlay
// of snapshots as containerd makes one for a task still runs.
func TestRootfsJudgedByWhatIsMounted(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			g := []string{"--root", root, "--config", cfg, "--backend", backend}
			run := func(b, name string) result {
				return bulkhead(t, "", append(g, "run", "--bundle", b, uniqueID(name+"-"+backend))...)
			}

			// The host's / bound at the rootfs, in a mount namespace of
			// its own: made in the host's, it showed every file on the
			// host a second time to everything else running there (another
			// suite's containers then stood in a second place).
			hostRoot := bundle.New(t, []string{"cat", "/etc/hostname"})
			var stdout, stderr strings.Builder
			cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind / "$0" && exec "$@"`,
				filepath.Join(hostRoot, "rootfs"), binaries.Bulkhead(t))
			cmd.Args = append(cmd.Args, append(g, "run", "--bundle", hostRoot, uniqueID("root-host-"+backend))...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if r := (result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}); err == nil || !strings.Contains(r.stderr, "host / exposes every host file") {
				t.Fatalf("a bind of the host's / at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			} else if !strings.Contains(r.stderr, "mount it from below bind_roots") {
				// The rootfs is inside the bundle already: the advice is
				// about what is mounted there.
				t.Errorf("a mount at the bundle's rootfs refused with advice that does not fit it:\n%s", r.stderr)
			}

			// containerd's overlayfs snapshotter, as a root of its own:
			// snapshot 1 the image, 2 a running container's writable layer.
			snaps := filepath.Join(t.TempDir(), "io.containerd.snapshotter.v1.overlayfs", "snapshots")
			snap := func(n string) (fs, work string) {
				fs, work = filepath.Join(snaps, n, "fs"), filepath.Join(snaps, n, "work")
				for _, d := range []string{fs, work} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				return fs, work
			}
			image, _ := snap("1")
			if err := bundle.Rootfs(image); err != nil {
				t.Fatal(err)
			}
			victimUpper, victimWork := snap("2")
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.Mkdir(victim, 0o755); err != nil {
				t.Fatal(err)
			}
			mountAt(t, "overlay", victim, "lowerdir="+image+",upperdir="+victimUpper+",workdir="+victimWork, 0)
			if err := os.WriteFile(filepath.Join(victim, "secret"), []byte("victim's\n"), 0o644); err != nil {
				t.Fatal(err)
			}

			over := bundle.New(t, []string{"cat", "/secret"})
			upper, work := snap("3")
			mountAt(t, "overlay", filepath.Join(over, "rootfs"), "lowerdir="+victimUpper+":"+image+",upperdir="+upper+",workdir="+work, 0)
			if r := run(over, "root-victim"); r.code == 0 || !strings.Contains(r.stderr, "is the writable layer of the overlay at "+victim) {
				t.Fatalf("an overlay over a running container's writable layer at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}

			// The same writable layer by another path: a bind of the
			// snapshotter's tree elsewhere.
			elsewhere := t.TempDir()
			mountAt(t, filepath.Dir(filepath.Dir(snaps)), elsewhere, "", unix.MS_BIND)
			rel, err := filepath.Rel(filepath.Dir(filepath.Dir(snaps)), victimUpper)
			if err != nil {
				t.Fatal(err)
			}
			aliased := bundle.New(t, []string{"cat", "/secret"})
			upper, work = snap("7")
			mountAt(t, "overlay", filepath.Join(aliased, "rootfs"), "lowerdir="+filepath.Join(elsewhere, rel)+":"+image+",upperdir="+upper+",workdir="+work, 0)
			if r := run(aliased, "root-victim-alias"); r.code == 0 || !strings.Contains(r.stderr, "is the writable layer of the overlay at "+victim) {
				t.Fatalf("an overlay over a running container's writable layer, named by another path, at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}

			bound := bundle.New(t, []string{"cat", "/secret"})
			mountAt(t, victimUpper, filepath.Join(bound, "rootfs"), "", unix.MS_BIND)
			if r := run(bound, "root-victim-bind"); r.code == 0 || !strings.Contains(r.stderr, "the writable layer of the overlay at "+victim) {
				t.Fatalf("a bind of a running container's writable layer at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}

			// A filesystem image the host mounts nowhere else, through a
			// loop device (containerd attaches one for a client's "loop"
			// mount option): another tenant's blockfile snapshot, a VM's
			// disk. It passed as plain storage and ran.
			image2 := filepath.Join(t.TempDir(), "tenant.ext4")
			tree := t.TempDir()
			if err := bundle.Rootfs(tree); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tree, "secret"), []byte("tenant's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("mkfs.ext4", "-q", "-d", tree, image2, "16M").CombinedOutput(); err != nil {
				t.Fatalf("mkfs.ext4: %v: %s", err, out)
			}
			looped := bundle.New(t, []string{"cat", "/secret"})
			if out, err := exec.Command("mount", "-o", "ro,loop", image2, filepath.Join(looped, "rootfs")).CombinedOutput(); err != nil {
				t.Fatalf("mount -o loop: %v: %s", err, out)
			}
			t.Cleanup(func() { _ = unix.Unmount(filepath.Join(looped, "rootfs"), unix.MNT_DETACH) })
			if r := run(looped, "root-loop"); r.code == 0 || !strings.Contains(r.stderr, "that is mounted there alone") {
				t.Fatalf("a filesystem image mounted through a loop device at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}
			// The same with the rootfs bound onto itself on top (a
			// client's second rootfs mount): its files are shown twice,
			// both inside the bundle.
			mountAt(t, filepath.Join(looped, "rootfs"), filepath.Join(looped, "rootfs"), "", unix.MS_BIND)
			if r := run(looped, "root-loop-self"); r.code == 0 || !strings.Contains(r.stderr, "that is mounted there alone") {
				t.Fatalf("a loop-mounted image at the rootfs with the rootfs bound onto itself: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}
			// Or mounted above the rootfs, which is a directory of it.
			above := bundle.New(t, []string{"cat", "/secret"}, func(s *rspec.Spec) { s.Root.Path = "mnt/rootfs" })
			if err := os.Mkdir(filepath.Join(above, "mnt"), 0o755); err != nil {
				t.Fatal(err)
			}
			nested := filepath.Join(t.TempDir(), "nested")
			if err := os.MkdirAll(filepath.Join(nested, "rootfs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("cp", "-a", tree+"/.", filepath.Join(nested, "rootfs")).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v: %s", err, out)
			}
			image3 := filepath.Join(t.TempDir(), "tenant3.ext4")
			if out, err := exec.Command("mkfs.ext4", "-q", "-d", nested, image3, "16M").CombinedOutput(); err != nil {
				t.Fatalf("mkfs.ext4: %v: %s", err, out)
			}
			if out, err := exec.Command("mount", "-o", "ro,loop", image3, filepath.Join(above, "mnt")).CombinedOutput(); err != nil {
				t.Fatalf("mount -o loop: %v: %s", err, out)
			}
			t.Cleanup(func() { _ = unix.Unmount(filepath.Join(above, "mnt"), unix.MNT_DETACH) })
			if r := run(above, "root-loop-above"); r.code == 0 || !strings.Contains(r.stderr, "that is mounted there alone") {
				t.Fatalf("a rootfs inside a loop-mounted image in the bundle: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}

			// Directories named as snapshots by a user: the first a link
			// to the host's /. overlayfs takes no layer overlapping
			// another, so the second lies on /dev/shm.
			users := filepath.Join(t.TempDir(), "u")
			fake := filepath.Join(users, "io.containerd.snapshotter.v1.overlayfs", "snapshots", "1")
			if err := os.MkdirAll(fake, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/", filepath.Join(fake, "fs")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(users, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			shm, err := os.MkdirTemp("/dev/shm", "bh-root-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(shm) })
			second := filepath.Join(shm, "io.containerd.snapshotter.v1.overlayfs", "snapshots", "2", "fs")
			if err := os.MkdirAll(second, 0o755); err != nil {
				t.Fatal(err)
			}
			linked := bundle.New(t, []string{"cat", "/etc/hostname"})
			mountAt(t, "overlay", filepath.Join(linked, "rootfs"), "lowerdir="+filepath.Join(fake, "fs")+":"+second, 0)
			if r := run(linked, "root-linked"); r.code == 0 || !strings.Contains(r.stderr, "its files are its layers'") {
				t.Fatalf("an overlay of a link to the host's / named as a snapshot at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}

			// A snapshot's directory that is a mount of a host directory
			// (not the host's / itself: other tests judge their own
			// rootfs by every place its files are mounted at): the
			// overlay's layers are judged by what is mounted there.
			hostDir := t.TempDir()
			if err := bundle.Rootfs(hostDir); err != nil {
				t.Fatal(err)
			}
			hostSnap, _ := snap("5")
			mountAt(t, hostDir, hostSnap, "", unix.MS_BIND)
			mounted := bundle.New(t, []string{"cat", "/etc/hostname"})
			mountAt(t, "overlay", filepath.Join(mounted, "rootfs"), "lowerdir="+hostSnap+":"+second, 0)
			if r := run(mounted, "root-mounted"); r.code == 0 || !strings.Contains(r.stderr, "its files are its layers'") {
				t.Fatalf("an overlay of a bind of a host directory at a snapshot's path at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}

			// As containerd makes one for a task: the bundle in a shim's
			// task directory, its work link into the containerd's root
			// that holds the snapshotter, the upper layer the container's
			// own active snapshot and the image's layer a committed one,
			// as the snapshotter's database records them.
			// (Short names: a socket's path below it must fit sun_path.)
			ownID := uniqueID("own-" + backend)
			taskDir, err := os.MkdirTemp("", "bh-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(taskDir) })
			own := filepath.Join(taskDir, "io.containerd.runtime.v2.task", "t", ownID)
			if err := bundle.Make(own, []string{"echo", "ok"}); err != nil {
				t.Fatal(err)
			}
			ctrdRoot := filepath.Dir(filepath.Dir(snaps))
			if err := os.Symlink(filepath.Join(ctrdRoot, "io.containerd.runtime.v2.task", "t", ownID), filepath.Join(own, "work")); err != nil {
				t.Fatal(err)
			}
			upper, work = snap("4")
			recordSnapshots(t, filepath.Dir(snaps), "t/1/sha256:image", "", "", "t/9/"+ownID)
			mountAt(t, "overlay", filepath.Join(own, "rootfs"), "lowerdir="+image+",upperdir="+upper+",workdir="+work, 0)
			runOwn := func() result { return bulkhead(t, "", append(g, "run", "--bundle", own, ownID)...) }
			if r := runOwn(); r.code != 0 || strings.TrimSpace(r.stdout) != "ok" {
				t.Fatalf("an overlay of the image's snapshot at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it run", r.code, r.stdout, r.stderr)
			}
			notTask := bundle.New(t, []string{"echo", "ok"})
			upper, work = snap("8")
			mountAt(t, "overlay", filepath.Join(notTask, "rootfs"), "lowerdir="+image+",upperdir="+upper+",workdir="+work, 0)
			if r := run(notTask, "root-not-task"); r.code == 0 || !strings.Contains(r.stderr, "this container is no containerd task") {
				t.Fatalf("an overlay of snapshots at the rootfs of a bundle that is no containerd task's: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}

			// A host service's socket bound, or a FIFO made, through the
			// overlay is one the job reaches through its root (runc binds
			// the same overlay): refused as in a plain rootfs.
			sock := filepath.Join(own, "rootfs", "tmp", "svc.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			if r := runOwn(); r.code == 0 || !strings.Contains(r.stderr, sock+" is a socket or a FIFO") {
				t.Fatalf("a host service's socket in the overlay at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}
			l.Close() // unlinks it
			fifo := filepath.Join(own, "rootfs", "tmp", "svc.fifo")
			if err := unix.Mkfifo(fifo, 0o666); err != nil {
				t.Fatal(err)
			}
			if r := runOwn(); r.code == 0 || !strings.Contains(r.stderr, fifo+" is a socket or a FIFO") {
				t.Fatalf("a FIFO in the overlay at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}
			if err := os.Remove(fifo); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// mountAt mounts source at target for the rest of the test.
func mountAt(t *testing.T, source, target, data string, flags uintptr) {
	t.Helper()
	fstype := ""
	if flags&unix.MS_BIND == 0 {
		fstype = source
	}
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		t.Fatalf("mount %s at %s: %v", source, target, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
}

// recordSnapshots writes the database of the snapshotter at root as
// containerd's own code does: one snapshot per key, numbered from 1 in
// order (their directories' names); a key ending in sha256:... is
// committed (an image's layer), any other active, and "" a snapshot whose
// record is another's to give.
func recordSnapshots(t *testing.T, root string, keys ...string) {
	t.Helper()
	ms, err := storage.NewMetaStore(filepath.Join(root, "metadata.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	if err := ms.WithTransaction(context.Background(), true, func(ctx context.Context) error {
		for i, key := range keys {
			if key == "" {
				key = fmt.Sprintf("elsewhere/%d/snapshot-%d", i, i)
			}
			committed := strings.Contains(key, "sha256:")
			active := key
			if committed {
				active = key + "-extract"
			}
			if _, err := storage.CreateSnapshot(ctx, snapshots.KindActive, active, ""); err != nil {
				return err
			}
			if committed {
				if _, err := storage.CommitActive(ctx, active, key, snapshots.Usage{}); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
