// Package vforkpark builds a static program whose processes wait in vfork
// for ever, as a workload can keep them to stall what reads them.
package vforkpark

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed testdata/vforkpark.c
var source []byte

// Build compiles testdata/vforkpark.c with gcc, statically so that it runs in any
// rootfs, and returns the program's path. Only C can do it: a vfork child
// must run nothing but pause(), which Go's runtime cannot promise, and Go
// may run main on a thread other than the one a reader stops. The test is
// skipped when gcc is not installed.
func Build(t testing.TB) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("needs gcc to build the vfork program (apt-get install gcc): %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "vforkpark.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "vforkpark")
	if out, err := exec.Command(gcc, "-static", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc -static vforkpark.c: %v\n%s", err, out)
	}
	return bin
}
