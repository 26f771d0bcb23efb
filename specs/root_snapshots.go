package specs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// containerdTaskDirs are the directories in which containerd's shims make
// a task's bundle, <state>/<dir>/<namespace>/<id>.
var containerdTaskDirs = map[string]bool{"io.containerd.runtime.v2.task": true, "io.containerd.runtime.v1.linux": true}

// containerdTask is the containerd namespace of the task this container
// is, and the root directory of the containerd that made it, read from
// the bundle containerd makes for a task, <state>/<dir>/<namespace>/<id>,
// whose work link containerd points at <root>/<dir>/<namespace>/<id>. ok
// is false for a bundle that is no containerd task's, or one that anyone
// but root could have laid out.
func (c *Context) containerdTask() (namespace, root string, ok bool) {
	// create names the bundle by its real path (dockerd's state is below
	// /var/run, a link to /run), and only root may change what it names.
	bundle := c.Bundle
	if !rootOnlyPath(bundle) || insideEngineData(filepath.Dir(filepath.Dir(filepath.Dir(bundle)))) {
		return "", "", false
	}
	ns := filepath.Dir(bundle)
	dir := filepath.Base(filepath.Dir(ns))
	link := filepath.Join(bundle, "work")
	if c.ID == "" || filepath.Base(bundle) != c.ID || !containerdTaskDirs[dir] || RootsAbove(link) != "" {
		return "", "", false
	}
	var st unix.Stat_t
	if unix.Lstat(link, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK || st.Uid != 0 {
		return "", "", false
	}
	work, err := os.Readlink(link)
	if err != nil || !filepath.IsAbs(work) || filepath.Clean(work) != work || filepath.Base(work) != c.ID ||
		filepath.Base(filepath.Dir(work)) != filepath.Base(ns) || filepath.Base(filepath.Dir(filepath.Dir(work))) != dir {
		return "", "", false
	}
	return filepath.Base(ns), filepath.Dir(filepath.Dir(filepath.Dir(work))), true
}

// ownSnapshot tells whether a snapshotter's key names this container's
// own snapshot: containerd keys it <namespace>/<n>/<key>, and engines key
// a container's snapshot by the container's id (ctr, CRI, nerdctl).
func ownSnapshot(key, namespace, id string) bool {
	rest, ok := strings.CutPrefix(key, namespace+"/")
	if !ok {
		return false
	}
	n, k, ok := strings.Cut(rest, "/")
	if _, err := strconv.ParseUint(n, 10, 64); err != nil || !ok {
		return false
	}
	return k == id
}

// snapshotUseRefusal judges one of containerd's snapshot directories
// (snapshotLayer's) that this container's rootfs shows, by the
// snapshotter's own record of it: a lower layer, or a read-only bind, must
// be a committed snapshot of the container's namespace (an image's layer)
// or the container's own; what the rootfs writes to (the overlay's upper
// layer and work directory, a writable bind) only the container's own
// active snapshot, never an image's layer, which every container of that
// image shows. A snapshot of another container, stopped or not yet
// started, holds that container's files, and one of another namespace
// another tenant's, and one of another containerd on the host holds any
// of its tenants' files whatever its key says: the path and the mounts of
// the moment do not tell them from an image's layer. The snapshotter must
// be the one in the task's containerd's root (a snapshotter configured
// with a root_path of its own is refused).
func (c *Context) snapshotUseRefusal(d string, writable bool) string {
	ns, root, ok := c.containerdTask()
	if !ok {
		return "the rootfs shows " + d + ", a snapshot of containerd's, and this container is no containerd task (its bundle is not where a shim makes one, laid out by root): whose snapshot it is cannot be told"
	}
	if home := snapshotHome(d); filepath.Dir(home) != root {
		return "the rootfs shows " + d + ", a snapshot of " + home + ", which is not the snapshotter of the containerd at " + root + " that made this task: another containerd's snapshot, of whatever tenant"
	}
	rec, err := c.snapshotRecordOf(d)
	if err != nil {
		return "the rootfs shows " + d + ", a snapshot of containerd's whose record cannot be read (" + err.Error() + ")"
	}
	own := ownSnapshot(rec.Key, ns, c.ID)
	switch {
	case writable && !(own && rec.Kind == kindActive):
		return fmt.Sprintf("the rootfs writes to %s, snapshot %q (%s), which is not this container's own active snapshot", d, rec.Key, rec.Kind)
	case !writable && !own && !(rec.Kind == kindCommitted && strings.HasPrefix(rec.Key, ns+"/")):
		return fmt.Sprintf("the rootfs shows %s, snapshot %q (%s), which is neither a committed layer of namespace %q nor this container's own", d, rec.Key, rec.Kind, ns)
	}
	return ""
}

// overlaySnapshotsRefusal judges the layers of an overlay of containerd's
// snapshots at the rootfs (imageLayersOnly's) by the snapshotter's
// records; the work directory must be the upper layer's snapshot's.
func (c *Context) overlaySnapshotsRefusal(options string) string {
	lower, upper, work, _ := overlayLayers(options)
	dirs := lower
	if upper != "" {
		dirs = append(dirs[:len(dirs):len(dirs)], upper)
	}
	if err := c.loadSnapshotRecords(dirs...); err != nil {
		return "the rootfs is an overlay of containerd's snapshots whose records cannot be read (" + err.Error() + ")"
	}
	for _, d := range lower {
		if why := c.snapshotUseRefusal(d, false); why != "" {
			return why
		}
	}
	if upper == "" {
		return ""
	}
	if filepath.Base(upper) != "fs" || work != filepath.Join(filepath.Dir(upper), "work") {
		return "the overlay at the rootfs writes to " + upper + " with the work directory " + work + ", not that snapshot's own"
	}
	return c.snapshotUseRefusal(upper, true)
}

// writableMount tells whether a mount lets its files be changed through it.
func writableMount(m *mountinfo.Info) bool {
	return !hasOpt(strings.Split(m.Options, ","), "ro")
}

// TaskOverlayRefusal judges an overlay a containerd client hands bulkhead's
// shim as task id's rootfs in bundle, before the shim mounts it: the
// kernel acts on the directories while it mounts, as root and before any
// rule sees the mount (it empties and remakes the work directory's work/,
// makes index/, and marks the upper layer with xattrs), so a client that
// named another tenant's running container's work directory broke that
// container's copy-ups, and one naming a host directory had its work/
// emptied. Every layer must be a snapshot of the containerd that made the
// task, judged by its records as the root rule judges a mounted overlay
// (overlaySnapshotsRefusal); a work directory needs an upper layer.
func TaskOverlayRefusal(bundle, id string, options []string) string {
	joined := strings.Join(options, ",")
	lower, upper, work, ok := overlayLayers(joined)
	if !ok || strings.Contains(joined, "\\") {
		return "the rootfs overlay's options hold an escape (\\), whose layers the kernel reads otherwise than this judgement"
	}
	if upper == "" && work != "" {
		return "the rootfs overlay names a work directory, " + work + ", without an upper layer"
	}
	for _, d := range append(append([]string{}, lower...), upper, work) {
		if d != "" && !snapshotLayer(d) {
			return "the rootfs overlay names " + d + ", which is no snapshot directory of containerd's (its path root's alone, on the snapshotter's own filesystem)"
		}
	}
	c := &Context{Bundle: bundle, ID: id}
	return c.overlaySnapshotsRefusal(joined)
}
