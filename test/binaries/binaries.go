// Package binaries gives integration tests the bulkhead binaries: those
// `make build` put in $BULKHEAD_BIN, or, when that is unset, ones built
// once per test process from this checkout.
package binaries

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once    sync.Once
	dir     string
	buildEr error
)

// Dir returns a directory holding bulkhead, bulkhead-runsc,
// bulkhead-probe, bulkhead-seccomp-exec, bulkhead-egress-forward and
// bulkhead-egress-broker.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("BULKHEAD_BIN"); d != "" {
		return d
	}
	once.Do(func() { dir, buildEr = build() })
	if buildEr != nil {
		t.Fatal(buildEr)
	}
	return dir
}

// Bulkhead is the path of the bulkhead binary.
func Bulkhead(t testing.TB) string { return filepath.Join(Dir(t), "bulkhead") }

// Probe is the path of the static bulkhead-probe binary.
func Probe(t testing.TB) string { return filepath.Join(Dir(t), "bulkhead-probe") }

func build() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	out, err := os.MkdirTemp("", "bulkhead-bin-")
	if err != nil {
		return "", err
	}
	// The egress broker runs bulkhead as its own unprivileged user, as
	// from bin/ or /usr/local/bin: MkdirTemp's 0700 refused it the exec.
	if err := os.Chmod(out, 0o755); err != nil {
		return "", err
	}
	steps := []struct {
		env  []string
		args []string
	}{
		{nil, []string{"build", "-tags", "urfave_cli_no_docs", "-o", filepath.Join(out, "bulkhead"), "./cmd/bulkhead"}}, // as the Makefile builds it
		{[]string{"CGO_ENABLED=0"}, []string{"build", "-o", filepath.Join(out, "bulkhead-probe"), "./cmd/bulkhead-probe"}},
		{[]string{"CGO_ENABLED=0"}, []string{"build", "-o", filepath.Join(out, "bulkhead-seccomp-exec"), "./cmd/bulkhead-seccomp-exec"}},
		{[]string{"CGO_ENABLED=0"}, []string{"build", "-o", filepath.Join(out, "bulkhead-egress-forward"), "./cmd/bulkhead-egress-forward"}},
		{nil, []string{"build", "-o", filepath.Join(out, "bulkhead-egress-broker"), "./cmd/bulkhead-egress-broker"}},
	}
	for _, s := range steps {
		cmd := exec.Command("go", s.args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), s.env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %v: %v\n%s", s.args, err, b)
		}
	}
	return out, os.Symlink("bulkhead", filepath.Join(out, "bulkhead-runsc"))
}
