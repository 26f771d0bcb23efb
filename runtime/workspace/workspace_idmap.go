package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/specs"
)

// A checkout belongs to whoever made it (uid 1000, root in CI), not to the
// sandbox user, so through a plain overlay the job could write nowhere.
// The overlay's lower layer is therefore an id-mapped mount of the source
// in which the source's owner and the sandbox user swap places: what the
// owner of the source's root directory owns shows as the sandbox user's
// (and the other way round), every other id shows as itself. The sandbox
// then edits, creates, renames and deletes wherever the owner could,
// without a chown or a copy of the source, which stays the read-only lower
// layer. Files of other owners (a root-owned file in a user's checkout)
// keep their owner: the sandbox reads them as "other" and, since their
// directory is its own, may replace, rename or delete them, not write them
// in place.
//
// overlayfs refuses an id-mapped mount of the overlay itself (EINVAL from
// mount_setattr on Linux 6.18), but takes id-mapped lower layers (Linux
// 5.19+). The upper layer stays a plain tmpfs: what the sandbox creates
// there is owned by the sandbox user, and gVisor's gofer, which runs as
// host root and creates files through the merged directory, never needs a
// mapping of its own.

// idShift is one swap of ids on the workspace's lower layer: From (the
// source root's owner) shows as To (the sandbox's), To as From.
type idShift struct {
	UIDFrom uint32 `json:"uid_from"`
	UIDTo   uint32 `json:"uid_to"`
	GIDFrom uint32 `json:"gid_from"`
	GIDTo   uint32 `json:"gid_to"`
}

func (s idShift) identity() bool { return s.UIDFrom == s.UIDTo && s.GIDFrom == s.GIDTo }

// ownersAllowed refuses a shift that would hand the sandbox an owner the
// profile's workspace_owners does not name. The id map gives the sandbox
// its owner's rights over the whole tree, not the "other" bits a plain
// read-only bind of the same source gives: the caller picks the source
// anywhere below bind_roots, so a root-owned tree (/opt, /srv, a volume)
// would otherwise be read as root, 0600 files and 0700 directories
// included.
//
// A source directory its owner keeps from others (a 0700 ~/.mozilla, a
// 0711 /opt/containerd) is refused as well, whoever owns it: a read-only
// bind of it shows the sandbox nothing, and the id map would open it
// whole. What an open source holds privately (a 0600 .env) stays the
// owner's to keep out.
func ownersAllowed(s idShift, mode uint32, p *specs.Profile) error {
	if mode&0o005 != 0o005 {
		return fmt.Errorf("mode %04o: its owner keeps it from others (it is not readable and searchable by them), and the id map would open it to the sandbox; "+
			"bind it read-only elsewhere, or make it readable and searchable by others (chmod o+rx)", mode&0o7777)
	}
	for _, o := range []struct {
		kind     string
		from, to uint32
	}{{"uid", s.UIDFrom, s.UIDTo}, {"gid", s.GIDFrom, s.GIDTo}} {
		if o.from != o.to && !p.WorkspaceOwnerAllowed(o.from) {
			return fmt.Errorf("owned by %s %d, which workspace_owners %v does not name: the sandbox would read and write the tree as %s %d; "+
				"bind it read-only elsewhere, give the checkout to an owner in workspace_owners, or add the owner to workspace_owners",
				o.kind, o.from, p.WorkspaceOwners, o.kind, o.from)
		}
	}
	return nil
}

// JudgeSource is the refusal of a workspace source whose real path is
// real and which dir reaches (the path itself, or the descriptor it was
// opened by, /proc/self/fd/N), "" for none: a home's private area is
// no one's workspace. The plan judges the path; the pin judges what it
// opened, by the path the kernel gives that descriptor, so a path
// swapped in between changes nothing.
func JudgeSource(real, dir string) string {
	if err := notAHome(dir); err != nil {
		return err.Error()
	}
	if err := privateBelow(real); err != nil {
		return err.Error()
	}
	return ""
}

// notAHome refuses to id-map a tree that holds credentials at its top (a
// home directory, wherever it lives): the map gives the sandbox its
// owner's rights, so the owner's 0600 keys would be the sandbox's, where
// a read-only bind shows it only what others may read.
func notAHome(dir string) error {
	if c := specs.CredentialEntryIn(dir); c != "" {
		return fmt.Errorf("it holds %s, as a home directory does, and the id map would give the sandbox its owner's rights over it; "+
			"give the job a checkout without it, or bind it read-only", c)
	}
	return nil
}

// privateBelow refuses to id-map a source below a home whose path there
// passes through a hidden directory (~/.local, ~/.cargo, ~/.config/app):
// those hold the owner's application state and keys, not a checkout, and
// where a read-only bind shows the sandbox only what others may read, the
// id map shows it all. A checkout below a home (/home/runner/work/…, a
// CI runner's) stays the job's to edit.
func privateBelow(real string) error {
	home := specs.HomeAbove(real)
	if home == "" {
		return nil
	}
	rel, err := filepath.Rel(home, real)
	if err != nil {
		return err
	}
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return fmt.Errorf("it lies in %s, a hidden directory of the home %s, which holds the owner's application state and keys, not a checkout; "+
				"give the job a checkout outside it, or bind it read-only", part, home)
		}
	}
	return nil
}

// maxID is one past the highest valid id (4294967294): (uid_t)-1 means
// "no id".
const maxID = 1<<32 - 1

// SwapIDMaps is a user namespace id map that swaps a and b and maps every
// other id to itself.
func SwapIDMaps(a, b uint32) []syscall.SysProcIDMap {
	var m []syscall.SysProcIDMap
	add := func(in, out, n uint64) {
		if n > 0 {
			m = append(m, syscall.SysProcIDMap{ContainerID: int(in), HostID: int(out), Size: int(n)})
		}
	}
	if a == b {
		add(0, 0, maxID)
		return m
	}
	lo, hi := uint64(min(a, b)), uint64(max(a, b))
	add(0, 0, lo)
	add(lo, hi, 1)
	add(lo+1, lo+1, hi-lo-1)
	add(hi, lo, 1)
	add(hi+1, hi+1, maxID-hi-1)
	return m
}

// SwapMapping is SwapIDMaps in uid_map's words ("inside:outside:count,…").
func SwapMapping(a, b uint32) string {
	var parts []string
	for _, e := range SwapIDMaps(a, b) {
		parts = append(parts, fmt.Sprintf("%d:%d:%d", e.ContainerID, e.HostID, e.Size))
	}
	return strings.Join(parts, ",")
}

// shifted is the owner the sandbox sees for an id of the source.
func shifted(id, from, to uint32) uint32 {
	switch id {
	case from:
		return to
	case to:
		return from
	}
	return id
}

// errNoIDMap says why a kernel cannot give the workspace to the sandbox.
var errNoIDMap = errors.New("an overlay workspace whose source the sandbox user does not own needs id-mapped mounts " +
	"(Linux 5.12+, and a source filesystem that supports them: ext4, xfs, btrfs, tmpfs from 6.3) " +
	"and overlayfs on id-mapped lower layers (Linux 5.19+)")

// mountIDMappedLower mounts the source (a pin: runtime/pins.go) at target
// with the shift applied, for the overlay's lowerdir: a clone of the
// source's mount, read-only, nosuid, nodev and id-mapped through a user
// namespace that holds the shift (open_tree, mount_setattr, move_mount).
func mountIDMappedLower(source, target string, s idShift) error {
	if err := os.Mkdir(target, 0o700); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	userns, err := usernsWith(SwapIDMaps(s.UIDFrom, s.UIDTo), SwapIDMaps(s.GIDFrom, s.GIDTo))
	if err != nil {
		return fmt.Errorf("%w: user namespace for the id map: %v", errNoIDMap, err)
	}
	defer userns.Close()
	tree, err := unix.OpenTree(unix.AT_FDCWD, source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("%w: open_tree %s: %v", errNoIDMap, source, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{
		Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(userns.Fd()),
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("%w: mount_setattr %s: %v", errNoIDMap, source, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("workspace: move_mount to %s: %v", target, err)
	}
	return nil
}

// lowerOf is the overlay's lower directory of w: the id-mapped mount, or
// the source itself when no shift is needed.
func (w Workspace) lowerOf() string {
	if w.Shift == nil || w.Shift.identity() {
		return w.Source
	}
	return filepath.Join(w.Dir, "lower")
}
