package specs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// engineLayout is a directory an engine keeps its state in, told by the
// names it holds, wherever the operator put it: Docker's data-root,
// containerd's root and state, containers/storage, the kubelet's root and
// buildkit's are configurable, and on a data disk below bind_roots they
// would be plain host paths to the rules. Such a directory is judged as if
// it were at the engine's default place (home): the same refusals, and the
// same files of the engine's own per container.
type engineLayout struct {
	home  string
	names []string // every one of them is in the directory
}

var engineLayouts = []engineLayout{
	{"/var/lib/docker", []string{"containers", "image", "network", "volumes"}},
	{"/var/lib/docker", []string{"engine-id", "containers"}},
	{"/run/docker", []string{"runtime-runc"}},
	{"/run/containerd", []string{"io.containerd.runtime.v2.task"}},
	{"/run/containerd", []string{"io.containerd.runtime.v1.linux"}},
	{"/var/lib/containerd", []string{"io.containerd.metadata.v1.bolt"}},
	{"/var/lib/containerd", []string{"io.containerd.content.v1.content"}},
	{"/var/lib/containerd", []string{"io.containerd.snapshotter.v1.overlayfs"}},
	{"/var/lib/containerd", []string{"io.containerd.snapshotter.v1.native"}},
	{"/var/lib/containerd", []string{"io.containerd.grpc.v1.cri"}},
	// A snapshotter's root_path, moved on its own (overlayfs, native,
	// btrfs, blockfile, erofs keep their bolt database beside the
	// snapshots): every container's writable layer and every image's.
	{"/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs", []string{"metadata.db", "snapshots"}},
	{"/var/lib/containers/storage", []string{"storage.lock", "overlay-layers"}},
	{"/var/lib/containers/storage", []string{"storage.lock", "overlay-containers"}},
	{"/var/lib/containers/storage", []string{"storage.lock", "vfs-layers"}},
	{"/var/lib/containers/storage", []string{"storage.lock", "btrfs-layers"}},
	{"/var/lib/kubelet", []string{"pods", "plugins_registry"}},
	{"/var/lib/kubelet", []string{"pods", "pod-resources"}},
	{"/var/lib/kubelet", []string{"pods", "cpu_manager_state"}},
	{"/var/lib/buildkit", []string{"buildkitd.lock"}},
	{"/var/lib/buildkit", []string{"runc-overlayfs"}},
	{"/var/lib/buildkit", []string{"containerd-overlayfs"}},
	// bulkhead's own records (<root>/bulkhead, runtime/state): another
	// container's workspace layers, pins and handed spec, wherever a
	// --root lies.
	{"/run/bulkhead", []string{"@lock"}},
}

// layoutNames are the names any layout looks for, so that a walk keeps
// only those of a directory's entries.
var layoutNames = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, l := range engineLayouts {
		for _, n := range l.names {
			m[n] = true
		}
	}
	return m
})

// engineHomeOf returns the home of the engine whose layout a directory
// has, by has telling which names it holds; "" for none.
func engineHomeOf(has func(name string) bool) string {
	for _, l := range engineLayouts {
		all := true
		for _, n := range l.names {
			if !has(n) {
				all = false
				break
			}
		}
		if all {
			return l.home
		}
	}
	return ""
}

// layoutAt caches, per directory, the home its layout names (or ""): one
// create asks about the same few directories for every bind and place.
var layoutAt sync.Map

func engineHomeAt(dir string) string {
	if h, ok := layoutAt.Load(dir); ok {
		return h.(string)
	}
	// One lstat per name (about a microsecond each, less than reading
	// even a small directory), each name once.
	seen := map[string]bool{}
	h := engineHomeOf(func(name string) bool {
		has, ok := seen[name]
		if !ok {
			_, err := os.Lstat(filepath.Join(dir, name))
			has = err == nil
			seen[name] = has
		}
		return has
	})
	layoutAt.Store(dir, h)
	return h
}

// engineStatePath returns p as the rules judge it: when p is in (or is) a
// directory laid out as an engine's state, p moved to that engine's home,
// with the directory found (root); otherwise p itself and "". The nearest
// such directory counts: a volume of Docker's holding another engine's
// state is that engine's.
func engineStatePath(p string) (judged, root string) {
	for dir := p; dir != "/" && dir != "." && dir != ""; dir = filepath.Dir(dir) {
		home := engineHomeAt(dir)
		if home == "" {
			continue
		}
		if dir == home {
			return p, ""
		}
		return home + strings.TrimPrefix(p, dir), dir
	}
	return p, ""
}

// judgedPath is p as the refusals of host_mounts read it: /var/run folded
// onto /run, and an engine's state moved to its home (engineStatePath).
// Refusing by a layout anyone could make is always safe; p is refused on
// its own path as well (lexicalRefusals).
func judgedPath(p string) string {
	judged, _ := engineStatePath(canonicalRun(p))
	return judged
}

// grantPath is p as the engine's-own-file exception reads it: moved to the
// engine's home only when the directory laid out as its state is root's
// and no one else may write it, as engines make theirs. A layout that a
// user made (four empty directories in /dev/shm or /run/lock) is no
// engine's, and grants nothing outside bind_roots.
func grantPath(p string) string {
	p = canonicalRun(p)
	judged, root := engineStatePath(p)
	if root == "" {
		return judged
	}
	var st unix.Stat_t
	if unix.Lstat(root, &st) != nil || st.Uid != 0 || st.Mode&0o022 != 0 {
		return p
	}
	return judged
}

// lexicalRefusals refuses p on its own path and, where it lies in an
// engine's state elsewhere, at that engine's home: a layout must never
// lift a refusal of the path itself (/dev, a home, credentials).
func lexicalRefusals(p string) string {
	p = canonicalRun(p)
	if why := lexicalRefusal(p); why != "" {
		return why
	}
	if judged := judgedPath(p); judged != p {
		if why := lexicalRefusal(judged); why != "" {
			return asEngineState(p, why)
		}
	}
	return ""
}

// asEngineState prefixes a refusal of the path judged with where the
// state really is, when it was moved.
func asEngineState(p, why string) string {
	judged, root := engineStatePath(canonicalRun(p))
	if root == "" {
		return why
	}
	return p + " is in " + root + ", laid out as an engine's state (judged as " + judged + "): " + why
}

// criBundle matches the bundles CRI engines make, as judged at their
// homes: containerd's tasks in the k8s.io namespace its CRI plugin uses,
// and CRI-O's containers.
var criBundle = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(/run/containerd/io\.containerd\.runtime\.v[12]\.(task|linux)/k8s\.io/[^/]+|/run/containers/storage/overlay-containers/[^/]+/userdata)$`)
})

// CRIBundle tells whether a bundle, named by its real path, is one a CRI
// engine made: the pod annotations of its spec are the CRI's, not a
// caller's. Judged as a grant: the engine's state must be root's, and no
// one but root may change what the path names (rootOnlyPath), or a
// caller's bundle could be put at it between this judgment and the use.
// A task in containerd's k8s.io namespace is the CRI's only where its CRI
// plugin keeps the sandbox's or container's own directory beside it: any
// client of any containerd can name that namespace, but only the plugin
// makes <state>/io.containerd.grpc.v1.cri/{sandboxes,containers}/<id>.
func CRIBundle(bundle string) bool {
	if !rootOnlyPath(bundle) || insideEngineData(filepath.Dir(filepath.Dir(filepath.Dir(bundle)))) {
		return false
	}
	judged := grantPath(bundle)
	if !criBundle().MatchString(judged) {
		return false
	}
	if !strings.HasPrefix(judged, "/run/containerd/") {
		return true
	}
	state, id := filepath.Dir(filepath.Dir(filepath.Dir(bundle))), filepath.Base(bundle)
	for _, kind := range []string{"sandboxes", "containers"} {
		var st unix.Stat_t
		err := unix.Lstat(filepath.Join(state, "io.containerd.grpc.v1.cri", kind, id), &st)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Uid == 0 && st.Mode&0o022 == 0 {
			return true
		}
	}
	return false
}

// insideEngineData tells whether dir lies below a directory laid out as
// an engine's state, other than Docker's exec root (which holds the state
// of the containerd dockerd runs): image layers, snapshots, volumes and
// build caches. Their directories are root's as an engine unpacked them
// from an image, or as a container's root wrote them, so whoever can pull
// an image or run a container lays them out at will, a CRI task's layout
// and a work link to another engine's task included.
func insideEngineData(dir string) bool {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if home := engineHomeAt(d); home != "" && home != "/run/docker" {
			return true
		}
		if d == "/" || d == "." {
			return false
		}
	}
}

// rootOnlyPath tells whether p is an absolute, clean path of directories
// only (no link on the way), each one whose entries only root may rename
// or replace (placeWhy): then no one but root can make p name another
// directory.
func rootOnlyPath(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && placeWhy(p) == "" && RootsAbove(p) == ""
}

// EngineHomeAt is the home of the engine whose state dir is laid out as,
// "" for none; runtime/state's tests keep its registry known by it.
func EngineHomeAt(dir string) string { return engineHomeAt(dir) }
