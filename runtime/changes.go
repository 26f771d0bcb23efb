package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
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
	// Rejected says why export leaves this path out: device nodes,
	// setuid/setgid files, fifos and sockets never leave the layer.
	Rejected string `json:"rejected,omitempty"`

	upperRel string // the path in the upper layer, "" for deletions
	lowerRel string // the path in the lower layer, "" when absent
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

// readFile reads a regular file and checks that it still is one: the
// sandbox may swap it for a link between the walk and the read.
func (l *layer) readFile(rel string, limit int64) ([]byte, error) {
	// O_NONBLOCK: the sandbox may have swapped the file for a fifo since
	// it was listed, and opening a fifo would wait for a writer forever.
	// The mode is checked on the open file below.
	f, err := l.open(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: no longer a regular file", rel)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a diff reads", rel, fi.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

func (l *layer) names(rel string) ([]string, error) {
	d, err := l.open(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	sort.Strings(names)
	return names, err
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

// maxDiffFile bounds what one file may make bulkhead read; the workspace
// cap already bounds the upper layer.
const maxDiffFile = 1 << 30

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

// scanChanges compares an upper layer with its lower layer. It never
// follows a link in either and reads only regular files beneath them.
func scanChanges(upperDir, lowerDir string) ([]Change, error) {
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
	s := &scanner{up: up, low: low}
	if err := s.dir("", false); err != nil {
		return nil, err
	}
	sort.SliceStable(s.out, func(i, j int) bool { return s.out[i].Path < s.out[j].Path })
	return s.out, nil
}

type scanner struct {
	up, low *layer
	out     []Change
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// dir compares one upper directory; hidden says that an opaque ancestor
// hides the lower tree, so a same-named lower directory counts as replaced.
func (s *scanner) dir(rel string, hidden bool) error {
	names, err := s.up.names(rel)
	if err != nil {
		return err
	}
	for _, n := range names {
		p := join(rel, n)
		st, err := s.up.lstat(p)
		if err != nil {
			return err
		}
		lst, lerr := s.low.lstat(p)
		if lerr != nil {
			lst = nil
		}
		if isWhiteout(st) {
			if lst != nil {
				s.deleted(p, lst)
			}
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			opaque := hidden || s.up.opaque(p)
			switch {
			case lst == nil:
				s.out = append(s.out, Change{Path: p, Kind: "added", Type: "dir", Mode: fmt.Sprintf("%04o", st.Mode&0o7777), upperRel: p})
			case lst.Mode&unix.S_IFMT != unix.S_IFDIR:
				s.deleted(p, lst)
				s.out = append(s.out, Change{Path: p, Kind: "added", Type: "dir", Mode: fmt.Sprintf("%04o", st.Mode&0o7777), upperRel: p})
			default:
				if opaque {
					// Everything of the lower directory is hidden except what
					// the upper one holds again.
					if err := s.hiddenBelow(p); err != nil {
						return err
					}
				}
				if st.Mode&0o7777 != lst.Mode&0o7777 {
					s.out = append(s.out, Change{Path: p, Kind: "modified", Type: "dir",
						Mode: fmt.Sprintf("%04o", st.Mode&0o7777), OldMode: fmt.Sprintf("%04o", lst.Mode&0o7777), upperRel: p, lowerRel: p})
				}
			}
			if err := s.dir(p, opaque); err != nil {
				return err
			}
			continue
		}
		c := Change{Path: p, Kind: "added", Type: typeOf(st.Mode), Mode: fmt.Sprintf("%04o", st.Mode&0o7777), Size: st.Size, upperRel: p}
		if lst != nil {
			if lst.Mode&unix.S_IFMT == unix.S_IFDIR {
				s.deleted(p, lst) // a file now hides a whole lower directory
			} else if typeOf(lst.Mode) == c.Type {
				c.Kind, c.lowerRel, c.OldMode = "modified", p, fmt.Sprintf("%04o", lst.Mode&0o7777)
			} else {
				s.deleted(p, lst)
			}
		}
		switch c.Type {
		case "symlink":
			if c.Target, err = s.up.readlink(p); err != nil {
				return err
			}
			c.SHA256 = sum([]byte(c.Target))
		case "file":
			if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
				c.Rejected = "setuid/setgid bit: never exported"
				break
			}
			data, err := s.up.readFile(p, maxDiffFile)
			if err != nil {
				c.Rejected = "unreadable: " + err.Error()
				break
			}
			c.SHA256, c.Binary = sum(data), isBinary(data)
		case "device":
			c.Rejected = fmt.Sprintf("device node %d:%d: never exported", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		default:
			c.Rejected = c.Type + ": never exported"
		}
		if c.Kind == "modified" && c.Rejected == "" && c.OldMode == c.Mode {
			same, err := s.sameAsLower(c)
			if err != nil {
				return err
			}
			if same {
				continue // copied up (touch, chown) but equal in content and mode
			}
		}
		s.out = append(s.out, c)
	}
	return nil
}

func (s *scanner) sameAsLower(c Change) (bool, error) {
	if c.Type == "symlink" {
		t, err := s.low.readlink(c.lowerRel)
		return err == nil && t == c.Target, nil
	}
	data, err := s.low.readFile(c.lowerRel, maxDiffFile)
	if err != nil {
		return false, nil
	}
	return sum(data) == c.SHA256, nil
}

// hiddenBelow reports the lower entries of dir that an opaque upper
// directory hides.
func (s *scanner) hiddenBelow(dir string) error {
	upNames, err := s.up.names(dir)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, n := range upNames {
		keep[n] = true
	}
	lowNames, err := s.low.names(dir)
	if err != nil {
		return nil
	}
	for _, n := range lowNames {
		p := join(dir, n)
		if keep[n] {
			continue
		}
		if st, err := s.low.lstat(p); err == nil {
			s.deleted(p, st)
		}
	}
	return nil
}

// deleted reports a lower path and, for a directory, everything below it.
func (s *scanner) deleted(p string, st *unix.Stat_t) {
	c := Change{Path: p, Kind: "deleted", Type: typeOf(st.Mode), OldMode: fmt.Sprintf("%04o", st.Mode&0o7777), Size: st.Size, lowerRel: p}
	if c.Type == "dir" {
		s.out = append(s.out, c)
		names, _ := s.low.names(p)
		for _, n := range names {
			if cst, err := s.low.lstat(join(p, n)); err == nil {
				s.deleted(join(p, n), cst)
			}
		}
		return
	}
	s.out = append(s.out, c)
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
