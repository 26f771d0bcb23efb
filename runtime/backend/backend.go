package backend

import (
	"context"
	"os/exec"
	"path/filepath"
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
