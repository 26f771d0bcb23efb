package specs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/core/snapshots/storage"
)

// taskBundle lays out the bundle a containerd with its root at root makes
// for task id in namespace ns (its work link included), root's as
// containerd's is, and returns the Context of that task.
func taskBundle(t *testing.T, root, ns, id string) *Context {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a containerd task's bundle is root's: needs root")
	}
	bundle := filepath.Join(t.TempDir(), "state", "io.containerd.runtime.v2.task", ns, id)
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "io.containerd.runtime.v2.task", ns, id), filepath.Join(bundle, "work")); err != nil {
		t.Fatal(err)
	}
	return &Context{Bundle: bundle, ID: id}
}

// snapshotter makes a snapshotter's home and opens its database with
// containerd's code, held open (and so locked, as containerd holds it
// while it runs) until the test ends.
func snapshotter(t *testing.T) (string, *storage.MetaStore) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "io.containerd.snapshotter.v1.overlayfs")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	ms, err := storage.NewMetaStore(filepath.Join(root, "metadata.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	return root, ms
}

// TestSnapshotUseRefusal judges snapshot directories by the records of a
// snapshotter database made with containerd's own code: an image's
// committed layer of the container's namespace is read, never written; the
// container's own active snapshot is written; another container's
// snapshot, another namespace's layer, a snapshot without a record, and
// any snapshot for a container that is no containerd task, or of another
// containerd than the task's, are refused.
// The database stays open meanwhile, locked as containerd keeps it.
func TestSnapshotUseRefusal(t *testing.T) {
	root, ms := snapshotter(t)
	ids := map[string]string{}
	if err := ms.WithTransaction(context.Background(), true, func(ctx context.Context) error {
		for _, s := range []struct {
			key    string
			commit string
		}{
			{"k8s.io/1/extract-layer", "k8s.io/2/sha256:layer"},
			{"k8s.io/3/own", ""},
			{"k8s.io/4/other", ""},
			{"tenant-b/5/extract-layer", "tenant-b/6/sha256:layer"},
		} {
			snap, err := storage.CreateSnapshot(ctx, snapshots.KindActive, s.key, "")
			if err != nil {
				return err
			}
			name := s.key
			if s.commit != "" {
				if _, err := storage.CommitActive(ctx, s.key, s.commit, snapshots.Usage{}); err != nil {
					return err
				}
				name = s.commit
			}
			ids[name] = snap.ID
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	dir := func(name string) string { return filepath.Join(root, "snapshots", ids[name], "fs") }
	task := taskBundle(t, filepath.Dir(root), "k8s.io", "own")
	// Another containerd whose snapshotter records the same key.
	elsewhere := taskBundle(t, t.TempDir(), "k8s.io", "own")
	noWork := taskBundle(t, filepath.Dir(root), "k8s.io", "own")
	if err := os.Remove(filepath.Join(noWork.Bundle, "work")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ctx      *Context
		dir      string
		writable bool
		refused  string
	}{
		{task, dir("k8s.io/2/sha256:layer"), false, ""},
		{task, dir("k8s.io/2/sha256:layer"), true, "not this container's own active snapshot"},
		{task, dir("k8s.io/3/own"), true, ""},
		{task, dir("k8s.io/3/own"), false, ""},
		{task, dir("k8s.io/4/other"), false, "neither a committed layer of namespace"},
		{task, dir("k8s.io/4/other"), true, "not this container's own active snapshot"},
		{task, dir("tenant-b/6/sha256:layer"), false, "neither a committed layer of namespace"},
		{task, filepath.Join(root, "snapshots", "99", "fs"), false, "record cannot be read"},
		{&Context{Bundle: filepath.Join(t.TempDir(), "own"), ID: "own"}, dir("k8s.io/2/sha256:layer"), false, "no containerd task"},
		{noWork, dir("k8s.io/2/sha256:layer"), false, "no containerd task"},
		{elsewhere, dir("k8s.io/3/own"), false, "another containerd's snapshot"},
		{elsewhere, dir("k8s.io/2/sha256:layer"), false, "another containerd's snapshot"},
	} {
		why := c.ctx.snapshotUseRefusal(c.dir, c.writable)
		switch {
		case c.refused == "" && why != "":
			t.Errorf("%s (writable %v): refused: %s", c.dir, c.writable, why)
		case c.refused != "" && !strings.Contains(why, c.refused):
			t.Errorf("%s (writable %v): %q, want it refused with %q", c.dir, c.writable, why, c.refused)
		}
	}
}

// TestOverlaySnapshotsRefusal: an overlay's layers as containerd mounts a
// task's rootfs (the image's committed layers below the container's own
// active snapshot) or a view (committed layers alone); the work directory
// must be the upper layer's snapshot's own.
func TestOverlaySnapshotsRefusal(t *testing.T) {
	root, ms := snapshotter(t)
	if err := ms.WithTransaction(context.Background(), true, func(ctx context.Context) error {
		for _, key := range []string{"t/1/l1", "t/2/l2", "t/3/own", "t/4/other"} {
			if _, err := storage.CreateSnapshot(ctx, snapshots.KindActive, key, ""); err != nil {
				return err
			}
		}
		for _, k := range []string{"l1", "l2"} {
			if _, err := storage.CommitActive(ctx, "t/"+k[1:]+"/"+k, "t/9/sha256:"+k, snapshots.Usage{}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fs := func(id string) string { return filepath.Join(root, "snapshots", id, "fs") }
	work := func(id string) string { return filepath.Join(root, "snapshots", id, "work") }
	c := taskBundle(t, filepath.Dir(root), "t", "own")
	task := func() *Context { return &Context{Bundle: c.Bundle, ID: c.ID} }
	for options, refused := range map[string]string{
		"lowerdir=" + fs("2") + ":" + fs("1") + ",upperdir=" + fs("3") + ",workdir=" + work("3"): "",
		"lowerdir=" + fs("2") + ":" + fs("1"):                                                    "",
		"lowerdir=" + fs("4") + ":" + fs("1"):                                                    "neither a committed layer",
		"lowerdir=" + fs("1") + ",upperdir=" + fs("4") + ",workdir=" + work("4"):                 "not this container's own active snapshot",
		"lowerdir=" + fs("1") + ",upperdir=" + fs("3") + ",workdir=" + work("4"):                 "not that snapshot's own",
		"lowerdir=" + fs("1") + ",upperdir=" + fs("2") + ",workdir=" + work("2"):                 "not this container's own active snapshot",
	} {
		why := task().overlaySnapshotsRefusal(options)
		switch {
		case refused == "" && why != "":
			t.Errorf("%s: refused: %s", options, why)
		case refused != "" && !strings.Contains(why, refused):
			t.Errorf("%s: %q, want it refused with %q", options, why, refused)
		}
	}
}

// TestOwnSnapshot: containerd keys a snapshot <namespace>/<n>/<key>.
func TestOwnSnapshot(t *testing.T) {
	for key, want := range map[string]bool{
		"k8s.io/7/abc": true, "k8s.io/7/abcd": false, "k8s.io/x/abc": false, "k8s.io/abc": false,
		"other/7/abc": false, "k8s.io/7/abc/d": false, "k8s.io.x/7/abc": false,
	} {
		if got := ownSnapshot(key, "k8s.io", "abc"); got != want {
			t.Errorf("ownSnapshot(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestSnapshotDBTooLarge: a snapshotter database past maxSnapshotDB is
// refused by its size, before any of it is copied into memory.
func TestSnapshotDBTooLarge(t *testing.T) {
	root := t.TempDir()
	f, err := os.Create(filepath.Join(root, "metadata.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(maxSnapshotDB + 1); err != nil { // sparse: no disk taken
		t.Fatal(err)
	}
	if _, err := readSnapshotRecords(root, map[string]bool{"1": true}); err == nil || !strings.Contains(err.Error(), "is larger than") {
		t.Fatalf("a database of %d bytes: %v, want it refused by its size", maxSnapshotDB+1, err)
	}
}

// TestSnapshotRecordsAsContainerdReadsThem: bulkhead reads a snapshotter's
// database with bbolt alone; what it reads of each snapshot (id, key,
// kind) is what containerd's own storage code reads, for every kind.
func TestSnapshotRecordsAsContainerdReadsThem(t *testing.T) {
	root, ms := snapshotter(t)
	ctx := context.Background()
	want := map[string]snapshotRecord{}
	kinds := map[snapshots.Kind]snapshotKind{snapshots.KindActive: kindActive, snapshots.KindView: kindView, snapshots.KindCommitted: kindCommitted}
	err := ms.WithTransaction(ctx, true, func(ctx context.Context) error {
		if _, err := storage.CreateSnapshot(ctx, snapshots.KindActive, "t/1/layer", ""); err != nil {
			return err
		}
		if _, err := storage.CommitActive(ctx, "t/1/layer", "t/2/sha256:layer", snapshots.Usage{}); err != nil {
			return err
		}
		for _, s := range []struct {
			kind snapshots.Kind
			key  string
		}{{snapshots.KindActive, "t/3/rootfs"}, {snapshots.KindView, "t/4/view"}} {
			if _, err := storage.CreateSnapshot(ctx, s.kind, s.key, "t/2/sha256:layer"); err != nil {
				return err
			}
		}
		ids, err := storage.IDMap(ctx)
		if err != nil {
			return err
		}
		for id, key := range ids {
			_, info, _, err := storage.GetInfo(ctx, key)
			if err != nil {
				return err
			}
			want[id] = snapshotRecord{Kind: kinds[info.Kind], Key: key}
			if want[id].Kind.String() != info.Kind.String() {
				t.Errorf("kind %v reads as %v", info.Kind, want[id].Kind)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 {
		t.Fatalf("containerd reads %d snapshots, want 3: %v", len(want), want)
	}
	got, err := readSnapshotRecords(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bulkhead reads %v, containerd %v", got, want)
	}
}
