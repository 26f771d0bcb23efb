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
	checkout := filepath.Join(dir, "repo")
	layout(t, checkout, "containers/a", "image/b", "network/c")
	p := testProfile()
	p.BindRoots = []string{dir}
	c := &Context{Profile: p, Bundle: "/bundle", ID: testID}
	for _, tt := range []struct {
		src, want string
	}{
		{filepath.Join(docker, "overlay2/abc/diff"), "laid out as an engine's state"},
		{filepath.Join(docker, "containers", other, "hostconfig.json"), "laid out as an engine's state"},
		{filepath.Join(docker, "network/files/local-kv.db"), "laid out as an engine's state"},
		{docker, "laid out as an engine's state"},
		{filepath.Join(dir, "data"), "holds " + docker + ", laid out as an engine's state"},
		{filepath.Join(ctd, "io.containerd.snapshotter.v1.overlayfs/snapshots/2/fs"), "laid out as an engine's state"},
		{filepath.Join(dir, "disk"), "holds " + ctd + ", laid out as an engine's state"},
		{filepath.Join(docker, "containers", testID, "resolv.conf"), ""},
		{filepath.Join(docker, "volumes/v/_data"), ""},
		{checkout, ""},
	} {
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
