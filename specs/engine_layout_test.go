package specs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layout makes the directories and files named below root.
func layout(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEngineStatePath: a directory laid out as an engine's state is
// judged at the engine's home, wherever it is; a checkout with some of
// the same names is not one.
func TestEngineStatePath(t *testing.T) {
	dir := t.TempDir()
	docker := filepath.Join(dir, "docker")
	layout(t, docker, "containers/"+testID+"/resolv.conf", "image/", "network/files/local-kv.db", "volumes/", "overlay2/abc/diff/")
	ctd := filepath.Join(dir, "ctd")
	layout(t, ctd, "io.containerd.metadata.v1.bolt/meta.db", "io.containerd.snapshotter.v1.overlayfs/snapshots/2/fs/")
	checkout := filepath.Join(dir, "repo")
	layout(t, checkout, "containers/a", "image/b", "src/main.go")
	for _, tt := range []struct{ p, judged, root string }{
		{filepath.Join(docker, "overlay2/abc/diff"), "/var/lib/docker/overlay2/abc/diff", docker},
		{filepath.Join(docker, "containers", testID, "resolv.conf"), "/var/lib/docker/containers/" + testID + "/resolv.conf", docker},
		{docker, "/var/lib/docker", docker},
		{filepath.Join(ctd, "io.containerd.snapshotter.v1.overlayfs/snapshots/2/fs"), "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/2/fs", ctd},
		{filepath.Join(checkout, "containers/a"), filepath.Join(checkout, "containers/a"), ""},
		{dir, dir, ""},
	} {
		judged, root := engineStatePath(tt.p)
		if judged != tt.judged || root != tt.root {
			t.Errorf("engineStatePath(%s) = %s, %s; want %s, %s", tt.p, judged, root, tt.judged, tt.root)
		}
	}
}

// TestBindSourceInEngineState: below bind_roots, another container's files
// in a data root laid out as Docker's or containerd's are refused, as are
// directories holding one; this container's own files there are bound,
// wherever the data root is; a checkout that merely has some of the names
// is bound.
func TestBindSourceInEngineState(t *testing.T) {
	dir := t.TempDir()
	docker := filepath.Join(dir, "data", "docker")
	other := strings.Repeat("0", 64)
	layout(t, docker, "containers/"+testID+"/resolv.conf", "containers/"+other+"/hostconfig.json",
		"image/", "network/files/local-kv.db", "volumes/v/_data/f", "overlay2/abc/diff/root/.npmrc")
	ctd := filepath.Join(dir, "disk", "containerd")
	layout(t, ctd, "io.containerd.content.v1.content/", "io.containerd.snapshotter.v1.overlayfs/snapshots/2/fs/root/.npmrc")
	// The overlayfs snapshotter's root_path, moved on its own.
	snap := filepath.Join(dir, "fast", "snap")
	layout(t, snap, "metadata.db", "snapshots/7/fs/root/.npmrc", "snapshots/7/work/")
	checkout := filepath.Join(dir, "repo")
	layout(t, checkout, "containers/a", "image/b", "network/c")
	p := testProfile()
	p.BindRoots = []string{dir}
	c := &Context{Profile: p, Bundle: "/bundle", ID: testID}
	wantBindRefusals(t, c, []bindCase{
		{filepath.Join(docker, "overlay2/abc/diff"), "laid out as an engine's state"},
		{filepath.Join(docker, "containers", other, "hostconfig.json"), "laid out as an engine's state"},
		{filepath.Join(docker, "network/files/local-kv.db"), "laid out as an engine's state"},
		{docker, "laid out as an engine's state"},
		{filepath.Join(dir, "data"), "holds " + docker + ", laid out as an engine's state"},
		{filepath.Join(ctd, "io.containerd.snapshotter.v1.overlayfs/snapshots/2/fs"), "laid out as an engine's state"},
		{filepath.Join(dir, "disk"), "holds " + ctd + ", laid out as an engine's state"},
		{filepath.Join(snap, "snapshots/7/fs"), "laid out as an engine's state"},
		{filepath.Join(snap, "snapshots"), "laid out as an engine's state"},
		{filepath.Join(dir, "fast"), "holds " + snap + ", laid out as an engine's state"},
		{checkout, ""},
	})
}

// bindCase is a bind source and a phrase of its refusal ("" to be bound).
type bindCase struct{ src, want string }

// wantBindRefusals judges each source as host_mounts does.
func wantBindRefusals(t *testing.T, c *Context, cases []bindCase) {
	t.Helper()
	for _, tt := range cases {
		why := hostPathRefusal(tt.src)
		if why == "" {
			why = bindSourceRefusal(c, nil, tt.src, -1, c.findChannel)
		}
		switch {
		case tt.want == "" && why != "":
			t.Errorf("%s refused: %s", tt.src, why)
		case tt.want != "" && !strings.Contains(why, tt.want):
			t.Errorf("%s: %q, want it refused (%q)", tt.src, why, tt.want)
		}
	}
}

// TestEngineLayoutGrantsOnlyAsRoots: this container's own files in a data
// root laid out as Docker's are bound wherever the root is, outside
// bind_roots too, when the root is root's and no one else's to write, as
// engines make theirs. A layout a user made (empty directories in a
// world-writable place) grants nothing, and lifts no refusal of the path
// itself (/dev).
func TestEngineLayoutGrantsOnlyAsRoots(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: data roots are root's, and the fake one is given to a user")
	}
	dir := t.TempDir()
	names := []string{"containers/" + testID + "/resolv.conf", "containers/" + testID + "/mounts/m/f",
		"image/", "network/", "volumes/v/_data/f", "containerd/daemon/"}
	real := filepath.Join(dir, "real")
	layout(t, real, names...)
	fake := filepath.Join(dir, "fake")
	layout(t, fake, names...)
	if err := os.Chown(fake, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	shm, err := os.MkdirTemp("/dev/shm", "bh-layout-")
	if err != nil {
		t.Skip("no /dev/shm to make a layout in:", err)
	}
	defer os.RemoveAll(shm)
	layout(t, shm, names...)
	p := testProfile()
	p.BindRoots = []string{"/srv/nothing-here"}
	c := taskBundle(t, filepath.Join(real, "containerd", "daemon"), "moby", testID)
	c.Profile = p
	wantBindRefusals(t, c, []bindCase{
		{filepath.Join(real, "containers", testID, "resolv.conf"), ""},
		{filepath.Join(real, "containers", testID, "mounts/m"), ""},
		{filepath.Join(real, "volumes/v/_data"), ""},
		{filepath.Join(fake, "containers", testID, "resolv.conf"), "not below any of the profile's bind_roots"},
		{filepath.Join(fake, "volumes/v/_data"), "not below any of the profile's bind_roots"},
		{filepath.Join(shm, "volumes/v/_data"), "host /dev gives access"},
		{filepath.Join(shm, "containers", testID, "mounts/m"), "host /dev gives access"},
	})
}

// TestCRIBundle: a bundle in containerd's k8s.io namespace is a CRI
// engine's where the CRI plugin keeps the sandbox's or container's
// directory beside it, wherever containerd's state lies; a task a client
// made in that namespace of a containerd (the plugin knows nothing of
// it), Docker's (moby), a directory laid out by a user, or any other
// place is not.
func TestCRIBundle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: engines' state is root's, and the fake one is given to a user")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	layout(t, state, "io.containerd.runtime.v2.task/k8s.io/sb1/", "io.containerd.runtime.v2.task/k8s.io/c2/",
		"io.containerd.runtime.v2.task/k8s.io/forged/", "io.containerd.runtime.v2.task/moby/c1/",
		"io.containerd.grpc.v1.cri/sandboxes/sb1/", "io.containerd.grpc.v1.cri/containers/c2/")
	fake := filepath.Join(dir, "fake")
	layout(t, fake, "io.containerd.runtime.v2.task/k8s.io/sb1/")
	if err := os.Chown(fake, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	// The engine's own layout, where someone else may change what the path
	// names: below a directory a user may write, or through a link.
	open := filepath.Join(dir, "open")
	layout(t, open, "state/io.containerd.runtime.v2.task/k8s.io/sb1/", "state/io.containerd.grpc.v1.cri/sandboxes/sb1/")
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(dir, "sticky")
	layout(t, sticky, "state/io.containerd.runtime.v2.task/k8s.io/sb1/", "state/io.containerd.grpc.v1.cri/sandboxes/sb1/")
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	// An image's layer as a snapshotter unpacked it: root's throughout,
	// laid out at will by whoever made the image.
	layer := filepath.Join(dir, "snapshotter")
	layout(t, layer, "metadata.db", "snapshots/1/fs/x/io.containerd.runtime.v2.task/k8s.io/sb1/",
		"snapshots/1/fs/x/io.containerd.grpc.v1.cri/sandboxes/sb1/")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(state, "io.containerd.runtime.v2.task/k8s.io/sb1"), link); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		filepath.Join(open, "state/io.containerd.runtime.v2.task/k8s.io/sb1"):   false,
		filepath.Join(sticky, "state/io.containerd.runtime.v2.task/k8s.io/sb1"): true,
		link: false,
		filepath.Join(layer, "snapshots/1/fs/x/io.containerd.runtime.v2.task/k8s.io/sb1"):    false,
		"/proc/self/root" + filepath.Join(state, "io.containerd.runtime.v2.task/k8s.io/sb1"): false,
		filepath.Join(state, "io.containerd.runtime.v2.task/k8s.io/sb1"):                     true,
		filepath.Join(state, "io.containerd.runtime.v2.task/k8s.io/c2"):                      true,
		filepath.Join(state, "io.containerd.runtime.v2.task/k8s.io/forged"):                  false,
		filepath.Join(state, "io.containerd.runtime.v2.task/moby/c1"):                        false,
		filepath.Join(fake, "io.containerd.runtime.v2.task/k8s.io/sb1"):                      false,
		filepath.Join(dir, "bundle"):                                                         false,
	} {
		if got := CRIBundle(p); got != want {
			t.Errorf("CRIBundle(%s) = %v, want %v", p, got, want)
		}
	}
}
