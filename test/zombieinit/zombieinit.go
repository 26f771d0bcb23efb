// Package zombieinit builds a static program whose leader thread exits
// while another thread of it runs on, as a job can end its main thread to
// look stopped.
package zombieinit

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed testdata/zombieinit.c
var source []byte

// Build compiles testdata/zombieinit.c with gcc, statically so that it
// runs in any rootfs, and returns the program's path. Only C can do it:
// Go's runtime does not let main's thread exit alone. The test is skipped
// when gcc is not installed (hack/install-deps.sh installs it).
func Build(t testing.TB) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("needs gcc to build the zombie-leader program (apt-get install gcc): %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "zombieinit.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "zombieinit")
	if out, err := exec.Command(gcc, "-static", "-O2", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc -static zombieinit.c: %v\n%s", err, out)
	}
	return bin
}
