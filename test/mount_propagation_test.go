package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
)

// bulkhead's mounts for a container (its pins, a workspace's overlay)
// reach no other mount namespace, even where the mount holding the state
// root is shared: a namespace that receives what is mounted there (a
// container with an rslave bind of a directory above the state root)
// received each pin and overlay, and the workspace's tmpfs with the
// job's upper layer, writable. It may see the two directories that hold
// them, empty, and nothing of them once the container is deleted.
func TestOwnMountsStayInTheHost(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			if _, err := exec.LookPath("unshare"); err != nil {
				t.Skip("unshare (util-linux) is not installed")
			}
			shared := t.TempDir()
			if err := unix.Mount("bulkhead-test", shared, "tmpfs", 0, "size=64m"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = unix.Unmount(shared, unix.MNT_DETACH) })
			if err := unix.Mount("", shared, "", unix.MS_SHARED, ""); err != nil {
				t.Fatal(err)
			}
			receiver := exec.Command("unshare", "-m", "--propagation", "unchanged", "sleep", "600")
			if err := receiver.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = receiver.Process.Kill(); _ = receiver.Wait() })
			own, _ := os.Readlink("/proc/self/ns/mnt")
			pid := strconv.Itoa(receiver.Process.Pid)
			for i := 0; ; i++ {
				ns, _ := os.Readlink("/proc/" + pid + "/ns/mnt")
				if ns != own && ns != "" {
					break
				}
				if i == 500 {
					t.Fatal("unshare made no mount namespace within 5 s")
				}
				time.Sleep(10 * time.Millisecond)
			}

			root := filepath.Join(shared, "root")
			cfg, _ := workspaceConfig(t, "")
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			tools := t.TempDir()
			src := workspaceSource(t)
			b := bundle.New(t, []string{"sleep", "60"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts,
					rspec.Mount{Destination: "/workspace", Type: "bind", Source: src, Options: []string{"rbind", "rw"}},
					rspec.Mount{Destination: "/opt/tools", Type: "bind", Source: tools, Options: []string{"rbind", "ro"}})
			})
			id := uniqueID("propagation-" + backend)
			must(t, append(g, "create", "--bundle", b, id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })

			dir := filepath.Join(root, "bulkhead", id)
			if own := mountPoints(t, "self", dir); len(own) < 4 {
				t.Fatalf("bulkhead mounted %v for a pin and a workspace: the test sees none of its mounts", own)
			}
			for _, m := range mountPoints(t, pid, dir) {
				if m != filepath.Join(dir, "pins") && m != filepath.Join(dir, "ws") {
					t.Errorf("another mount namespace received bulkhead's mount %s", m)
				}
			}
			// What it sees below those two is the empty mount points: not
			// the pinned files, nor the workspace's tmpfs, whose upper layer
			// it could read and write and an export would carry to the host
			// as the job's.
			seen := filepath.Join("/proc", pid, "root", dir)
			err := filepath.WalkDir(filepath.Join(seen, "ws"), func(p string, e os.DirEntry, err error) error {
				if err == nil && p != filepath.Join(seen, "ws") {
					err = fmt.Errorf("it sees %s in bulkhead's workspace directory", strings.TrimPrefix(p, seen))
				}
				return err
			})
			if err != nil {
				t.Errorf("another mount namespace: %v", err)
			}
			pins, err := os.ReadDir(filepath.Join(seen, "pins"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range pins {
				fi, err := os.Stat(filepath.Join(seen, "pins", e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				inside, _ := os.ReadDir(filepath.Join(seen, "pins", e.Name()))
				if fi.Size() > 0 && !fi.IsDir() || len(inside) > 0 {
					t.Errorf("another mount namespace sees the pinned files at pins/%s", e.Name())
				}
			}
			must(t, append(g, "delete", "--force", id)...)
			if left := mountPoints(t, pid, dir); len(left) > 0 {
				t.Errorf("after delete, another mount namespace still holds %v", left)
			}
		})
	}
}

// mountPoints lists the mount points at or below dir in the mount table
// of process pid ("self" for this one).
func mountPoints(t *testing.T, pid, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}
