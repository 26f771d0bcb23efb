// Package fstree describes a directory tree for tests that must show a
// host folder unchanged, or two trees equal: one line per path, sorted.
package fstree

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Entry is one path below the tree's root, as Lstat sees it.
type Entry struct {
	Rel    string      // path relative to the root, "." for the root
	Info   fs.FileInfo // from Lstat: a symlink is described, never followed
	SHA256 string      // of a regular file's content
	Target string      // of a symlink
}

// Lines walks root and formats each entry with format, sorted; an entry
// for which format returns "" is left out.
func Lines(t testing.TB, root string, format func(Entry) string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := Entry{Info: fi}
		e.Rel, _ = filepath.Rel(root, p)
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			e.SHA256 = hex.EncodeToString(sum[:])
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Target, _ = os.Readlink(p)
		}
		if line := format(e); line != "" {
			lines = append(lines, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return lines
}

// Hash is the sha256 of Lines.
func Hash(t testing.TB, root string, format func(Entry) string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(strings.Join(Lines(t, root, format), "\n")))
	return hex.EncodeToString(sum[:])
}
