package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/specs"
)

// DefaultRoot is bulkhead's state root when the caller passes no --root.
const DefaultRoot = "/run/bulkhead"

// DirName is the directory below the caller's root that holds
// bulkhead's own records; each backend gets a sibling named after it.
const DirName = "bulkhead"

// validID is runc's rule for container ids; anything else could escape the
// state directory through the path.
var validID = regexp.MustCompile(`^[\w+\-.]+$`)

// CheckID refuses ids that are not safe as one path component, and ids a
// backend would read as a flag (runc's rule allows a leading '-'; "--" and
// "--all" are flags to it, whatever bulkhead made of them).
func CheckID(id string) error {
	if id == "" {
		return fmt.Errorf("container id is empty")
	}
	if !validID.MatchString(id) || id == "." || id == ".." {
		return fmt.Errorf("invalid container id %q: use letters, digits, '_', '+', '-' and '.'", id)
	}
	if strings.HasPrefix(id, "-") {
		return fmt.Errorf("invalid container id %q: an id must not begin with '-', which a backend reads as a flag", id)
	}
	return nil
}

// BackendRoot is the --root handed to a backend: its own directory below
// the caller's root, so two backends never share state.
func BackendRoot(root, backend string) string {
	return filepath.Join(root, backend)
}

func Dir(root string) string {
	return filepath.Join(root, DirName)
}

// JudgeRoot refuses a state root that others than root could change: a
// record or a backend's state put there by its owner would be acted on
// by root's verbs (delete kills the process a record names and removes
// its cgroup). The deepest part of the root that exists is judged with
// every directory above it as the configuration file is (specs.RootPlace,
// where a sticky directory on the way is enough), and the root itself and
// what bulkhead and the backends keep directly in it (bulkhead/, runc/,
// runsc/) must be root's and writable by no one else: a sticky root lets
// anyone add a backend's directory of their own making.
func JudgeRoot(root string) error { return judgeRoot(root, false) }

// judgeRootMade is JudgeRoot once the root has been made: a part of it
// gone since (renamed away by the owner of a directory above it, to be
// put back once judged) is refused, not judged as absent.
func judgeRootMade(root string) error { return judgeRoot(root, true) }

func judgeRoot(root string, made bool) error {
	p := Dir(root)
	for {
		_, err := os.Lstat(p)
		if !errors.Is(err, os.ErrNotExist) || p == filepath.Dir(p) {
			break
		}
		if made {
			return fmt.Errorf("--root %s: %s went away as it was made", root, p)
		}
		p = filepath.Dir(p)
	}
	if _, err := judgePlace(root, p); err != nil {
		return err
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--root %s: %w", root, err)
	}
	dirs := []string{root}
	for _, e := range entries {
		dirs = append(dirs, filepath.Join(root, e.Name()))
	}
	for _, d := range dirs {
		real, err := judgePlace(root, d)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Stat(real, &st); err != nil {
			return fmt.Errorf("--root %s: %w", root, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR && !specs.OnlyRootWrites(&st) {
			return fmt.Errorf("--root %s: %s (uid %d, mode %04o) can be changed by others than root, who could put records or a backend's state there for root's verbs to act on (delete kills the process a record names); keep the state where only root may change it",
				root, d, st.Uid, st.Mode&0o7777)
		}
	}
	return nil
}

// judgePlace judges p, part of the state root, and every directory above
// it (specs.RootPlace), and says where p leads.
func judgePlace(root, p string) (real string, err error) {
	real, why, err := specs.RootPlace(p)
	if err != nil {
		return "", fmt.Errorf("--root %s: %w", root, err)
	}
	if why != "" {
		return "", fmt.Errorf("--root %s: %s can be changed by others than root, who could put records there for root's verbs to act on (delete kills the process a record names); keep the state where only root may change it", root, why)
	}
	return real, nil
}
