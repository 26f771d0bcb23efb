package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// Change is one path that differs between a workspace's read-only source
// (the overlay's lower layer) and what the sandbox sees (lower + upper).
type Change struct {
	Path    string `json:"path"` // slash-separated, relative to the workspace
	Kind    string `json:"kind"` // added, modified, deleted
	Type    string `json:"type"` // file, dir, symlink, whiteout, device, fifo, socket
	Mode    string `json:"mode,omitempty"`
	OldMode string `json:"old_mode,omitempty"`
	Size    int64  `json:"size,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Target  string `json:"target,omitempty"` // of a symlink, never followed
	Binary  bool   `json:"binary,omitempty"`
	// LinkTo names the first path of a hard link; this one is the same
	// file, read once.
	LinkTo string `json:"link_to,omitempty"`
	// Escaped says that Path, Target or LinkTo hold hidden characters
	// written as \xNN, \uNNNN or \\ (see escapeText).
	Escaped bool `json:"escaped,omitempty"`
	// Rejected says why export leaves this path out: device nodes,
	// setuid/setgid files, fifos and sockets never leave the layer.
	Rejected string `json:"rejected,omitempty"`

	upperRel string // the path in the upper layer, "" for deletions
	lowerRel string // the path in the lower layer, "" when absent
	// upper is the upper-layer file as it was judged: a read of its
	// content must find this inode, not one swapped in since.
	upper *unix.Stat_t
}

// resolveBeneath refuses every symlink on the way and any escape from the
// root: a path the sandbox planted is never followed, on either layer.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// layer is one directory tree read only through openat2 beneath its root.
type layer struct {
	root *os.File
}

func openLayer(dir string) (*layer, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open layer %s: %w", dir, err)
	}
	return &layer{root: os.NewFile(uintptr(fd), dir)}, nil
}

func (l *layer) Close() error { return l.root.Close() }

func (l *layer) open(rel string, flags int) (*os.File, error) {
	if rel == "" {
		rel = "."
	}
	fd, err := unix.Openat2(int(l.root.Fd()), rel, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: resolveBeneath,
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// lstat stats rel without following a symlink anywhere on its path.
func (l *layer) lstat(rel string) (*unix.Stat_t, error) {
	dir, base := path.Split(rel)
	d, err := l.open(strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return &st, nil
}

func (l *layer) readlink(rel string) (string, error) {
	dir, base := path.Split(rel)
	d, err := l.open(strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return "", err
	}
	defer d.Close()
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(int(d.Fd()), base, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// names lists a directory in order, reading it in batches so that a
// directory of millions of entries is refused before it is held whole.
func (l *layer) names(rel string, b *budget) ([]string, error) {
	d, err := l.open(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return dirNames(d, rel, b)
}

// look is one look at a directory of a layer: its names, in order, and
// what each entry was then. A walk judges a directory by its entries (a
// HEAD file makes it a repository) and writes the entries it judged, both
// from the one look: a job that swapped a HEAD directory for a HEAD file
// between two looks, thousands of times a second, got a repository past
// the judgement into the export of a running container.
type look struct {
	names []string
	stats map[string]*unix.Stat_t
}

// look reads rel's names and stats each entry through the same open
// directory; an entry gone since the names were read is not in it.
func (l *layer) look(rel string, b *budget) (*look, error) {
	d, err := l.open(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := dirNames(d, rel, b)
	if err != nil {
		return nil, err
	}
	lk := &look{stats: make(map[string]*unix.Stat_t, len(names))}
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(int(d.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			continue
		} else if err != nil {
			return nil, &os.PathError{Op: "fstatat", Path: join(rel, n), Err: err}
		}
		lk.names = append(lk.names, n)
		lk.stats[n] = &st
	}
	return lk, nil
}

// marks are the gitMarks of the look's entries, by what each was then.
func (lk *look) marks() map[string]bool {
	return gitMarks(lk.names, func(n string) bool { return lk.stats[n].Mode&unix.S_IFMT == unix.S_IFDIR })
}

// dirNames reads the open directory d (rel) in batches, in order.
func dirNames(d *os.File, rel string, b *budget) ([]string, error) {
	var names []string
	var size int64
	for {
		batch, err := d.Readdirnames(1024)
		names = append(names, batch...)
		if b != nil && b.files+len(names) > b.lim.Files {
			return nil, fmt.Errorf("%s: more than %d entries (changes_max_files); bulkhead reads no further", escape.Text(rel), b.lim.Files)
		}
		for _, n := range batch {
			size += int64(escape.Len(n))
		}
		if b != nil {
			if err := b.nameRoom(size); err != nil {
				return nil, fmt.Errorf("%s: %w", escape.Text(rel), err)
			}
		}
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(names)
	return names, nil
}

// opaque tells whether overlayfs marked rel opaque. Only the trusted.*
// attribute counts: bulkhead mounts the overlay without userxattr, so the
// kernel reads and writes trusted.overlay.opaque, which the sandbox cannot
// set; a user.overlay.opaque it set on its own directory means nothing to
// the kernel and would make diff and export claim a deletion that never
// happened.
func (l *layer) opaque(rel string) bool {
	d, err := l.open(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return false
	}
	defer d.Close()
	buf := make([]byte, 8)
	n, err := unix.Fgetxattr(int(d.Fd()), "trusted.overlay.opaque", buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

// kindReason says why no format carries an upper layer's entry of st's
// kind and mode (a node, a setuid or setgid file), or "". Every walk of a
// layer (the scan, the tar, the kept copy) asks it, so each leaves out and
// names the same entries. A whiteout is the walks' own to read first.
func kindReason(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			return "setuid/setgid bit: never exported"
		}
		return ""
	case unix.S_IFDIR, unix.S_IFLNK:
		return ""
	case unix.S_IFCHR, unix.S_IFBLK:
		return fmt.Sprintf("device node %d:%d: never exported", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	default:
		return typeOf(st.Mode) + ": never exported"
	}
}

func typeOf(m uint32) string {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	case unix.S_IFIFO:
		return "fifo"
	default:
		return "socket"
	}
}

func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// whiteoutPrefix marks a whiteout (.wh.<name>) or an opaque directory
// (.wh..wh..opq) in an OCI layer tar. A file the sandbox named so would
// delete real files when the tar is applied, and no escape exists in that
// format: such names are refused in every format, so patch, json and tar
// agree on what was left out.
const whiteoutPrefix = ".wh."

const whiteoutNameReason = "name begins with .wh., which an OCI layer reads as a whiteout; never exported"

// windowsAliasReason says why a name Windows reads as another entry's,
// a drive or a stream of another file never leaves the layer: a reviewer
// extracting or applying it there writes elsewhere than it shows.
const windowsAliasReason = "a backslash, a colon or an 8.3 short name in its path, which Windows reads as another entry's, a drive (C:) or another file's stream (a.txt::$DATA); never exported"

// repoMetaReason says why a repository's own directory never leaves the
// layer. A checkout's .git holds configuration and hooks that git runs on
// the host (core.fsmonitor, core.sshCommand, hooks/*): a job that wrote
// them would run its code as whoever next uses git in a tree the tar was
// extracted into, and git apply refuses a whole patch that names a .git
// path, so one such line would cost the reviewer every other change.
const repoMetaReason = "a repository's own directory (.git): its configuration and hooks run on the host; never exported"

// isRepoMeta tells whether a name is a repository's .git (a directory, or
// the file of a worktree or submodule) on any filesystem a reviewer may
// use (nameKey): ".GIT.", "git~1" (or ~2 when another entry took ~1) and
// ".git" with an invisible code point are one there.
func isRepoMeta(name string) bool {
	k := nameKey(name)
	return k == ".git" || strings.HasPrefix(k, "git~") && windowsAlias(k)
}

// repoDirReason says why a directory git could take for a repository of
// its own never leaves the layer, whatever its name: git looks for one in
// every directory it runs in and above (a bare repository), and runs its
// configuration as it runs a .git's.
const repoDirReason = "a directory holding HEAD, or objects and refs (complete from this export or another, or named by a commondir), which git can take for a repository: its configuration and hooks would run on the host; never exported"

// repoHalfReason says why an objects or refs the job adds where the
// checkout has none never leaves the layer: it is half of a repository's
// common directory, and two exports each holding one half, applied one
// after the other, made one whose config ran the job's command. Only the
// half stays out: the directory's other changes are ordinary ones.
const repoHalfReason = "an objects or refs the checkout does not hold, half of a repository's common directory whose other half another export may hold: git would run the configuration beside them on the host; never exported"

// gitDirNames are the entries that make a directory one git may take for a
// repository (setup.c's is_git_directory): a HEAD, or objects and refs. A
// directory with objects and refs and no HEAD is a repository's common
// directory, whose config and hooks git reads when a HEAD elsewhere sits
// beside a commondir file naming it.
var gitDirNames = []string{"HEAD", "objects", "refs"}

// gitMarks are the keys of gitDirNames among a directory's entries names,
// in any spelling a reviewer's filesystem takes for one (nameKey). A HEAD
// counts only when it is no directory (isDir): git reads it as a file or
// a link, and components/Head/ is a web page's.
func gitMarks(names []string, isDir func(name string) bool) map[string]bool {
	var marks map[string]bool
	for _, n := range names {
		k := nameKey(n)
		if !isGitMark(n) || k == "head" && isDir(n) {
			continue
		}
		if marks == nil {
			marks = map[string]bool{}
		}
		marks[k] = true
	}
	return marks
}

// isGitMark tells whether name is one of gitDirNames in any spelling
// (nameKey), whatever kind of entry it is.
func isGitMark(name string) bool {
	k := nameKey(name)
	return slices.ContainsFunc(gitDirNames, func(g string) bool { return nameKey(g) == k })
}

// repoShape tells whether git may take a directory for a repository once
// changes are applied, by the marks (gitMarks) the job's side and the
// checkout's (as the container saw it, and as it is now) hold there: a
// HEAD on either, objects and refs on either or both. A mark counts on any
// side: a HEAD the job deletes beside a config it writes must not make the
// config safe to export. A half alone is no repository (CPython's Objects)
// and one the job adds stays out by itself (repoHalfReason).
func repoShape(job, checkout map[string]bool) bool {
	either := func(key string) bool { return job[key] || checkout[key] }
	return either("head") || either("objects") && either("refs")
}

// scanChanges compares an upper layer with its lower layer. It never
// follows a link in either, opens only regular files (checked on the
// descriptor), and reads no more than b allows.
// reader is the sandbox user (nil: unknown). named is the checkout as it
// is now at the path the caller named (nil: gone or not known): a HEAD
// there makes a directory a repository as one in the lower layer does.
// upperJudged says the upper layer is a kept copy, each file judged
// against the reader when copied (root's now, they would all look
// unreadable to it).
func scanChanges(upperDir, lowerDir string, named *layer, b *budget, reader *idShift, upperJudged bool) ([]Change, error) {
	up, err := openLayer(upperDir)
	if err != nil {
		return nil, err
	}
	defer up.Close()
	low, err := openLayer(lowerDir)
	if err != nil {
		return nil, err
	}
	defer low.Close()
	s := &scanner{up: up, low: low, b: b, reader: reader, upperJudged: upperJudged, links: map[inode]linked{}}
	top, err := up.look("", b)
	if err != nil {
		return nil, err
	}
	root := checkoutRoot(low, named)
	if root.repoWith(top.marks()) {
		return []Change{{Path: ".", Kind: "modified", Type: "dir", Rejected: repoDirReason}}, nil
	}
	if err := s.dir("", top, false, 1, root); err != nil {
		return nil, err
	}
	sort.SliceStable(s.out, func(i, j int) bool { return s.out[i].Path < s.out[j].Path })
	return s.out, nil
}

// inode names one file of a layer: hard links share it.
type inode struct{ dev, ino uint64 }

// linked is what the walk learnt from a hard link's first name.
type linked struct {
	path, sum, rejected string
	binary              bool
}

type scanner struct {
	up, low     *layer
	b           *budget
	reader      *idShift
	upperJudged bool
	out         []Change
	links       map[inode]linked
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func modeString(m uint32) string { return fmt.Sprintf("%04o", m&0o7777) }

// dir compares one upper directory, whose names are given; hidden says
// that an opaque ancestor hides the lower tree, so a same-named lower
// directory counts as replaced. cd is what the checkouts hold where the
// directory lands, judged by key as the tar is: on macOS the job's
// FIXTURE/config lands in the checkout's fixture.
func (s *scanner) dir(rel string, lk *look, hidden bool, depth int, cd *checkoutDir) error {
	for _, n := range lk.names {
		p := join(rel, n)
		if err := s.b.entry(p, depth); err != nil {
			return err
		}
		st := lk.stats[n]
		lst, lerr := s.low.lstat(p)
		if lerr != nil {
			lst = nil
		}
		if isRepoMeta(n) {
			// Nothing below it is read: the whole entry stays out.
			c := Change{Path: p, Kind: "added", Type: typeOf(st.Mode), Rejected: repoMetaReason, upperRel: p}
			switch {
			case isWhiteout(st) && lst == nil:
				continue
			case isWhiteout(st):
				c.Kind, c.Type, c.upperRel, c.lowerRel = "deleted", typeOf(lst.Mode), "", p
			case lst != nil:
				c.Kind, c.lowerRel = "modified", p
			}
			s.out = append(s.out, c)
			continue
		}
		if isWhiteout(st) {
			if lst != nil {
				if err := s.deleted(p, lst, depth); err != nil {
					return err
				}
			}
			continue
		}
		if strings.HasPrefix(n, whiteoutPrefix) {
			// Nothing below it is read: the whole entry stays out.
			s.out = append(s.out, Change{Path: p, Kind: "added", Type: typeOf(st.Mode), Mode: modeString(st.Mode), Rejected: whiteoutNameReason, upperRel: p})
			continue
		}
		if windowsName(n) {
			// Nothing below it is read: the whole entry stays out.
			s.out = append(s.out, Change{Path: p, Kind: "added", Type: typeOf(st.Mode), Mode: modeString(st.Mode), Rejected: windowsAliasReason, upperRel: p})
			continue
		}
		if why := cd.halfReason(n); why != "" {
			// Nothing below it is read: the whole entry stays out.
			c := Change{Path: p, Kind: "added", Type: typeOf(st.Mode), Mode: modeString(st.Mode), Rejected: why, upperRel: p}
			if lst != nil {
				c.Kind, c.lowerRel = "modified", p
			}
			s.out = append(s.out, c)
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			below, err := s.up.look(p, s.b)
			if err != nil {
				return err
			}
			sub := cd.below(n)
			if sub.repoWith(below.marks()) {
				// Nothing below it is read: the whole entry stays out.
				c := Change{Path: p, Kind: "added", Type: "dir", Mode: modeString(st.Mode), Rejected: repoDirReason, upperRel: p}
				if lst != nil {
					c.Kind, c.lowerRel = "modified", p
				}
				s.out = append(s.out, c)
				continue
			}
			opaque := hidden || s.up.opaque(p)
			switch {
			case lst == nil:
				s.out = append(s.out, Change{Path: p, Kind: "added", Type: "dir", Mode: modeString(st.Mode), upperRel: p})
			case lst.Mode&unix.S_IFMT != unix.S_IFDIR:
				if err := s.deleted(p, lst, depth); err != nil {
					return err
				}
				s.out = append(s.out, Change{Path: p, Kind: "added", Type: "dir", Mode: modeString(st.Mode), upperRel: p})
			default:
				if opaque {
					// Everything of the lower directory is hidden except what
					// the upper one holds again.
					if err := s.hiddenBelow(p, depth); err != nil {
						return err
					}
				}
				if st.Mode&0o7777 != lst.Mode&0o7777 {
					s.out = append(s.out, Change{Path: p, Kind: "modified", Type: "dir",
						Mode: modeString(st.Mode), OldMode: modeString(lst.Mode), upperRel: p, lowerRel: p})
				}
			}
			if err := s.dir(p, below, opaque, depth+1, sub); err != nil {
				return err
			}
			continue
		}
		c := Change{Path: p, Kind: "added", Type: typeOf(st.Mode), Mode: modeString(st.Mode), Size: st.Size, upperRel: p}
		if lst != nil {
			if lst.Mode&unix.S_IFMT == unix.S_IFDIR {
				// a file now hides a whole lower directory
				if err := s.deleted(p, lst, depth); err != nil {
					return err
				}
			} else if typeOf(lst.Mode) == c.Type {
				c.Kind, c.lowerRel, c.OldMode = "modified", p, modeString(lst.Mode)
			} else if err := s.deleted(p, lst, depth); err != nil {
				return err
			}
		}
		switch c.Rejected = kindReason(st); {
		case c.Rejected != "":
		case c.Type == "symlink":
			var err error
			if c.Target, err = s.up.readlink(p); err != nil {
				return err
			}
			c.SHA256 = sum([]byte(c.Target))
			c.Rejected = cd.linkOut(rel, n, c.Target)
		default:
			s.file(&c, st)
		}
		// Copied up (touch, chown) but equal in content and mode: no
		// change. Not for a lower file the sandbox could not read, whose
		// replacement by the same bytes would otherwise tell the job's
		// guess right from wrong.
		if c.Kind == "modified" && c.Rejected == "" && c.OldMode == c.Mode && s.sameAsLower(c, lst) {
			if _, readable := lowerReadable(s.low, c.lowerRel, s.reader); readable {
				continue
			}
		}
		s.out = append(s.out, c)
	}
	return nil
}

// file hashes one regular file, once per inode: a second name of a hard
// link takes the first one's sum and reads nothing.
func (s *scanner) file(c *Change, st *unix.Stat_t) {
	if !s.upperJudged && !s.up.upperFileReadable(c.upperRel, st, s.reader) {
		c.Rejected = unreadableReason
		return
	}
	judged := *st
	c.upper = &judged
	key := inode{st.Dev, st.Ino}
	if st.Nlink > 1 {
		if l, ok := s.links[key]; ok {
			c.LinkTo, c.SHA256, c.Binary, c.Rejected = l.path, l.sum, l.binary, l.rejected
			return
		}
		defer func() { s.links[key] = linked{path: c.Path, sum: c.SHA256, binary: c.Binary, rejected: c.Rejected} }()
	}
	if why := s.b.read(st.Size); why != "" {
		c.Rejected = why
		return
	}
	var err error
	if c.SHA256, c.Binary, err = s.up.hashRegular(c.upperRel, st); err != nil {
		c.Rejected = "unreadable: " + err.Error()
	}
}

// sameAsLower tells whether a copied-up file equals its lower original;
// a lower file too large for what is left to read counts as different.
func (s *scanner) sameAsLower(c Change, lst *unix.Stat_t) bool {
	if c.Type == "symlink" {
		t, err := s.low.readlink(c.lowerRel)
		return err == nil && t == c.Target
	}
	if c.LinkTo != "" || lst == nil || lst.Size != c.Size || s.b.read(lst.Size) != "" {
		return false
	}
	h, _, err := s.low.hashRegular(c.lowerRel, lst)
	return err == nil && h == c.SHA256
}

// hiddenBelow reports the lower entries of dir that an opaque upper
// directory hides.
func (s *scanner) hiddenBelow(dir string, depth int) error {
	upNames, err := s.up.names(dir, s.b)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, n := range upNames {
		keep[n] = true
	}
	lowNames, err := s.low.names(dir, s.b)
	if err != nil {
		return nil
	}
	for _, n := range lowNames {
		p := join(dir, n)
		if keep[n] {
			continue
		}
		if st, err := s.low.lstat(p); err == nil {
			if err := s.deleted(p, st, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleted reports a lower path and, for a directory, everything below it.
func (s *scanner) deleted(p string, st *unix.Stat_t, depth int) error {
	if err := s.b.entry(p, depth); err != nil {
		return err
	}
	c := Change{Path: p, Kind: "deleted", Type: typeOf(st.Mode), OldMode: modeString(st.Mode), Size: st.Size, lowerRel: p}
	if isRepoMeta(path.Base(p)) {
		c.Rejected = repoMetaReason
	}
	s.out = append(s.out, c)
	if c.Type != "dir" || c.Rejected != "" {
		return nil
	}
	names, _ := s.low.names(p, s.b)
	for _, n := range names {
		if cst, err := s.low.lstat(join(p, n)); err == nil {
			if err := s.deleted(join(p, n), cst, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// isBinary is git's test: a NUL byte in the first 8000 bytes.
func isBinary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0
}
