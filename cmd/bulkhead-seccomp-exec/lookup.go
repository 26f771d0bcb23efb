package main

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// lookup resolves name as runsc exec resolves a process's args[0]
// (gVisor's user.ResolveExecutablePath): a name with a slash is taken as
// it is (relative to the working directory, which execve applies); any
// other is searched in the first PATH of the process's own environment,
// skipping relative entries, for a regular file the process may read and
// execute. Without a PATH nothing is found, as in runsc.
func lookup(name string, env []string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty command name")
	}
	if strings.Contains(name, "/") {
		// A path that names nothing is not found, as a shell says (127);
		// one that cannot run is execve's to answer (126).
		var st unix.Stat_t
		if err := unix.Stat(name, &st); errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return name, nil
	}
	var dirs []string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			dirs = strings.Split(v, ":")
			break
		}
	}
	for _, d := range dirs {
		if !path.IsAbs(d) {
			continue
		}
		if p := path.Join(d, name); runnable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in PATH %q", name, strings.Join(dirs, ":"))
}

func runnable(p string) bool {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	return unix.Access(p, unix.R_OK|unix.X_OK) == nil
}
