package runtime

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Backend is one OCI runtime bulkhead hands containers to.
type Backend struct {
	Name string
	// Path is the resolved absolute path of the binary.
	Path string
	// Args come from the configuration and go before every verb.
	Args []string
}

// ResolveBackend finds the binary of the named backend the way an engine
// would: an absolute path as is, a bare name through PATH.
func (c *Config) ResolveBackend(name string) (*Backend, error) {
	bc, ok := c.Backends[name]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q: configured backends are %s", name, strings.Join(sortedKeys(c.Backends), ", "))
	}
	path, err := exec.LookPath(bc.Path)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	return &Backend{Name: name, Path: path, Args: bc.Args}, nil
}

// Kind is the runtime a backend is, whatever the administrator named it:
// runsc, crun or runc. Flags, translation and verification follow the
// kind, so [backends.runc-next] with path = "/opt/runc" is still runc.
func (b *Backend) Kind() string {
	for _, kind := range []string{"runsc", "crun"} {
		if b.Name == kind || filepath.Base(b.Path) == kind {
			return kind
		}
	}
	return "runc"
}

// IsGVisor tells whether the backend is runsc, whose flags and host-side
// view differ from runc's.
func (b *Backend) IsGVisor() bool {
	return b.Kind() == "runsc"
}

// Version asks the backend for its version line.
func (b *Backend) Version() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.Path, "--version").Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
