package specs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// plainStorage are the filesystem types whose files are only files, kept on
// a disk, in memory or on a file server: what a bind of them shows is
// judged by path and by every mount of the same filesystem (mountedFrom).
var plainStorage = map[string]bool{
	"ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true, "zfs": true,
	"f2fs": true, "jfs": true, "reiserfs": true, "bcachefs": true, "tmpfs": true, "ramfs": true,
	"vfat": true, "exfat": true, "ntfs3": true, "nfs": true, "nfs4": true, "cifs": true,
	"smb3": true, "9p": true, "virtiofs": true, "squashfs": true, "erofs": true,
	"iso9660": true, "udf": true,
}

// storageRefusal refuses a bind source on a filesystem that is a view of
// something else, which no rule about paths can judge: a kernel interface
// (a proc mounted below a bind root is a filesystem of its own, at no
// place the rules know, and shows every host process and another
// sandbox's root), an overlay (its files are its layers', lowerdir=/etc),
// FUSE (every lookup is a request the job sends to a process on the host);
// and a mount with an id map (containerd's uidmap= option of a rootfs
// bind), whose files are shown with other owners than the host's.
// An overlay as the host's root filesystem is the host's own files, and
// one made of containerd's snapshots only (an image volume) is an image's
// files.
func storageRefusal(real string, holder *mountinfo.Info) string {
	if holder == nil {
		return real + ": the mount holding it is not known"
	}
	if hasOpt(strings.Split(holder.Options, ","), "idmapped") {
		return fmt.Sprintf("%s is on an id-mapped mount (%s at %s): its files show owners they do not have on the host, so the job would read what their owners keep from it; bind a directory of a mount without an id map", real, holder.Source, holder.Mountpoint)
	}
	t := holder.FSType
	if plainStorage[t] || (t == "overlay" && (holder.Mountpoint == "/" || imageLayersOnly(holder.VFSOptions))) {
		return ""
	}
	why := "a view of something else that no rule about paths can judge"
	switch {
	case t == "overlay":
		why = "an overlay: its files are its layers', which are not judged"
	case t == "fuse" || t == "fuseblk" || strings.HasPrefix(t, "fuse."):
		why = "FUSE: every access is a request to a process on the host"
	case t == "proc" || t == "sysfs" || strings.HasPrefix(t, "cgroup") || t == "devtmpfs" || t == "devpts" ||
		t == "debugfs" || t == "tracefs" || t == "securityfs" || t == "bpf" || t == "configfs" || t == "mqueue":
		why = "a kernel interface, not files"
	}
	return fmt.Sprintf("%s is on a filesystem of type %q (%s at %s): %s; only plain storage (ext4, xfs, btrfs, tmpfs, nfs, ...) is bound, bind a directory of one",
		real, t, holder.Source, holder.Mountpoint, why)
}

// snapshotDir is a directory of containerd's overlayfs or native
// snapshotter at its home: a snapshot's files (fs) or its overlay work
// directory (work).
var snapshotDir = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^/var/lib/containerd/io\.containerd\.snapshotter\.v1\.(overlayfs|native)/snapshots/[0-9]+/(fs|work)$`)
})

// snapshotLayer tells whether d, a path an overlay's options or a mount
// name, is a snapshot's directory of a containerd's: where containerd
// keeps it, or wherever its root or a snapshotter's root_path lies (judged
// as at its home, grantPath). The path is the caller's word, as given when
// the overlay was mounted: it must be clean, and no one but root may have
// been able to make or change any directory on it (no symlink, root's
// and no one else's to write, or a sticky directory's entry of root's),
// so that it names what it names.
func snapshotLayer(d string) bool {
	if filepath.Clean(d) != d || !filepath.IsAbs(d) || !snapshotDir().MatchString(grantPath(d)) {
		return false
	}
	// The layer itself may be anyone's (an id-mapped pod's); what leads
	// to it is root's.
	var st unix.Stat_t
	if unix.Lstat(d, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || RootsAbove(d) != "" {
		return false
	}
	// A snapshot's directory is a directory of the snapshotter's own
	// filesystem, never a mount of something else: a bind of the host's
	// / at snapshots/1/fs made an overlay of "image layers" the host's
	// root filesystem.
	snapshots := filepath.Dir(filepath.Dir(d))
	return oneMount(d, filepath.Dir(d), snapshots, filepath.Dir(snapshots)) && !viewOfOtherTrees(d)
}

// viewOfOtherTrees tells whether the filesystem at path shows files of
// other trees rather than its own: an overlay (a snapshotter's root or
// dockerd's store mounted as an overlay of the host's /, whose "layers"
// are then the host's directories) or FUSE. One that cannot be told
// counts as one.
func viewOfOtherTrees(path string) bool {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return true
	}
	return st.Type == unix.OVERLAYFS_SUPER_MAGIC || st.Type == unix.FUSE_SUPER_MAGIC
}

// oneMount tells whether every path is on one mount: no mount point lies
// at any of them below the first's mount, as each one's mount id says.
func oneMount(paths ...string) bool {
	var first uint64
	for i, p := range paths {
		var stx unix.Statx_t
		if unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx) != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
			return false
		}
		if i == 0 {
			first = stx.Mnt_id
		} else if stx.Mnt_id != first {
			return false
		}
	}
	return true
}

// overlayLayers are the directories an overlay's superblock options (as
// mountinfo shows them) name: its lower layers (lowerdir=, or one per
// lowerdir+= and datadir+= as the kernel's new mount API takes them), and
// its upper and work directories. ok is false where a layer is in a form
// this reading cannot be sure of: the kernel escapes a path's ',', '=',
// space and '\' as octal, and a '\' left after undoing that (an escaped
// ':' of lowerdir=) would split a path where the kernel does not.
func overlayLayers(options string) (lower []string, upper, work string, ok bool) {
	ok = true
	for _, o := range strings.Split(options, ",") {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "lowerdir", "lowerdir+", "datadir+", "upperdir", "workdir":
		default:
			continue
		}
		v = unescapeOctal(v)
		if strings.Contains(v, "\\") {
			ok = false
		}
		switch k {
		case "lowerdir":
			lower = append(lower, strings.Split(v, ":")...)
		case "lowerdir+", "datadir+":
			lower = append(lower, v)
		case "upperdir":
			upper = v
		case "workdir":
			work = v
		}
	}
	return lower, upper, work, ok
}

// unescapeOctal undoes the kernel's \ooo escapes of a mount option's value.
func unescapeOctal(v string) string {
	if !strings.Contains(v, "\\") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+3 < len(v) && isOctal(v[i+1]) && isOctal(v[i+2]) && isOctal(v[i+3]) {
			b.WriteByte((v[i+1]-'0')<<6 | (v[i+2]-'0')<<3 | (v[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// imageLayersOnly tells whether an overlay's superblock options (as
// mountinfo shows them) name only containerd's snapshots: image layers
// below, a snapshot of the engine's own above (an image volume).
func imageLayersOnly(options string) bool {
	dirs, upper, work, ok := overlayLayers(options)
	if !ok {
		return false
	}
	for _, d := range []string{upper, work} {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if !snapshotLayer(d) {
			return false
		}
	}
	return len(dirs) > 0
}
