package backend

import (
	"context"
	"fmt"
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
	// Declared is the kind the configuration states (kind = ...), "" for
	// one its name or binary's name tells.
	Declared string
}

// Kinds are the runtimes bulkhead knows how to drive and verify.
var Kinds = []string{"runc", "runsc", "crun"}

// KindOf is the kind a backend named name with binary path is: the one
// its name and its binary's file name say where either is exactly one
// (both must say the same), and the declared one, which must agree with
// them, where neither says. An error for none, for two, or for a declared
// kind they contradict: such a backend is refused at load, since a gVisor
// binary taken for runc would be ranked as runc (a job could move off
// gVisor) and verified as runc, and a backend named runsc that runs runc
// would be what bulkhead-runsc and the gvisor profile hand containers to.
func KindOf(name, path, declared string) (string, error) {
	var told []string
	for _, k := range Kinds {
		if name == k || filepath.Base(path) == k {
			told = append(told, k)
		}
	}
	switch {
	case declared != "" && !slices.Contains(Kinds, declared):
		return "", fmt.Errorf("kind %q is none of %s", declared, strings.Join(Kinds, ", "))
	case len(told) > 1:
		return "", fmt.Errorf("its name and its binary say %s: name the backend as the runtime its path runs, or point path at the runtime its name says", strings.Join(told, " and "))
	case declared != "" && len(told) == 1 && told[0] != declared:
		return "", fmt.Errorf("kind %q, but its name or binary says %s", declared, told[0])
	case len(told) == 1:
		return told[0], nil
	case declared != "":
		return declared, nil
	default:
		return "", fmt.Errorf("neither its name nor its binary %s says which runtime it is; set kind to one of %s", filepath.Base(path), strings.Join(Kinds, ", "))
	}
}

// Kind is the runtime a backend is, whatever the administrator named it:
// runsc, crun or runc. Flags, translation and verification follow the
// kind, so [backends.runc-next] with path = "/opt/runc" is still runc.
func (b *Backend) Kind() string {
	if k, err := KindOf(b.Name, b.Path, b.Declared); err == nil {
		return k
	}
	// Loading refuses such a backend; one made otherwise is driven as
	// runc, the strictest to verify from the host.
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
