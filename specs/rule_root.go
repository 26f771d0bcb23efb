package specs

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/moby/sys/mountinfo"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// dockerLayer is where dockerd's overlay2 driver mounts a container's
// root: <data-root>/overlay2/<layer>/merged.
var dockerLayer = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(/.+)/overlay2/([0-9a-f]{64})/merged$`) })

// ruleRoot judges root.path like a bind at /: the container sees every
// file below it. It must be a directory inside the bundle (what
// containerd, CRI and `runc spec` lay out), or the overlay layer dockerd
// mounted for this very container; never the host's / or a tree such as
// /proc, and never another container's root.
func ruleRoot(c *Context, s *rspec.Spec) []Decision {
	const field = "root.path"
	if s.Root == nil || s.Root.Path == "" {
		return []Decision{{Rule: "root", Field: field, Action: Refused, Before: "none", Layer: LayerNone,
			Why: "a container needs a root filesystem; set root.path to the bundle's rootfs"}}
	}
	why := rootRefusal(c, s.Annotations, rootfsPath(c, s.Root))
	if why != "" {
		advice := "; put the container's rootfs inside its bundle"
		switch {
		case strings.Contains(why, " may be written by others than its owner "), strings.Contains(why, " and others may not enter it "):
			advice = "" // says what to change itself
		case strings.Contains(why, " is a mount of ") || strings.Contains(why, " which is also mounted at "):
			// Inside the bundle already: what is mounted there is judged
			// as a bind of where it comes from.
			advice = "; a rootfs mounted from another place is judged as a bind of that place: mount it from below bind_roots, or make it a directory of the bundle's own"
		}
		return []Decision{{Rule: "root", Field: field, Action: Refused, Before: s.Root.Path, Layer: LayerNone, Why: why + advice}}
	}
	return []Decision{{Rule: "root", Field: field, Action: Kept, Before: s.Root.Path, After: s.Root.Path,
		Layer: LayerNone, Why: "the container's own root filesystem"}}
}

// JudgeRoot says why a root filesystem, named by the real path of what the
// runtime opened, must not be the container's, or "": the root rule's
// judgement, applied again to what was really opened. bundleReal is the
// real path of the opened bundle directory whose config.json was judged,
// read from its descriptor at the same moment. Nothing is resolved again
// here: re-resolving the caller's bundle path would let the caller move
// the yardstick (the bundle a symlink to / by then) along with the root.
// hostFiles says the rootfs's files are the host's, not the container's
// own (rootMountRefusal), so nothing may be made in them.
func JudgeRoot(c *Context, annotations map[string]string, real, bundleReal string, fd int) (why string, hostFiles bool) {
	if real == "/" {
		return "the host's / would be the container's root", false
	}
	for _, t := range hostTrees {
		if under(real, t) {
			return "host " + t + " would be the container's root", false
		}
	}
	if bundleReal != "" && bundleReal != "/" && real != bundleReal && under(real, bundleReal) {
		return c.rootMountRefusal(annotations, real, bundleReal, fd)
	}
	if dockerOwnLayer(c, real) {
		return c.dockerLayerRefusal(real, fd), false
	}
	return real + " lies outside the bundle (" + bundleReal + ") and is not the layer the engine made for this container", false
}

func rootRefusal(c *Context, annotations map[string]string, root string) string {
	if root == "" {
		return "a relative root.path cannot be placed without the bundle"
	}
	real, err := c.resolve(root)
	if err != nil {
		return "the rootfs cannot be resolved on the host (" + err.Error() + ")"
	}
	if real == "/" {
		return "the host's / would be the container's root"
	}
	for _, t := range hostTrees {
		if under(real, t) {
			return "host " + t + " would be the container's root"
		}
	}
	if bundle, err := c.resolve(c.Bundle); err == nil && c.Bundle != "" && real != bundle && under(real, bundle) {
		why, _ := c.rootMountRefusal(annotations, real, bundle, -1)
		return why
	}
	if dockerOwnLayer(c, real) {
		return c.dockerLayerRefusal(real, -1)
	}
	return real + " lies outside the bundle and is not the layer the engine made for this container"
}

// dockerOwnLayer tells whether root is the overlay2 layer dockerd mounted
// for container id: dockerd records each container's layer id in
// <data-root>/image/overlay2/layerdb/mounts/<id>/mount-id.
func dockerOwnLayer(c *Context, root string) bool {
	m := dockerLayer().FindStringSubmatch(root)
	if m == nil || c.ID == "" || strings.ContainsAny(c.ID, "/.") {
		return false
	}
	mountID, err := c.dockerMountID(m[1], c.ID)
	return err == nil && mountID == m[2]
}

// dockerLayerRefusal judges what is mounted at dockerd's layer for this
// container (real, <data-root>/overlay2/<id>/merged, opened at fd, -1
// when not), which the path and dockerd's record alone do not tell: an
// overlay whose every layer is a directory of that overlay2 store, on the
// store's own mount (dockerd names lower layers by the store's l/ links,
// and mounts from the store with relative paths when its options would
// not fit a page), its upper and work directories the layer's own; and
// no layer another mounted overlay writes to (a running container's); and
// its upper layer holding no socket or FIFO (upperChannelRefusal). An
// overlay of the host's /etc mounted there passed on its path.
func (c *Context) dockerLayerRefusal(real string, fd int) string {
	m := dockerLayer().FindStringSubmatch(real)
	if m == nil {
		return real + " is not dockerd's layer"
	}
	store, id := filepath.Join(m[1], "overlay2"), m[2]
	src, err := c.mountedFrom(real, fd)
	if err != nil {
		return "what is mounted at the rootfs cannot be told (" + err.Error() + ")"
	}
	if held, err := c.mountedFrom(store, -1); err != nil || held.Holder == nil || !plainStorage[held.Holder.FSType] {
		return "dockerd's store " + store + " is not on plain storage (an overlay or FUSE shows other trees), as dockerd's own is"
	}
	h := src.Holder
	if h != nil && h.Mountpoint != real {
		// Nothing is mounted there (a spec judged once dockerd unmounted
		// its layer, as check of a captured one): the directory must be
		// one of the store's own, on its mount, judged as a plain rootfs.
		// An overlay mounted at <id> above it showed the host's /etc.
		if _, err := c.dirInfo(real); errors.Is(err, unix.ENOENT) {
			return "" // gone with the layer: nothing for the job, and the pin judges what is there then
		}
		if !c.oneMount(real, store) {
			return real + " is neither dockerd's layer mounted there nor a directory on the mount of dockerd's store " + store
		}
		return c.treeChannelRefusal(real, fd)
	}
	if h == nil || h.FSType != "overlay" {
		return real + " is not an overlay, as dockerd's overlay2 layer is"
	}
	lower, upper, work, ok := overlayLayers(h.VFSOptions)
	if !ok {
		return "the layers of the overlay at the rootfs cannot be read from its options (" + h.VFSOptions + ")"
	}
	// The kernel resolves a relative name from the store component by
	// component: one with ".." (x/../etc through a link x) is not the
	// name cleaned, so none is taken.
	in := func(d string) (string, bool) {
		if d == "" || filepath.Clean(d) != d || slices.Contains(strings.Split(d, "/"), "..") {
			return "", false
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(store, d)
		}
		return d, true
	}
	written := writtenLayers(src)
	for _, d := range lower {
		p, ok := in(d)
		r, err := filepath.EvalSymlinks(p)
		if !ok || err != nil || !under(r, store) || r == store || !oneMount(r, store) {
			return "the overlay at the rootfs has the layer " + d + ", which is not a directory of dockerd's store " + store
		}
		if m, ok := written.at(r); ok {
			return "the rootfs's layer " + d + " is in the writable layer of the overlay at " + m + ", another container's"
		}
		// A container's layer is <id>/diff beside its mounted <id>/merged;
		// dockerd may have named it relative to the store, which the
		// written layers' paths do not resolve.
		rel, _ := filepath.Rel(store, r)
		top, _, _ := strings.Cut(rel, "/")
		if merged := filepath.Join(store, top, "merged"); top != id && mountedAt(src.Mounts, merged) {
			return "the rootfs's layer " + d + " is in the writable layer of the overlay at " + merged + ", another container's"
		}
	}
	if upper == "" {
		return "" // read-only: nothing is made through it
	}
	u, uok := in(upper)
	w, wok := in(work)
	if !uok || !wok || u != filepath.Join(store, id, "diff") || w != filepath.Join(store, id, "work") || !oneMount(u, w, store) {
		return "the overlay at the rootfs writes to " + upper + ", not to its layer's own " + filepath.Join(store, id, "diff") + " on the store's mount"
	}
	if m, ok := written.at(u); ok {
		return "the rootfs's upper layer " + upper + " is in the writable layer of the overlay at " + m + ", another container's"
	}
	return c.upperChannelRefusal(real, u)
}

// ownFilesystemRefusal refuses a rootfs on a filesystem mounted in the
// bundle (at the rootfs or above it) whose files at the rootfs no mount
// outside the bundle shows whole: a device's, an image file's through a
// loop device (containerd attaches one for a client's "loop" mount
// option) or a server's, and what it holds (another tenant's stopped
// container on a blockfile snapshot, an unmounted disk, an export the host
// may read) no rule about the host's paths can judge. A mount outside
// that shows only a directory below them (the host mounts the disk's ci/
// at a bind root, and the rootfs is the whole disk) is judged for that
// directory alone, and the rest is shown nowhere. Its mounts inside the
// bundle do not count: a client's next rootfs mount, a bind of the rootfs
// onto itself, shows the same files a second time there, and neither do
// its copies that propagation made outside (propagatedGroups). A tmpfs is
// the caller's own fresh files, and an overlay is judged by its layers.
func ownFilesystemRefusal(real, bundle string, src MountSource) string {
	h := src.Holder
	if !under(h.Mountpoint, bundle) || h.FSType == "tmpfs" || h.FSType == "overlay" {
		return ""
	}
	var part *Place
	echo := "" // a place that shows what the bundle's mounts show
	propagated := propagatedGroups(src.Mounts, bundle)
	for i, pl := range src.Places {
		switch {
		case under(pl.Path, bundle):
		case receivesFrom(pl.Mount, propagated):
			echo = pl.Path
		case pl.Inner == "":
			return "" // judged where the host shows it (rootMountRefusal)
		default:
			part = &src.Places[i]
		}
	}
	if part != nil {
		return fmt.Sprintf("%s is a %s filesystem (%s) of which the host shows only a part, %s, at %s: the rest of it is files no mount outside the bundle shows (another directory of the disk or export), which no rule about the host's paths can judge; mount only the part the host shows", real, h.FSType, h.Source, part.Inner, part.Path)
	}
	if echo != "" {
		return fmt.Sprintf("%s is a %s filesystem (%s) that is mounted there alone: %s shows it too, but receives what is mounted in the bundle (mount propagation from a shared mount), so it shows the caller's mounts, not the host's; lay the rootfs out in the bundle, or bind it from a private mount", real, h.FSType, h.Source, echo)
	}
	return fmt.Sprintf("%s is a %s filesystem (%s) that is mounted there alone: a device's, an image file's through a loop device, or a server's files, which no rule about the host's paths can judge; lay the rootfs out as a directory on the host, or bind one", real, h.FSType, h.Source)
}

// propagatedGroups are the peer groups whose mounts show what a caller
// mounted: those of the mounts in the bundle or in an engine's state (a
// client's rootfs mounts, this task's or another running one's) and, from
// them on, of every mount that is a slave of one of these groups. A mount
// made in one of them appears at every peer and slave, whichever came
// first: a client's rootfs mounts bound a directory of a shared bind root
// at the rootfs and mounted a disk on top, and the kernel mounted the disk
// at the bind root too, which then "showed" it; stacked twice, or through
// a slave of a slave, the copies were in other groups than the rootfs's.
func propagatedGroups(mounts []*mountinfo.Info, bundle string) map[string]bool {
	groups := map[string]bool{}
	for _, m := range mounts {
		if g := peerGroup(m.Optional, "shared:"); g != "" && (under(m.Mountpoint, bundle) || inStateDir(m.Mountpoint)) {
			groups[g] = true
		}
	}
	for grew := true; grew; {
		grew = false
		for _, m := range mounts {
			if g := peerGroup(m.Optional, "shared:"); g != "" && !groups[g] && receivesFrom(m, groups) {
				groups[g], grew = true, true
			}
		}
	}
	return groups
}

// receivesFrom tells whether m is a peer or a slave of one of groups.
func receivesFrom(m *mountinfo.Info, groups map[string]bool) bool {
	shared, master := peerGroup(m.Optional, "shared:"), peerGroup(m.Optional, "master:")
	return (shared != "" && groups[shared]) || (master != "" && groups[master])
}

// peerGroup is the number of mountinfo's optional field with prefix
// (shared: or master:), "" for none.
func peerGroup(optional, prefix string) string {
	for _, f := range strings.Fields(optional) {
		if n, ok := strings.CutPrefix(f, prefix); ok {
			return n
		}
	}
	return ""
}

// mountedAt tells whether any mount of the table is at path.
func mountedAt(mounts []*mountinfo.Info, path string) bool {
	for _, m := range mounts {
		if m.Mountpoint == path {
			return true
		}
	}
	return false
}

// rootMountRefusal judges the files really at a rootfs inside the bundle
// (opened at fd, -1 when not), as a bind source's are: an engine mounts
// the image there before it calls the runtime, and a containerd client
// chooses those mounts (a task's rootfs), so a bind of the host's / or an
// overlay over another container's layer would pass a judgement of the
// path alone. The files must be plain storage or an overlay of
// containerd's snapshots, none of its layers one another overlay writes
// to (a running container's), and every other place they are at the
// bundle's own, such a snapshot, or one a bind could name.
//
// hostFiles is set for a rootfs mounted in the bundle (at the rootfs or
// above it) from a directory the host shows that is no snapshot of
// containerd's (a bind of a directory below a bind root): its files are
// the host's, not the container's own. The backend, as root, makes the
// mount points the spec names in a rootfs before it is read-only, and
// would make them in the host's directory, which binds show read-only.
func (c *Context) rootMountRefusal(annotations map[string]string, real, bundle string, fd int) (why string, hostFiles bool) {
	if why := c.sharedDirRefusal(real, bundle); why != "" {
		return why, false
	}
	src, err := c.mountedFrom(real, fd)
	if err != nil {
		return "what is mounted at the rootfs cannot be told (" + err.Error() + ")", false
	}
	if why := storageRefusal(real, src.Holder); why != "" {
		return why, false
	}
	if why := ownFilesystemRefusal(real, bundle, src); why != "" {
		return why, false
	}
	written := writtenLayers(src)
	if h := src.Holder; h.FSType == "overlay" {
		lower, upper, work, ok := overlayLayers(h.VFSOptions)
		if !ok {
			return "the layers of the overlay at the rootfs cannot be read from its options (" + h.VFSOptions + ")", false
		}
		for _, d := range append(lower, upper, work) {
			if m, ok := written.at(d); ok {
				return "the rootfs's layer " + d + " is the writable layer of the overlay at " + m + ", another container's", false
			}
		}
		if imageLayersOnly(h.VFSOptions) {
			if why := c.overlaySnapshotsRefusal(h.VFSOptions); why != "" {
				return why, false
			}
		}
	}
	shown := false // a place outside the bundle, the host's
	for _, pl := range src.Places {
		if under(pl.Path, bundle) {
			continue
		}
		if pl.Inner == "" && snapshotLayer(pl.Path) {
			if m, ok := written.at(pl.Path); ok {
				return real + " is a mount of " + pl.Path + ", the writable layer of the overlay at " + m + ", another container's", false
			}
			if why := c.snapshotUseRefusal(pl.Path, writableMount(src.Holder)); why != "" {
				return why, false
			}
			continue
		}
		if why := c.placeRefusal(annotations, pl); why != "" {
			if pl.Inner != "" {
				return real + " holds " + pl.Inner + ", which is also mounted at " + pl.Path + ", which " + why, false
			}
			return real + " is a mount of " + pl.Path + ", which " + why, false
		}
		shown = true
	}
	return c.rootChannelRefusal(src.Holder, real, fd), shown && under(src.Holder.Mountpoint, bundle)
}

// rootChannelRefusal refuses a rootfs (real, opened at fd, -1 when not,
// on the mount holder) that holds a socket or a FIFO, as a bind source's
// tree may not: a host process listening on a socket in it, or reading a
// FIFO, is reached by a job without a network (a read-only root stops
// neither). A rootfs of plain storage is walked whole
// (treeChannelRefusal); of an overlay, only the upper layer
// (upperChannelRefusal).
func (c *Context) rootChannelRefusal(h *mountinfo.Info, real string, fd int) string {
	if h == nil || h.FSType != "overlay" {
		return c.treeChannelRefusal(real, fd)
	}
	_, upper, _, ok := overlayLayers(h.VFSOptions)
	switch {
	case !ok:
		return "the layers of the overlay at the rootfs cannot be read from its options (" + h.VFSOptions + ")"
	case upper == "":
		return "" // read-only: nothing is made through it
	case !filepath.IsAbs(upper):
		return "the overlay at the rootfs names its upper layer " + upper + " relative to a directory the host does not show; its files cannot be judged"
	}
	return c.upperChannelRefusal(real, upper)
}

// rootChannelAdvice is what a rootfs refused for a socket or FIFO says to do.
const rootChannelAdvice = "lay the rootfs out"

// treeChannelRefusal walks the whole rootfs at real (opened at fd, -1
// when not) for a socket or FIFO.
func (c *Context) treeChannelRefusal(real string, fd int) string {
	find := c.findChannel
	if fd >= 0 {
		find = func(string) (string, error) { return c.findChannelAt(fd, real) }
	}
	return channelRefusal(real, rootChannelAdvice, find)
}

// upperChannelRefusal walks the upper layer (an absolute host path) of
// the overlay at the rootfs real, where whatever a host process made
// through the overlay lies, and which is empty in a fresh snapshot: a
// socket bound in a layer directly is another inode than the overlay's,
// to which a connect through the overlay is refused (measured), and the
// image below, tens of thousands of files, is walked at no create.
func (c *Context) upperChannelRefusal(real, upper string) string {
	if st, err := c.dirInfo(upper); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "the overlay at the rootfs names its upper layer " + upper + ", which is no directory on the host now; its files cannot be judged"
	}
	return channelRefusal(real, rootChannelAdvice, func(string) (string, error) {
		ch, err := c.findChannel(upper)
		if rest, ok := strings.CutPrefix(ch, upper); ok && ch != "" {
			ch = real + rest // named where the job sees it
		}
		return ch, err
	})
}

// sharedDirRefusal refuses a rootfs below a directory others may write
// to, from the bundle down to the rootfs's parent: a rootfs inside the
// bundle is taken for files the caller laid out for this container, and in
// a directory such as /tmp (a bundle of --bundle /tmp), or a group's
// shared one, any directory there would pass, another user's or a host
// service's with its socket. A group's write counts only where the group
// is not the owner's own (a umask of 002 on hosts that give each user a
// group of its gid). No directory down to the rootfs, the rootfs itself
// included, may be one a user other than root keeps from others (alice's
// 0700 directory in a shared one, or root's that an ACL opens to her):
// the job would read what she keeps from everyone, and the backend writes
// its mount points into it as root. The rootfs's own write bits are the
// image's, and any.
func (c *Context) sharedDirRefusal(real, bundle string) string {
	for d := real; ; d = filepath.Dir(d) {
		st, err := c.dirInfo(d)
		switch {
		case errors.Is(err, unix.ENOENT):
			// Nothing there yet to keep from anyone or to write to: the
			// pin judges what is there then.
			st = unix.Stat_t{Mode: 0o755}
		case err != nil:
			return "the directories above the rootfs cannot be checked (" + err.Error() + ")"
		}
		perm, uid, gid := st.Mode&0o7777, st.Uid, st.Gid
		if out := whoIsKeptOut(d, &st); out != "" && (uid != 0 || openedTo(d, &st) != "") {
			return fmt.Sprintf("%s, which is or holds the rootfs, is uid %d's%s and %s (mode %04o): the job would read what its owner keeps from other users; lay the rootfs out in a directory of your own", d, uid, openedTo(d, &st), out, perm)
		}
		// A directory with an ACL was refused above: its named entries,
		// whose write shows only in the group's bits (the mask), are users.
		if d != real && (perm&0o002 != 0 || (perm&0o020 != 0 && gid != uid)) {
			return fmt.Sprintf("%s, which holds the rootfs, may be written by others than its owner (mode %04o, group %d): what others put there is not the caller's; make the bundle a directory of your own that others may not write, and put the rootfs in it",
				d, perm, gid)
		}
		if d == bundle || d == "/" || !under(d, bundle) {
			return ""
		}
	}
}

// writtenLayers are the directories that mounted overlays other than the
// rootfs's own (and its pins) write to, each with where that overlay is
// mounted: running containers' writable layers, whose files are theirs,
// and where a second writer is one overlayfs does not stop. They are
// known by path and by the directory itself: a bind of engine state
// elsewhere names the same layer by another path.
func writtenLayers(src MountSource) writtenDirs {
	h := src.Holder
	written := writtenDirs{byPath: map[string]string{}, byDir: map[[2]uint64]string{}}
	for _, m := range src.Mounts {
		if (m.Major == h.Major && m.Minor == h.Minor) || m.FSType != "overlay" {
			continue // the same overlay, mounted again (a pin of it)
		}
		// A layer this reading is unsure of is still named as given.
		_, upper, work, _ := overlayLayers(m.VFSOptions)
		for _, d := range []string{upper, work} {
			if d == "" {
				continue
			}
			written.byPath[filepath.Clean(d)] = m.Mountpoint
			if id, ok := dirID(d); ok {
				written.byDir[id] = m.Mountpoint
			}
		}
	}
	return written
}

// writtenDirs are writtenLayers' directories.
type writtenDirs struct {
	byPath map[string]string
	byDir  map[[2]uint64]string
}

// at says where the overlay that writes to d, or to a directory above
// it, by its path or as the same directory, is mounted: a subdirectory of
// a running container's writable layer shows that container's files as
// the layer does.
func (w writtenDirs) at(d string) (string, bool) {
	for p := filepath.Clean(d); ; p = filepath.Dir(p) {
		if m, ok := w.byPath[p]; ok {
			return m, true
		}
		if id, ok := dirID(p); ok {
			if m, ok := w.byDir[id]; ok {
				return m, true
			}
		}
		if p == "/" || p == "." {
			return "", false
		}
	}
}

// dirID is the device and inode of the directory at p.
func dirID(p string) ([2]uint64, bool) {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return [2]uint64{}, false
	}
	return [2]uint64{st.Dev, st.Ino}, true
}
