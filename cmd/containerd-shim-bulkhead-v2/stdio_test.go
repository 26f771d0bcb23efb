package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A stream is none or a FIFO named as a stream on a path only root can
// change: a URI (binary://, file://), a path of anything else, a FIFO a
// service keeps, and a path through a directory or link the job's uid
// owns or may rename entries of, or through procfs, are refused.
func TestStdioRefusal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the rule is that every step of a stream's path is root's")
	}
	dir := t.TempDir()
	mk := func(parts ...string) string { return filepath.Join(append([]string{dir}, parts...)...) }
	fifo := func(p string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, p string, uid int) string {
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dirOf := func(p string, mode uint32, uid int) string {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := fifo(mk("io", "c1-stdout"))
	if err := os.WriteFile(mk("io", "shadow-stdout"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo(mk("io", "log"))
	link(out, mk("io", "abs-stdout"), 0)
	link("c1-stdout", mk("io", "rel-stdout"), 0)
	link("../"+filepath.Base(dir)+"/io", mk("up"), 0)
	for _, ok := range []string{out, mk("io", "abs-stdout"), mk("io", "rel-stdout"), mk("up", "c1-stdout"), mk("io", ".", "..", "io", "c1-stdout")} {
		if err := stdioRefusal("", ok, ""); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}

	jobs := dirOf(mk("jobs"), 0o755, 65534)
	fifo(filepath.Join(jobs, "c2-stdin"))
	open := dirOf(mk("open"), 0o777, 0)
	fifo(filepath.Join(open, "c3-stdin"))
	sticky := dirOf(mk("sticky"), 0o1777, 0)
	fifo(filepath.Join(sticky, "root", "c4-stdin"))
	if err := os.Chown(filepath.Join(sticky, "root"), 0, 0); err != nil {
		t.Fatal(err)
	}
	link(mk("io"), filepath.Join(sticky, "swapped"), 65534)
	for _, bad := range []string{
		"binary:///bin/sh?-c=id", "file:///etc/cron.d/x", "fifo://" + out, "io/c1-stdout",
		mk("io", "shadow-stdout"), mk("io", "log"), mk("io", "missing-stdout"), mk("io"), "/dev/null",
		filepath.Join(jobs, "c2-stdin"), filepath.Join(open, "c3-stdin"), filepath.Join(sticky, "swapped", "c1-stdout"),
		"/proc/self/root" + out, "/proc/1/root" + out, mk("io", "c1-stdout", "x-stdout"),
	} {
		if err := stdioRefusal(bad, "", ""); err == nil || !strings.Contains(err.Error(), "is refused") {
			t.Errorf("stdin %q: %v, want it refused", bad, err)
		}
	}
	// A root-owned entry of a sticky directory only root can rename.
	if err := stdioRefusal(filepath.Join(sticky, "root", "c4-stdin"), "", ""); err != nil {
		t.Errorf("root's FIFO in a sticky directory: %v", err)
	}
}
