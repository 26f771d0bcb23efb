package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestRootfsOfHostFiles: a containerd client's rootfs mounts may show the
// host's files at the rootfs, which are then judged as a bind of where the
// host shows them. Four ways passed that judgement: the whole disk of
// which the host mounts only a directory at a bind root (the job read the
// disk's other directories), a disk mounted over a bind of a shared bind
// root's directory, which the kernel mounted at the bind root too, a bind of a bind root's directory with an id
// map (the job read a user's 0600 file as its own), and a plain bind of
// one, in which the backend, as root, made the spec's mount points in the
// host's directory that binds show read-only. The first two are refused;
// the third runs on an overlay of the directory, so nothing is made there.
func TestRootfsOfHostFiles(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			bindRoot := t.TempDir()
			cfg, _ := workspaceConfig(t, fmt.Sprintf("[profiles.default]\nbind_roots = [%q]\n", bindRoot))
			g := []string{"--root", stateRoot(t), "--config", cfg, "--backend", backend}
			run := func(b, name string) result {
				return bulkhead(t, "", append(g, "run", "--bundle", b, uniqueID(name+"-"+backend))...)
			}

			// A disk whose root is a rootfs, with ci/ the host shows at
			// the bind root and other/ it shows nowhere.
			tree := t.TempDir()
			if err := bundle.Rootfs(tree); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{"ci", "other"} {
				if err := os.Mkdir(filepath.Join(tree, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(tree, "other", "secret"), []byte("other tenant's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			disk := filepath.Join(t.TempDir(), "disk.ext4")
			if out, err := exec.Command("mkfs.ext4", "-q", "-d", tree, disk, "16M").CombinedOutput(); err != nil {
				t.Fatalf("mkfs.ext4: %v: %s", err, out)
			}
			whole := t.TempDir()
			if out, err := exec.Command("mount", "-o", "loop", disk, whole).CombinedOutput(); err != nil {
				t.Fatalf("mount -o loop: %v: %s", err, out)
			}
			device, err := exec.Command("findmnt", "-n", "-o", "SOURCE", whole).Output()
			if err != nil {
				_ = unix.Unmount(whole, unix.MNT_DETACH)
				t.Fatalf("findmnt %s: %v", whole, err)
			}
			ci := filepath.Join(bindRoot, "ci")
			if err := os.Mkdir(ci, 0o755); err != nil {
				t.Fatal(err)
			}
			err = unix.Mount(filepath.Join(whole, "ci"), ci, "", unix.MS_BIND, "")
			_ = unix.Unmount(whole, unix.MNT_DETACH)
			if err != nil {
				t.Fatalf("bind of the disk's ci/: %v", err)
			}
			t.Cleanup(func() { _ = unix.Unmount(ci, unix.MNT_DETACH) })
			diskRoot := bundle.New(t, []string{"cat", "/other/secret"})
			// The same device mounted again is the same filesystem.
			if err := unix.Mount(strings.TrimSpace(string(device)), filepath.Join(diskRoot, "rootfs"), "ext4", 0, ""); err != nil {
				t.Fatalf("mount of the whole disk: %v", err)
			}
			t.Cleanup(func() { _ = unix.Unmount(filepath.Join(diskRoot, "rootfs"), unix.MNT_DETACH) })
			if r := run(diskRoot, "root-wholedisk"); r.code == 0 || !strings.Contains(r.stderr, "of which the host shows only a part") {
				t.Fatalf("a whole disk at the rootfs, of which the host shows ci/ at a bind root: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}

			// A disk the host never mounts, on top of a bind of a shared
			// bind root's directory (systemd makes every mount shared): the
			// kernel mounts it at the bind root too, where it looked shown.
			shared := filepath.Join(bindRoot, "shared")
			if err := os.MkdirAll(filepath.Join(shared, "r"), 0o755); err != nil {
				t.Fatal(err)
			}
			mountAt(t, shared, shared, "", unix.MS_BIND)
			if err := unix.Mount("", shared, "", unix.MS_SHARED, ""); err != nil {
				t.Fatal(err)
			}
			unseen := filepath.Join(t.TempDir(), "unseen.ext4")
			if out, err := exec.Command("mkfs.ext4", "-q", "-d", tree, unseen, "16M").CombinedOutput(); err != nil {
				t.Fatalf("mkfs.ext4: %v: %s", err, out)
			}
			propagated := bundle.New(t, []string{"cat", "/other/secret"})
			mountAt(t, filepath.Join(shared, "r"), filepath.Join(propagated, "rootfs"), "", unix.MS_BIND)
			if out, err := exec.Command("mount", "-o", "loop", unseen, filepath.Join(propagated, "rootfs")).CombinedOutput(); err != nil {
				t.Fatalf("mount -o loop: %v: %s", err, out)
			}
			t.Cleanup(func() { _ = unix.Unmount(filepath.Join(propagated, "rootfs"), unix.MNT_DETACH) })
			if r := run(propagated, "root-propagated"); r.code == 0 || !strings.Contains(r.stderr, "that is mounted there alone") {
				t.Fatalf("a disk mounted at the rootfs over a bind of a shared bind root's directory: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}
			for range 2 { // the disk, then the bind; their copies at the bind root go with them
				_ = unix.Unmount(filepath.Join(propagated, "rootfs"), unix.MNT_DETACH)
			}
			// The same disk mounted twice, a tmpfs between: the copy of
			// the first at the bind root is in another peer group than
			// the rootfs's own mount.
			stacked := bundle.New(t, []string{"cat", "/other/secret"})
			rootfs := filepath.Join(stacked, "rootfs")
			mountAt(t, filepath.Join(shared, "r"), rootfs, "", unix.MS_BIND)
			if out, err := exec.Command("mount", "-o", "loop", unseen, rootfs).CombinedOutput(); err != nil {
				t.Fatalf("mount -o loop: %v: %s", err, out)
			}
			loop, err := exec.Command("findmnt", "-n", "-o", "SOURCE", rootfs).Output()
			if err != nil {
				t.Fatal(err)
			}
			mountAt(t, "tmpfs", rootfs, "size=1m", 0)
			sources := strings.Fields(string(loop)) // the bind's, then the disk's
			if err := unix.Mount(sources[len(sources)-1], rootfs, "ext4", 0, ""); err != nil {
				t.Fatalf("the disk again: %v", err)
			}
			t.Cleanup(func() {
				for range 4 {
					_ = unix.Unmount(rootfs, unix.MNT_DETACH)
				}
			})
			if r := run(stacked, "root-stacked"); r.code == 0 || !strings.Contains(r.stderr, "that is mounted there alone") {
				t.Fatalf("a disk mounted twice at the rootfs over a bind of a shared bind root's directory: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}
			for range 4 {
				_ = unix.Unmount(rootfs, unix.MNT_DETACH)
			}
			// A slave of a slave of the bind root receives the copy too.
			for _, c := range [][]string{{"--bind", shared, filepath.Join(bindRoot, "s1")}, {"--make-slave", filepath.Join(bindRoot, "s1")},
				{"--make-shared", filepath.Join(bindRoot, "s1")}, {"--bind", filepath.Join(bindRoot, "s1"), filepath.Join(bindRoot, "s2")},
				{"--make-slave", filepath.Join(bindRoot, "s2")}} {
				if c[0] == "--bind" {
					if err := os.MkdirAll(c[2], 0o755); err != nil {
						t.Fatal(err)
					}
					target := c[2]
					t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
				}
				if out, err := exec.Command("mount", c...).CombinedOutput(); err != nil {
					t.Fatalf("mount %v: %v: %s", c, err, out)
				}
			}
			chained := bundle.New(t, []string{"cat", "/other/secret"})
			rootfs = filepath.Join(chained, "rootfs")
			mountAt(t, filepath.Join(shared, "r"), rootfs, "", unix.MS_BIND)
			if out, err := exec.Command("mount", "-o", "loop", unseen, rootfs).CombinedOutput(); err != nil {
				t.Fatalf("mount -o loop: %v: %s", err, out)
			}
			t.Cleanup(func() { _ = unix.Unmount(rootfs, unix.MNT_DETACH) })
			if r := run(chained, "root-chained"); r.code == 0 || !strings.Contains(r.stderr, "that is mounted there alone") {
				t.Fatalf("a disk mounted at the rootfs over a bind of a shared bind root's directory, with a slave of a slave of the bind root: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}
			for range 2 {
				_ = unix.Unmount(rootfs, unix.MNT_DETACH)
			}

			// A rootfs below the bind root with a user's private file.
			hostDir := filepath.Join(bindRoot, "tools")
			if err := bundle.Rootfs(hostDir); err != nil {
				t.Fatal(err)
			}
			alice := filepath.Join(hostDir, "alice")
			if err := os.Mkdir(alice, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(alice, "secret"), []byte("alice's\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{alice, filepath.Join(alice, "secret")} {
				if err := os.Chown(p, 1000, 1000); err != nil {
					t.Fatal(err)
				}
			}
			// A plain bind of it, with a mount point the directory lacks:
			// the job runs on an overlay of it, and the backend's mount
			// points are made in the overlay's own upper layer.
			before := entries(t, hostDir)
			bound := bundle.New(t, []string{"cat", "/etc/passwd"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/planted/deep", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec"}})
			})
			mountAt(t, hostDir, filepath.Join(bound, "rootfs"), "", unix.MS_BIND)
			if r := run(bound, "root-bound"); r.code != 0 || !strings.Contains(r.stdout, "nobody:") {
				t.Errorf("a bind of a bind root's directory at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it run", r.code, r.stdout, r.stderr)
			}
			_ = unix.Unmount(filepath.Join(bound, "rootfs"), unix.MNT_DETACH)
			if after := entries(t, hostDir); after != before {
				t.Fatalf("a bind of a bind root's directory at the rootfs: the backend made entries in the host's %s:\nbefore: %s\nafter:  %s", hostDir, before, after)
			}

			mapped := bundle.New(t, []string{"cat", "/alice/secret"})
			idmappedBind(t, hostDir, filepath.Join(mapped, "rootfs"), 1000, 65534)
			if r := run(mapped, "root-idmapped"); r.code == 0 || !strings.Contains(r.stderr, "is on an id-mapped mount") {
				t.Fatalf("a bind of a bind root's directory with an id map at the rootfs: exit %d\nstdout: %s\nstderr: %s\nwant it refused", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// idmappedBind binds source at target for the rest of the test with the
// on-disk uid and gid from shown as to, as containerd's uidmap= and
// gidmap= mount options of a bind make one: root's files stay root's.
func idmappedBind(t *testing.T, source, target string, from, to int) {
	t.Helper()
	holder := exec.Command("sleep", "60")
	maps := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: from, HostID: to, Size: 1}}
	holder.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: maps, GidMappings: maps}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	userns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", holder.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer userns.Close()
	tree, err := unix.OpenTree(unix.AT_FDCWD, source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(userns.Fd())}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		t.Fatalf("mount_setattr: %v", err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		t.Fatalf("move_mount: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
}

// entries lists the names in dir, for telling whether something was made there.
func entries(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}
