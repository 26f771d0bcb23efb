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
	refusal := func(stdin, stdout string) error {
		j, err := judgeStdio(stdin, stdout, "")
		if j != nil {
			j.release()
		}
		return err
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
		if err := refusal("", ok); err != nil {
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
		if err := refusal(bad, ""); err == nil || !strings.Contains(err.Error(), "is refused") {
			t.Errorf("stdin %q: %v, want it refused", bad, err)
		}
	}
	// A root-owned entry of a sticky directory only root can rename.
	if err := refusal(filepath.Join(sticky, "root", "c4-stdin"), ""); err != nil {
		t.Errorf("root's FIFO in a sticky directory: %v", err)
	}
}

// The task service is handed the FIFO that was judged: a path that leads
// elsewhere by the time it opens the stream (an exec's, at its Start)
// still opens the judged FIFO.
func TestJudgedStreamIsWhatIsOpened(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a stream is judged on a path only root can change")
	}
	dir := t.TempDir()
	path, host := filepath.Join(dir, "c1-stdin"), filepath.Join(dir, "host-file")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var judged unix.Stat_t
	if err := unix.Stat(path, &judged); err != nil {
		t.Fatal(err)
	}
	j, err := judgeStdio(path, "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer j.release()
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, path); err != nil {
		t.Fatal(err)
	}
	stdin, _, _ := j.handed()
	f, err := os.OpenFile(stdin, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var opened unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &opened); err != nil {
		t.Fatal(err)
	}
	if opened.Ino != judged.Ino || opened.Dev != judged.Dev || opened.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("%s opened inode %d (mode %o), not the judged FIFO %d", stdin, opened.Ino, opened.Mode, judged.Ino)
	}
}
