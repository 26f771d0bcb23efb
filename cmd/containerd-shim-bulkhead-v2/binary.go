package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// binaryEnv carries the resolved runtime binary from the `start` action to
// the long-running shim it spawns: the runc manager re-executes
// os.Executable() (the resolved file, so a symlink's name is lost) with the
// environment of `start`.
const binaryEnv = "BULKHEAD_SHIM_RUNTIME"

// runtimeName derives the runtime binary's name from the shim's own:
// containerd-shim-bulkhead-v2 runs bulkhead, a symlink named
// containerd-shim-bulkhead-runsc-v2 (runtime_type
// io.containerd.bulkhead-runsc.v2) runs bulkhead-runsc, whose name selects
// gVisor.
func runtimeName(argv0 string) string {
	base := filepath.Base(argv0)
	name := strings.TrimSuffix(strings.TrimPrefix(base, "containerd-shim-"), "-v2")
	if name == "" || name == base || !strings.HasPrefix(name, "bulkhead") {
		return "bulkhead"
	}
	return name
}

// runtimeFromEnv is the runtime binary of the long-running shim: the one
// `start` resolved and passed in binaryEnv, else found as `start` finds it.
func runtimeFromEnv() (string, error) {
	if p := os.Getenv(binaryEnv); p != "" {
		if !filepath.IsAbs(p) {
			return "", fmt.Errorf("%s=%q is not an absolute path", binaryEnv, p)
		}
		return p, executable(p)
	}
	return findRuntime(runtimeName(""))
}

// findRuntime returns the absolute path of the runtime binary NAME: next
// to the shim's own executable (as invoked, then resolved), else on PATH.
// It never reads binaryEnv: that comes from containerd's environment when
// `start` runs, and only `start` itself may set it.
func findRuntime(name string) (string, error) {
	var dirs []string
	if filepath.IsAbs(os.Args[0]) {
		dirs = append(dirs, filepath.Dir(os.Args[0]))
	}
	if self, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(self))
		if real, err := filepath.EvalSymlinks(self); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("runtime %s: not next to the shim (%s) nor on PATH: %w", name, strings.Join(dirs, ", "), err)
	}
	return filepath.Abs(p)
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return errors.New(p + " is not an executable file")
	}
	return nil
}
