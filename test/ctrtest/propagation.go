package ctrtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/engine"
)

// CRI's MountPropagation values (k8s.io/cri-api).
const (
	propagationPrivate         = 0
	propagationHostToContainer = 1
	propagationBidirectional   = 2
)

// volumeDst is where the pods below see the host directory: below /tmp,
// as critest mounts its volumes, so below the policy's own /tmp tmpfs.
const volumeDst = "/tmp/bh-volume"

// hostVolume is a host directory the sandbox user may read (critest's are
// root-owned 0700, which uid 65534 cannot read): a file made before the
// container starts, and an empty directory sub where the host mounts
// something later.
func hostVolume(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("from-the-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mountOnHost runs mount(2) on the host and detaches that mount when the
// test ends, whatever happened; mounts made later are detached first.
func mountOnHost(t *testing.T, src, dst string, flags uintptr) {
	t.Helper()
	if err := unix.Mount(src, dst, "", flags, ""); err != nil {
		t.Fatalf("mount %s on %s: %v", src, dst, err)
	}
	t.Cleanup(func() {
		// EINVAL: no longer a mount point (a detach above took it).
		if err := unix.Unmount(dst, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			t.Errorf("unmount %s: %v", dst, err)
		}
	})
}

// makeShared is critest's createHostPathForMountPropagation: dir bound
// onto itself and made rshared, so mounts below it propagate to its peers
// and slaves.
func makeShared(t *testing.T, dir string) {
	t.Helper()
	mountOnHost(t, dir, dir, unix.MS_BIND|unix.MS_REC)
	if err := unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		t.Fatalf("make-rshared %s: %v", dir, err)
	}
}

// mountFlag binds, after the container started, a directory holding the
// file flag onto dir/sub, as critest's host-side mount does.
func mountFlag(t *testing.T, dir string) {
	t.Helper()
	flagDir := t.TempDir()
	if err := os.Chmod(flagDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(flagDir, "flag"), []byte("mounted-later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mountOnHost(t, flagDir, filepath.Join(dir, "sub"), unix.MS_BIND)
}

// volumeContainer creates a container of the pod with dir at volumeDst
// and the propagation given, and returns crictl's result of create.
func volumeContainer(t *testing.T, c CRI, podID, pod, dir string, propagation int) criResult {
	t.Helper()
	spec := WriteJSON(t, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "volume"},
		"image":    map[string]any{"image": Image},
		"command":  []string{"sleep", "3600"},
		"log_path": "volume.log",
		"mounts":   []map[string]any{{"container_path": volumeDst, "host_path": dir, "propagation": propagation}},
		"linux":    map[string]any{},
	})
	return c.Run("create", podID, spec, pod)
}

// startVolumeContainer is volumeContainer that must create and start; the
// container is removed when the test ends.
func startVolumeContainer(t *testing.T, c CRI, podID, pod, dir string, propagation int) string {
	t.Helper()
	r := volumeContainer(t, c, podID, pod, dir, propagation)
	if r.err != nil {
		t.Fatalf("%s\ncontainerd log:\n%s", r, c.D.LogTail(15))
	}
	cid := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { c.Run("rm", "--force", cid) })
	c.Must(t, "start", cid)
	AssertConfined(t, "volume container", c.InfoPid(t, "inspect", cid))
	return cid
}

// removeContainer stops and removes cid and checks nothing of it is left.
func removeContainer(t *testing.T, c CRI, cid string) {
	t.Helper()
	c.Must(t, "stop", "--timeout", "2", cid)
	// The CRI plugin records the exit asynchronously: rm can race it.
	if !engine.Eventually(30*time.Second, func() bool { return c.Run("rm", cid).err == nil }) {
		t.Fatalf("%s", c.Run("rm", cid))
	}
	c.LeftoversGone(t, cid)
}

// flagSeen runs, inside cid, a test for the flag file the host mounted
// after the start, and returns what it printed: present or absent.
func flagSeen(t *testing.T, c CRI, cid string) string {
	t.Helper()
	return c.Must(t, "exec", cid, "sh", "-c", "if test -e "+volumeDst+"/sub/flag; then echo present; else echo absent; fi")
}

// assertVolumeRead checks the container reads, as the sandbox user, the
// file the host put in the volume before the start: the bind below /tmp is
// not hidden by the policy's /tmp tmpfs.
func assertVolumeRead(t *testing.T, c CRI, cid string) {
	t.Helper()
	if out := c.Must(t, "exec", cid, "cat", volumeDst+"/file"); out != "from-the-host" {
		t.Fatalf("cat %s/file = %q, want from-the-host: the volume is not what the container sees there", volumeDst, out)
	}
}

// assertHostMountKept checks the host's flag mount below dir outlived the
// container: whatever the container's propagation, its teardown must not
// take the host's own mounts with it.
func assertHostMountKept(t *testing.T, dir string) {
	t.Helper()
	sub := filepath.Join(dir, "sub")
	if mounted, err := mountinfo.Mounted(sub); err != nil || !mounted {
		t.Errorf("removing the container unmounted the host's %s (mounted %v, %v)", sub, mounted, err)
	}
	if _, err := os.Stat(filepath.Join(sub, "flag")); err != nil {
		t.Errorf("the host lost its flag file after the container was removed: %v", err)
	}
}

// PodMountPropagation is the mount handling critest's volume and mount
// propagation tests look at, under the default profile in enforce mode
// (those tests themselves fail there by design: privileged containers
// that mount, root-owned 0700 host directories, read-only binds; see
// docs/critest-differences.md). A host directory at a path below /tmp is
// visible; a mount made below a shared host directory after the start
// reaches the container neither with HostToContainer (rslave, made
// private: a containerd client's next task can make such a mount, binding
// the same directory into its rootfs) nor with Private; removing either
// container leaves the host's mount alone; Bidirectional (rshared) is
// refused by the mounts rule.
func PodMountPropagation(t *testing.T, c CRI) {
	pod := PodConfig(t, "bh-propagation", false)
	podID := c.Must(t, "runp", "--runtime", c.Handler, pod)
	t.Cleanup(func() {
		c.Run("stopp", podID)
		c.Run("rmp", "--force", podID)
	})

	t.Run("volume", func(t *testing.T) {
		dir := hostVolume(t)
		cid := startVolumeContainer(t, c, podID, pod, dir, propagationPrivate)
		assertVolumeRead(t, c, cid)
		removeContainer(t, c, cid)
	})

	t.Run("host_to_container", func(t *testing.T) {
		dir := hostVolume(t)
		makeShared(t, dir)
		cid := startVolumeContainer(t, c, podID, pod, dir, propagationHostToContainer)
		assertVolumeRead(t, c, cid)
		if got := flagSeen(t, c, cid); got != "absent" {
			t.Fatalf("before the host's mount the container says %q, want absent", got)
		}
		mountFlag(t, dir)
		if _, err := os.Stat(filepath.Join(dir, "sub", "flag")); err != nil {
			t.Fatalf("the host does not see its own mount: %v", err)
		}
		if got := flagSeen(t, c, cid); got != "absent" {
			t.Errorf("with HostToContainer a later mount reached the container: %q", got)
		}
		removeContainer(t, c, cid)
		assertHostMountKept(t, dir)
	})

	t.Run("private", func(t *testing.T) {
		dir := hostVolume(t)
		makeShared(t, dir)
		cid := startVolumeContainer(t, c, podID, pod, dir, propagationPrivate)
		assertVolumeRead(t, c, cid)
		mountFlag(t, dir)
		if _, err := os.Stat(filepath.Join(dir, "sub", "flag")); err != nil {
			t.Fatalf("the host does not see its own mount: %v", err)
		}
		if got := flagSeen(t, c, cid); got != "absent" {
			t.Errorf("with Private the host's later mount reached the container: %q", got)
		}
		removeContainer(t, c, cid)
		assertHostMountKept(t, dir)
	})

	t.Run("bidirectional", func(t *testing.T) {
		dir := hostVolume(t)
		makeShared(t, dir)
		r := volumeContainer(t, c, podID, pod, dir, propagationBidirectional)
		var cid string
		if r.err == nil {
			// CRI creates the container record first; the runtime runs at start.
			cid = strings.TrimSpace(r.stdout)
			t.Cleanup(func() { c.Run("rm", "--force", cid) })
			r = c.Run("start", cid)
		}
		if r.err == nil {
			t.Fatalf("a Bidirectional (rshared) volume started:\n%s", r)
		}
		t.Logf("%s: %s", r.args[0], lastLine(r.stderr))
		for _, want := range []string{"bulkhead", "rule mounts", "shared propagation lets mounts cross"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the refusal does not say %q:\n%s", want, r)
			}
		}
		if cid != "" {
			c.Must(t, "rm", cid)
			c.LeftoversGone(t, cid)
		}
	})

	c.Must(t, "stopp", podID)
	c.Must(t, "rmp", podID)
	c.LeftoversGone(t, podID)
}
