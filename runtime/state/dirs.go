package state

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
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
