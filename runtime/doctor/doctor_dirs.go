package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Dirs checks that the directories bulkhead keeps container state,
// the audit log and exported workspace changes in are writable only by
// root: whoever can write there can forge a record, erase an audit line or
// plant a change for review.
func Dirs(root, auditLog, changesDir string) []Check {
	var out []Check
	targets := []struct{ name, path string }{
		{"state directory", root},
		{"audit log", auditLog},
		{"changes directory", changesDir},
	}
	for _, t := range targets {
		if t.path == "" {
			out = append(out, Check{Name: t.name, Status: StatusOK, Looked: "configuration", Found: "not configured"})
			continue
		}
		out = append(out, RootOnlyPath(t.name, t.path))
	}
	return out
}

// RootOnlyPath judges path, or when it does not exist yet the nearest
// directory above it that does (where bulkhead will create it): every
// existing component from there up must be root's and not writable by
// group or others. Above the first existing one a sticky directory is
// fine (/tmp): others may add entries there but not rename root's.
func RootOnlyPath(name, path string) Check {
	c := Check{Name: name, Looked: path}
	p := filepath.Clean(path)
	note := ""
	first := true
	for {
		st, err := os.Lstat(p)
		if err == nil {
			sticky := !first && st.Mode()&os.ModeSticky != 0
			if why := notRootOnly(st); why != "" && !(sticky && st.Mode()&os.ModeSymlink == 0 && isRoot(st)) {
				c.Status, c.Found = StatusFail, fmt.Sprintf("%s%s: %s", note, p, why)
				c.Fix = fmt.Sprintf("chown root:root %s && chmod go-w %s, or move %s somewhere only root writes", p, p, name)
				return c
			}
			if first && note == "" {
				c.Found = fmt.Sprintf("mode %04o, %s; ", st.Mode().Perm(), OwnerOf(st))
			}
			first = false
		} else if !os.IsNotExist(err) {
			c.Status, c.Found = StatusFail, err.Error()
			return c
		} else if note == "" {
			note = "absent, created by bulkhead on first use; "
			c.Found = note
		}
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	c.Status = StatusOK
	c.Found += "it and every directory above it are writable only by root"
	return c
}

// notRootOnly says why st could be written by someone other than root,
// or "" when only root can. A symlink is followed by whoever opens it, so
// it only matters whose it is; a sticky directory still lets others add
// entries, so it counts as writable.
func notRootOnly(st os.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
		return fmt.Sprintf("owned by uid %d, not root", sys.Uid)
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return ""
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Sprintf("mode %04o lets group or others write", st.Mode().Perm()|st.Mode()&os.ModeSticky)
	}
	return ""
}

func isRoot(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Uid == 0
}

// OwnerOf names the owner of st as uid:gid.
func OwnerOf(st os.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("owner %d:%d", sys.Uid, sys.Gid)
	}
	return "owner unknown"
}
