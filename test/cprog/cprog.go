// Package cprog builds the C programs tests run in containers: static,
// so that they run in any rootfs, for what only C can do (Go's runtime
// decides on its own threads and forks).
package cprog

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build compiles source, named name.c, with gcc -static and flags, and
// returns the program's path. The test is skipped when gcc is not
// installed (hack/install-deps.sh installs it).
func Build(t testing.TB, name string, source []byte, flags ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("needs gcc to build %s.c (apt-get install gcc): %v", name, err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	args := append([]string{"-static", "-O2"}, flags...)
	if out, err := exec.Command(gcc, append(args, "-o", bin, src)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc -static %s.c: %v\n%s", name, err, out)
	}
	return bin
}
