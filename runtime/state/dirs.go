package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

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
// its cgroup). The deepest part of the root that exists is judged, with
// every directory above it, as the configuration file is.
func JudgeRoot(root string) error {
	p := Dir(root)
	for {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) || p == filepath.Dir(p) {
			break
		}
		p = filepath.Dir(p)
	}
	_, why, err := specs.RootPlace(p)
	if err != nil {
		return fmt.Errorf("--root %s: %w", root, err)
	}
	if why != "" {
		return fmt.Errorf("--root %s: %s can be changed by others than root, who could put records there for root's verbs to act on (delete kills the process a record names); keep the state where only root may change it", root, why)
	}
	return nil
}
