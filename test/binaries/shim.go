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

var shim struct {
	once sync.Once
	path string
	err  error
}

// Shim is the path of containerd-shim-bulkhead-v2, next to bulkhead (the
// shim looks for bulkhead in its own directory first). `make build` puts it
// in $BULKHEAD_BIN; otherwise it is built once per test process into Dir.
func Shim(t testing.TB) string {
	t.Helper()
	dir := Dir(t)
	shim.once.Do(func() {
		shim.path = filepath.Join(dir, "containerd-shim-bulkhead-v2")
		if _, err := os.Stat(shim.path); err == nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", shim.path, "./cmd/containerd-shim-bulkhead-v2")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			shim.err = fmt.Errorf("go build ./cmd/containerd-shim-bulkhead-v2: %v\n%s", err, out)
		}
	})
	if shim.err != nil {
		t.Fatal(shim.err)
	}
	return shim.path
}

// RunscShim is the path of containerd-shim-bulkhead-runsc-v2, a symlink to
// the shim (made here when `make build` did not): containerd runs it for
// io.containerd.bulkhead-runsc.v2, and its name makes the shim run
// bulkhead-runsc, which selects gVisor.
func RunscShim(t testing.TB) string {
	t.Helper()
	target := Shim(t)
	link := filepath.Join(filepath.Dir(target), "containerd-shim-bulkhead-runsc-v2")
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(filepath.Base(target), link); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	return link
}
