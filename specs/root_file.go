package specs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinks is how many links one path may follow: Linux's MAXSYMLINKS.
const maxLinks = 40

// RootPlace resolves path, a file bulkhead trusts as root, one name at a
// time as the kernel does, and says which step of the way others than
// root could change so as to put another file in its place: "" when
// every directory a name is looked up in is root's and writable by no one
// else (or sticky, where only an entry's owner may replace it), and every
// entry passed on the way, directory or link, is root's: the links of a
// chain too, wherever they lead, since each is followed again by every
// later open of the path. The file itself is the caller's to judge.
func RootPlace(path string) (real, why string, err error) {
	// filepath.Abs drops "x/.." by its text, where the kernel goes up
	// from wherever a link x leads: the check would be of another file.
	if slices.Contains(strings.Split(path, "/"), "..") {
		return "", "", fmt.Errorf("%s: a path with \"..\" is not taken; name the file without it", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", err
	}
	cur := "/"
	if why := placeWhy(cur); why != "" {
		return "", why, nil
	}
	todo := strings.Split(abs, "/")
	for links := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..": // only from a link's target: from where the link is
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err != nil {
			return "", "", fmt.Errorf("%s: %w", next, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if st.Uid != 0 {
				return "", fmt.Sprintf("%s (a link of uid %d)", next, st.Uid), nil
			}
			if links++; links > maxLinks {
				return "", "", fmt.Errorf("%s: %w", path, unix.ELOOP)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", "", err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			todo = append(strings.Split(target, "/"), todo...)
		case unix.S_IFDIR:
			if why := placeWhy(next); why != "" {
				return "", why, nil
			}
			cur = next
		default:
			if slices.ContainsFunc(todo, func(n string) bool { return n != "" && n != "." }) {
				return "", "", fmt.Errorf("%s: %w", next, unix.ENOTDIR)
			}
			cur = next
		}
	}
	return cur, "", nil
}

// placeWhy says why others than root could change the entries of dir,
// or "": it must be a directory, not a link, root's and writable by no
// one else, or sticky (others may add entries to a sticky directory, not
// rename or remove root's).
func placeWhy(dir string) string {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || !OnlyRootRenames(&st) {
		return fmt.Sprintf("%s (uid %d, mode %04o)", dir, st.Uid, st.Mode&0o7777)
	}
	return ""
}

// OnlyRootRenames says whether only root may rename or remove the
// entries of the directory st describes: root's and writable by no one
// else, or sticky (others may add entries to a sticky directory, not
// rename or remove root's).
func OnlyRootRenames(st *unix.Stat_t) bool {
	return OnlyRootWrites(st) || st.Uid == 0 && st.Mode&unix.S_ISVTX != 0
}

// OnlyRootWrites says whether st is root's and writable by no one else:
// for a directory, only root may add entries to it too.
func OnlyRootWrites(st *unix.Stat_t) bool {
	return st.Uid == 0 && st.Mode&0o022 == 0
}

// RootsAbove says which directory above the clean absolute path p
// anyone but root could change (rename or replace what p names through
// it), or "" when none (placeWhy of each; the one below a sticky
// directory is checked to be root's in turn).
func RootsAbove(p string) string {
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		if why := placeWhy(dir); why != "" {
			return why
		}
		if dir == "/" {
			return ""
		}
	}
}

// RootFile is RootPlace that also holds the file itself to root's alone:
// a regular file of root's that no one else may write. real is the file
// judged: run or read it, not the path as named.
func RootFile(path string) (real, why string, err error) {
	real, why, err = RootPlace(path)
	if err != nil || why != "" {
		return real, why, err
	}
	var st unix.Stat_t
	if err := unix.Lstat(real, &st); err != nil {
		return "", "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 || st.Mode&0o022 != 0 {
		return real, fmt.Sprintf("%s (uid %d, mode %04o)", real, st.Uid, st.Mode&0o7777), nil
	}
	return real, "", nil
}
