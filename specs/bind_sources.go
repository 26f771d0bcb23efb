package specs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"unsafe"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// maxBindEntries bounds the walk that looks for sockets in a bind source.
// A tree larger than this is refused rather than trusted unread.
const maxBindEntries = 1_000_000

var errTooLarge = errors.New("too many entries")

// JudgeBindSource says why a bind source, named by its real path on the
// host, must not reach the sandbox, or "": the whole host_mounts judgement
// (denylist, allowlist, what is mounted there, sockets), for the runtime
// to apply again to what it really opened. fd is that opened source: the
// search for sockets walks its tree through descriptors, so a caller who
// renames parts of the tree meanwhile cannot have another tree searched.
func JudgeBindSource(c *Context, annotations map[string]string, real string, fd int) string {
	if why := hostPathRefusal(real); why != "" {
		return why
	}
	return bindSourceRefusal(c, annotations, real, fd, func(string) (string, error) { return c.findChannelAt(fd, real) })
}

// IsBind tells whether m is a bind mount, by type or by option.
func IsBind(m rspec.Mount) bool { return isBind(m) }

// bindSourceRefusal is the allowlist side of host_mounts: the source must
// lie below one of the profile's bind_roots, or be the engine's own file
// for this container, and hold no socket or FIFO (as findChannel finds
// them). It
// returns "" when allowed. fd is the source opened, -1 when it is not.
func bindSourceRefusal(c *Context, annotations map[string]string, src string, fd int, findChannel func(real string) (string, error)) string {
	real, err := c.resolve(src)
	if err != nil {
		return "the source cannot be resolved on the host (" + err.Error() + ")"
	}
	real = canonicalRun(real)
	if why := hardLinkRefusal(real, fd); why != "" {
		return why
	}
	if why := c.mountedRefusal(annotations, real, fd); why != "" {
		return why
	}
	if why := c.bindRootsRefusal(annotations, real); why != "" {
		return why
	}
	return channelRefusal(real, "bind a directory", findChannel)
}

// channelRefusal refuses a tree the job will see (a bind source, a
// rootfs) at real that holds a socket or a FIFO, or an engine's state, as
// findChannel finds them; advice says what to mount instead.
func channelRefusal(real, advice string, findChannel func(real string) (string, error)) string {
	var held *EngineStateError
	if ch, err := findChannel(real); errors.As(err, &held) {
		return real + " is or holds " + held.Error() + "; " + advice + " without it"
	} else if err != nil {
		return fmt.Sprintf("%s cannot be checked for sockets and FIFOs (%v)", real, err)
	} else if ch != "" {
		return ch + " is a socket or a FIFO: connecting to one or writing to the other needs no write access to the mount (a read-only mount does not stop it), and reaches a process outside the sandbox; " + advice + " without them"
	}
	return ""
}

// bindRootsRefusal is the allowlist's answer for a bind source at real
// (resolved): below one of the profile's bind_roots, or the engine's own
// file for this container. "" when it is.
func (c *Context) bindRootsRefusal(annotations map[string]string, real string) string {
	if f, ok := engineFileOwner(grantPath(real)); ok {
		if !ownedByThisContainer(c, annotations, f, real) {
			return real + " is the engine's file for " + f.Kind + " " + f.ID + ", not for this container"
		}
		return ""
	}
	if !belowRoot(c.Profile.BindRoots, real) {
		return real + " is not below any of the profile's bind_roots " + fmtList(c.Profile.BindRoots) + " (an administrator allows binds from a directory by adding it to bind_roots in the profile)"
	}
	return ""
}

// hardLinkRefusal refuses a file source with more than one name: the
// rules judge a source by its path, and another name of the same file may
// be one they refuse (a hard link to ~/.ssh/id_rsa below a bind root). The
// opened source (fd, -1 when not opened) is what counts: its path's names
// can be swapped meanwhile.
func hardLinkRefusal(real string, fd int) string {
	var st unix.Stat_t
	var err error
	if fd >= 0 {
		if err = unix.Fstat(fd, &st); err != nil {
			return fmt.Sprintf("the source cannot be checked for other names (%v)", err)
		}
	} else {
		err = unix.Lstat(real, &st)
	}
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
		return ""
	}
	return fmt.Sprintf("%s is a file with %d names (hard links): another of them may be a credential the rules refuse; bind a copy", real, st.Nlink)
}

// mountedRefusal judges the files really mounted at real (opened at fd,
// -1 when not): where a bind or volume shows files that are also
// elsewhere on the host, each of those places must pass the same rules as
// if the caller had named it, down to whose engine file it is; files a
// volume's options mounted that are nowhere outside the engines' state
// are refused, and so are files of a filesystem that is not plain storage
// (storageRefusal).
func (c *Context) mountedRefusal(annotations map[string]string, real string, fd int) string {
	src, err := c.mountedFrom(real, fd)
	if err != nil {
		return "where the source's files come from cannot be told (" + err.Error() + ")"
	}
	if why := volumeMountRefusal(real, src); why != "" {
		return why
	}
	if why := storageRefusal(real, src.Holder); why != "" {
		return why
	}
	for _, pl := range src.Places {
		why := c.placeRefusal(annotations, pl)
		switch {
		case why == "":
		case pl.Inner != "":
			return real + " holds " + pl.Inner + ", which is also mounted at " + pl.Path + ", which " + why
		default:
			return real + " is a mount of " + pl.Path + ", which " + why
		}
	}
	return ""
}

// placeRefusal judges one place a source's files are also at.
func (c *Context) placeRefusal(annotations map[string]string, pl Place) string {
	if why := lexicalRefusals(pl.Path); why != "" {
		return "is refused: " + why
	}
	p := canonicalRun(pl.Path)
	if f, ok := engineFileOwner(grantPath(p)); ok {
		if !ownedByThisContainer(c, annotations, f, p) {
			return "is the engine's file for " + f.Kind + " " + f.ID + ", not for this container"
		}
	} else if !belowRoot(c.Profile.BindRoots, p) {
		return "is not below any of the profile's bind_roots"
	}
	return ""
}

func belowRoot(roots []string, p string) bool {
	for _, r := range roots {
		if under(p, filepath.Clean(r)) {
			return true
		}
	}
	return false
}

// findChannelAt returns the first socket or FIFO at or below the file
// open at fd, on that file's own mount as a bind without submounts shows
// it, or "" (name only names what is found). Each directory is opened
// relative to its parent's descriptor, never by a path from the root,
// and never through a symlink or into another mount: what is searched is
// the tree of the very file that was opened, however its names change
// during the walk.
func findChannelAt(fd int, name string) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK, unix.S_IFIFO:
		return name, nil
	case unix.S_IFDIR:
	default:
		return "", nil
	}
	// The job sees the tree through a bind that does not carry submounts:
	// what lies under a mount point in the tree, not the mount. A clone of
	// the tree's own mount alone (open_tree without AT_RECURSIVE) shows
	// the same, where a walk of the host's view would skip the mount and
	// never see what it covers.
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return "", fmt.Errorf("%s: open_tree: %w", name, err)
	}
	defer unix.Close(tree)
	dir, err := unix.Openat2(tree, ".", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC})
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	n := 0
	found, err := walkForChannel(dir, name, &n, make([]byte, 64<<10))
	if errors.Is(err, errTooLarge) {
		return "", fmt.Errorf("more than %d entries", maxBindEntries)
	}
	return found, err
}

// EngineStateError is a directory the walk of a bind source found laid
// out as an engine's state (engineLayouts): other containers' layers,
// configuration and volumes, wherever the operator keeps them.
type EngineStateError struct{ Dir, Home string }

func (e *EngineStateError) Error() string {
	return e.Dir + ", laid out as an engine's state (as " + e.Home + " is): other containers' files and the engine's own"
}

// belowOnly resolves one name in a directory: no symlink (the sandbox
// would resolve it in its own root, not the host's), no mount crossed.
const belowOnly = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// walkForChannel reads the directory open at dir (and closes it), and
// then descends into each subdirectory through its descriptor. n counts
// the entries seen, up to maxBindEntries. The entries are read with
// getdents into buf, one buffer for the whole walk, and judged by their
// d_type: a walk of an image's tree of tens of thousands of files then
// allocates per directory, not per file (an os.DirEntry and two strings
// each took half of the walk's time).
func walkForChannel(dir int, name string, n *int, buf []byte) (string, error) {
	defer unix.Close(dir)
	var held []string    // the names an engine's state has (engineLayouts)
	var subdirs []string // read whole before descending: buf is reused
	for {
		got, err := unix.Getdents(dir, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		if got == 0 {
			break
		}
		for off := 0; off < got; {
			ino, typ, nm, next, ok := dirent(buf[:got], off)
			if !ok {
				return "", fmt.Errorf("%s: getdents returned a malformed entry at %d of %d bytes", name, off, got)
			}
			off = next
			if ino == 0 || string(nm) == "." || string(nm) == ".." {
				continue
			}
			if *n++; *n > maxBindEntries {
				return "", errTooLarge
			}
			if layoutNames()[string(nm)] {
				held = append(held, string(nm))
			}
			typ, err := entryType(dir, nm, typ)
			if err != nil {
				return "", fmt.Errorf("%s/%s: %w", name, nm, err)
			}
			switch typ {
			case unix.DT_SOCK, unix.DT_FIFO:
				return name + "/" + string(nm), nil
			case unix.DT_DIR:
				subdirs = append(subdirs, string(nm))
			}
		}
	}
	if home := engineHomeOf(func(n string) bool { return slices.Contains(held, n) }); home != "" {
		return "", &EngineStateError{Dir: name, Home: home}
	}
	for _, sub := range subdirs {
		p := name + "/" + sub
		child, err := unix.Openat2(dir, sub, &unix.OpenHow{
			Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: belowOnly})
		switch {
		case err == nil:
		case errors.Is(err, unix.ENOTDIR):
			// Replaced since it was listed: judge what is there now.
			var st unix.Stat_t
			if unix.Fstatat(dir, sub, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && (st.Mode&unix.S_IFMT == unix.S_IFSOCK || st.Mode&unix.S_IFMT == unix.S_IFIFO) {
				return p, nil
			}
			continue
		case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOENT):
			// A symlink put there since, or gone. The clone walked
			// (findChannelAt) carries no other mount; one that came
			// there anyway, the job's bind does not carry either.
			continue
		default:
			// EACCES too: root is refused where an idmapped mount maps
			// no owner of the directory, or a server squashes root,
			// yet the job may pass through it with x alone.
			return "", fmt.Errorf("%s: %w", p, err)
		}
		if found, err := walkForChannel(child, p, n, buf); err != nil || found != "" {
			return found, err
		}
	}
	return "", nil
}

// dirent reads the linux_dirent64 at off in buf (as getdents filled
// it): its inode, d_type and name, and where the next entry starts.
func dirent(buf []byte, off int) (ino uint64, typ uint8, name []byte, next int, ok bool) {
	const (
		inoAt    = unsafe.Offsetof(unix.Dirent{}.Ino)
		reclenAt = unsafe.Offsetof(unix.Dirent{}.Reclen)
		typeAt   = unsafe.Offsetof(unix.Dirent{}.Type)
		nameAt   = unsafe.Offsetof(unix.Dirent{}.Name)
	)
	if off+int(nameAt) > len(buf) {
		return 0, 0, nil, 0, false
	}
	reclen := int(binary.NativeEndian.Uint16(buf[off+int(reclenAt):]))
	if reclen <= int(nameAt) || off+reclen > len(buf) {
		return 0, 0, nil, 0, false
	}
	name = buf[off+int(nameAt) : off+reclen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return binary.NativeEndian.Uint64(buf[off+int(inoAt):]), buf[off+int(typeAt)], name, off + reclen, true
}

// entryType is the d_type of the entry nm of dir as getdents gave it, or,
// from a file system that gives none (DT_UNKNOWN), as the inode says; 0
// for an entry gone since it was listed.
func entryType(dir int, nm []byte, typ uint8) (uint8, error) {
	if typ != unix.DT_UNKNOWN {
		return typ, nil
	}
	var st unix.Stat_t
	err := unix.Fstatat(dir, string(nm), &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK:
		return unix.DT_SOCK, nil
	case unix.S_IFIFO:
		return unix.DT_FIFO, nil
	case unix.S_IFDIR:
		return unix.DT_DIR, nil
	}
	return unix.DT_REG, nil
}
