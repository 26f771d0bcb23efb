package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A directory the sandbox marked user.overlay.opaque is not opaque: the
// kernel ignores that attribute on bulkhead's overlay, so diff must too.
// trusted.overlay.opaque, which only overlayfs (or root) writes, is.
func TestOpaqueOnlyTrusted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to set trusted.* attributes")
	}
	dir := t.TempDir()
	for _, d := range []string{"user", "trusted"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Setxattr(filepath.Join(dir, d), d+".overlay.opaque", []byte("y"), 0); err != nil {
			t.Skipf("this filesystem has no %s xattrs: %v", d, err)
		}
	}
	l, err := openLayer(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.root.Close()
	if l.opaque("user") {
		t.Error("a user.overlay.opaque set by the sandbox made the directory opaque")
	}
	if !l.opaque("trusted") {
		t.Error("trusted.overlay.opaque not recognised")
	}
}

// A fifo where a file was listed is refused at once, not waited on.
func TestReadFileFifoDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "f"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := openLayer(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.root.Close()
	if _, err := l.readSmall("f", nil, 1<<20); err == nil {
		t.Fatal("a fifo was read as a file")
	}
}
