package specs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadRegular: a regular file is read, through a symlink only when
// asked; a FIFO, a device and an oversized file are refused without
// blocking or reading them whole.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "process.json")
	if err := os.WriteFile(file, []byte(`{"args":["true"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, MaxSpecFile+1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		follow bool
		err    string
	}{
		{file, false, ""},
		{link, true, ""},
		{link, false, "is a symlink"},
		{fifo, true, "not a regular file"},
		{"/dev/zero", true, "not a regular file"},
		{huge, true, "more than"},
		{filepath.Join(dir, "none"), true, "no such file"},
	} {
		data, err := ReadRegular(c.path, c.follow)
		switch {
		case c.err == "" && (err != nil || !strings.Contains(string(data), "true")):
			t.Errorf("%s (follow %v): %q, %v", c.path, c.follow, data, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s (follow %v): error %v, want one saying %q", c.path, c.follow, err, c.err)
		}
	}
}
