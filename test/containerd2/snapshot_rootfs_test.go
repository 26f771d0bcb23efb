package containerd2

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/core/snapshots/storage"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/ctrtest"
)

// TestRootfsOfAnotherContainersSnapshot: a containerd client chooses a
// task's rootfs mounts. Another container's snapshot (stopped, so no
// overlay writes to it now) named as a lower or the upper layer was
// accepted as an image's layers, and the job read that container's files.
// Each is refused now, by the snapshotter's own record, and leaves nothing,
// as is a container's snapshot not keyed by its id (whose it is cannot be
// told) and another containerd's snapshot, whatever its key; the container's own snapshot, as ctr and CRI key it, runs. (An
// image's committed layer as the upper layer: specs' unit tests; containerd
// mounts no such overlay.)
func TestRootfsOfAnotherContainersSnapshot(t *testing.T) {
	d := containerd2(t)
	ctx, client, img := d.Client(t, 3*time.Minute)

	// The other tenant's container, on plain runc, leaves a secret in
	// its snapshot and stops.
	victim := ctrtest.NewID("victim")
	d.Must(t, "run", "--runtime", "io.containerd.runc.v2", ctrtest.Image, victim, "sh", "-c", "echo tenant-secret > /etc/victim-secret")
	t.Cleanup(func() { d.Run(time.Minute, "container", "rm", victim) })
	sn := client.SnapshotService("overlayfs")
	vm, err := sn.Mounts(ctx, victim)
	if err != nil || len(vm) != 1 {
		t.Fatalf("the victim's snapshot mounts: %v %v", vm, err)
	}
	lowers, upper, work := layers(t, vm[0])

	overlay := func(options ...string) []mount.Mount {
		return []mount.Mount{{Type: "overlay", Source: "overlay", Options: options}}
	}
	for _, c := range []struct {
		name   string
		mounts []mount.Mount
		want   string
	}{
		{"lower", overlay("lowerdir=" + strings.Join(append([]string{upper}, lowers...), ":")), "which is neither a committed layer of namespace"},
		{"upper", overlay("lowerdir="+strings.Join(lowers, ":"), "upperdir="+upper, "workdir="+work), "which is not this container's own active snapshot"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := ctrtest.NewID("steal-" + c.name)
			ctr, err := client.NewContainer(ctx, id, containerd.WithRuntime(ctrtest.ShimRuntime, nil),
				containerd.WithNewSpec(oci.WithProcessArgs("/bin/cat", "/etc/victim-secret")))
			if err != nil {
				t.Fatal(err)
			}
			defer ctr.Delete(context.WithoutCancel(ctx))
			task, err := ctr.NewTask(ctx, cio.NullIO, containerd.WithRootFS(c.mounts))
			if err == nil {
				_, _ = task.Delete(ctx, containerd.WithProcessKill)
				t.Fatalf("a task whose rootfs is %v was created", c.mounts)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("refused for another reason: %v\nwant %q", err, c.want)
			}
			if left := ctrtest.Leftovers(t, id); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}

	// Another containerd on the host (its snapshotter laid out as
	// containerd lays it out), whose record keys a tenant's stopped
	// container's snapshot by this container's namespace and id.
	t.Run("other-containerd", func(t *testing.T) {
		id := ctrtest.NewID("steal-other")
		home := filepath.Join(t.TempDir(), "root", "io.containerd.snapshotter.v1.overlayfs")
		fs := filepath.Join(home, "snapshots", "1", "fs")
		if err := bundle.Rootfs(fs); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(fs, "run"), 0o755); err != nil { // the spec's tmpfs at /run
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fs, "etc", "victim-secret"), []byte("other containerd's tenant\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ms, err := storage.NewMetaStore(filepath.Join(home, "metadata.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer ms.Close()
		if err := ms.WithTransaction(ctx, true, func(ctx context.Context) error {
			_, err := storage.CreateSnapshot(ctx, snapshots.KindActive, ctrtest.Namespace+"/1/"+id, "")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		ctr, err := client.NewContainer(ctx, id, containerd.WithRuntime(ctrtest.ShimRuntime, nil),
			containerd.WithNewSpec(oci.WithProcessArgs("/bin/cat", "/etc/victim-secret")))
		if err != nil {
			t.Fatal(err)
		}
		defer ctr.Delete(context.WithoutCancel(ctx))
		ms2 := overlay("lowerdir=" + fs + ":" + lowers[len(lowers)-1])
		task, err := ctr.NewTask(ctx, cio.NullIO, containerd.WithRootFS(ms2))
		if err == nil {
			_, _ = task.Delete(ctx, containerd.WithProcessKill)
			t.Fatalf("a task whose rootfs is another containerd's snapshot (%v) was created", ms2)
		}
		if !strings.Contains(err.Error(), "another containerd's snapshot") {
			t.Errorf("refused for another reason: %v", err)
		}
	})

	// A client that keys its container's snapshot other than by the
	// container's id: which container's it is cannot be told.
	t.Run("key-not-id", func(t *testing.T) {
		id := ctrtest.NewID("other-key")
		ctr, err := client.NewContainer(ctx, id, containerd.WithRuntime(ctrtest.ShimRuntime, nil), containerd.WithImage(img),
			containerd.WithNewSnapshot(id+"-snap", img), containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("true")))
		if err != nil {
			t.Fatal(err)
		}
		defer ctr.Delete(context.WithoutCancel(ctx), containerd.WithSnapshotCleanup)
		task, err := ctr.NewTask(ctx, cio.NullIO)
		if err == nil {
			_, _ = task.Delete(ctx, containerd.WithProcessKill)
			t.Fatal("a container whose snapshot is keyed other than by its id was created")
		}
		if !strings.Contains(err.Error(), "not this container's own active snapshot") {
			t.Errorf("refused for another reason: %v", err)
		}
	})

	// The container's own snapshot, keyed by its id as ctr and CRI key
	// it: runs.
	t.Run("own", func(t *testing.T) {
		id := ctrtest.NewID("own-snapshot")
		ctr, err := client.NewContainer(ctx, id, containerd.WithRuntime(ctrtest.ShimRuntime, nil), containerd.WithImage(img),
			containerd.WithNewSnapshot(id, img), containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("true")))
		if err != nil {
			t.Fatal(err)
		}
		defer ctr.Delete(context.WithoutCancel(ctx), containerd.WithSnapshotCleanup)
		task, err := ctr.NewTask(ctx, cio.NullIO)
		if err != nil {
			t.Fatalf("the container's own snapshot: %v", err)
		}
		defer task.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill)
		exited, err := task.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if st := <-exited; st.ExitCode() != 0 {
			t.Errorf("exit %d", st.ExitCode())
		}
	})
}

// layers are the lower layers, the upper layer and the work directory of
// an overlay mount as the snapshotter gives it.
func layers(t *testing.T, m mount.Mount) (lowers []string, upper, work string) {
	t.Helper()
	for _, o := range m.Options {
		switch k, v, _ := strings.Cut(o, "="); k {
		case "lowerdir":
			lowers = strings.Split(v, ":")
		case "upperdir":
			upper = v
		case "workdir":
			work = v
		}
	}
	if m.Type != "overlay" || len(lowers) == 0 || upper == "" || work == "" {
		t.Fatalf("not an overlay with an upper layer: %+v", m)
	}
	return lowers, upper, work
}
