package specs

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mksock makes a socket file at p (a bound socket's inode, as a service
// leaves it), with its parent directories.
func mksock(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(p, unix.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}
}

func openPath(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// TestFindChannelThroughDescriptor: the search walks the tree that was
// opened. Once the source is open, the caller moves that tree away and
// puts a harmless one under its name: the socket deep in the opened tree,
// which is what would be mounted, is still found.
func TestFindChannelThroughDescriptor(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	mksock(t, filepath.Join(src, "a/b/c/d/e/agent.sock"))
	fd := openPath(t, src)
	if err := os.Rename(src, filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(src, "a/b/c/d/e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := (&Context{}).findChannel(src); err != nil || got != "" {
		t.Fatalf("the harmless tree now at the name: %q %v, want none", got, err)
	}
	got, err := findChannelAt(fd, src)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(src, "a/b/c/d/e/agent.sock"); got != want {
		t.Fatalf("through the descriptor: %q, want %q", got, want)
	}
}

// TestFindChannelNoSymlink: a symlink in the tree is not followed, to a
// directory holding a socket or to a socket: in the sandbox it resolves in
// the sandbox's own root, not the host's. A socket in the tree itself is
// found, and a source that is a socket is one.
func TestFindChannelNoSymlink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	mksock(t, filepath.Join(outside, "docker.sock"))
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"sub/dir": outside, "sub/sock": filepath.Join(outside, "docker.sock"), "sub/rel": "../../outside"} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := findChannelAt(openPath(t, src), src); err != nil || got != "" {
		t.Fatalf("symlinks followed: %q %v, want none", got, err)
	}
	if got, err := (&Context{}).findChannel(src); err != nil || got != "" {
		t.Fatalf("symlinks followed by name: %q %v, want none", got, err)
	}
	mksock(t, filepath.Join(src, "sub/deeper/own.sock"))
	if got, err := (&Context{}).findChannel(src); err != nil || got != filepath.Join(src, "sub/deeper/own.sock") {
		t.Fatalf("the tree's own socket: %q %v", got, err)
	}
	sock := filepath.Join(outside, "docker.sock")
	if got, err := (&Context{}).findChannel(sock); err != nil || got != sock {
		t.Fatalf("a source that is a socket: %q %v", got, err)
	}
	if got, err := (&Context{}).findChannel(filepath.Join(dir, "absent")); err != nil || got != "" {
		t.Fatalf("an absent source: %q %v", got, err)
	}
}

// TestFindChannelFIFO: a FIFO in the tree is found as a socket is (a
// read-only mount does not stop a write to it, which a host process
// reads), and so is a source that is one.
func TestFindChannelFIFO(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := (&Context{}).findChannel(src); err != nil || got != "" {
		t.Fatalf("a tree without one: %q %v", got, err)
	}
	fifo := filepath.Join(src, "a/b/pipe")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	if got, err := findChannelAt(openPath(t, src), src); err != nil || got != fifo {
		t.Fatalf("the tree's FIFO: %q %v, want %q", got, err, fifo)
	}
	if got, err := (&Context{}).findChannel(fifo); err != nil || got != fifo {
		t.Fatalf("a source that is a FIFO: %q %v", got, err)
	}
}

// TestFindChannelOncePerContainer: one create walks a tree once, when
// planned, and answers the pin's judgement of the same directory, opened,
// from that walk, under the name the pin gives it; a socket at the top is
// remembered as found, not as a clean tree. Another create walks again.
func TestFindChannelOncePerContainer(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Context{}
	if got, err := c.findChannel(src); err != nil || got != "" {
		t.Fatalf("a tree without one: %q %v", got, err)
	}
	fifo := filepath.Join(src, "a", "pipe")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	if got, err := c.findChannelAt(openPath(t, src), "/pinned"); err != nil || got != "" {
		t.Errorf("the same create's second look: %q %v, want the first walk's answer", got, err)
	}
	if got, err := (&Context{}).findChannelAt(openPath(t, src), "/pinned"); err != nil || got != "/pinned/a/pipe" {
		t.Errorf("another create's walk: %q %v, want /pinned/a/pipe", got, err)
	}
	if got, err := c.findChannel(fifo); err != nil || got != fifo {
		t.Fatalf("a FIFO at the top: %q %v", got, err)
	}
	if got, err := c.findChannelAt(openPath(t, fifo), "/top"); err != nil || got != "/top" {
		t.Errorf("a FIFO at the top, asked again: %q %v, want it found", got, err)
	}
}

// A file bound by one name is refused when it has another: the rules
// judge names, and the other may be a credential they refuse.
func TestBindSourceHardLink(t *testing.T) {
	root := t.TempDir()
	key := filepath.Join(root, "u", ".ssh", "id_rsa")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(root, "plain")
	if err := os.WriteFile(plain, []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(key, filepath.Join(root, "key")); err != nil {
		t.Fatal(err)
	}
	if why := hardLinkRefusal(filepath.Join(root, "key"), -1); !strings.Contains(why, "2 names") {
		t.Errorf("a hard link to a key: %q, want it refused", why)
	}
	if why := hardLinkRefusal(plain, -1); why != "" {
		t.Errorf("a file with one name: refused: %s", why)
	}
	if why := hardLinkRefusal(root, -1); why != "" {
		t.Errorf("a directory: refused: %s", why)
	}
	// Opened, then a file with one name swapped in under the link's name:
	// what was opened is what counts.
	fd, err := unix.Open(filepath.Join(root, "key"), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Renameat2(unix.AT_FDCWD, plain, unix.AT_FDCWD, filepath.Join(root, "key"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	if why := hardLinkRefusal(filepath.Join(root, "key"), fd); !strings.Contains(why, "2 names") {
		t.Errorf("an opened hard link whose name now holds a file with one name: %q, want it refused", why)
	}
}

// TestFindChannelPastOneRead: a directory whose entries take several
// reads of the walk's buffer, its subdirectories listed among them, and a
// socket in the last subdirectory listed and a FIFO in the first: each is
// found, whichever the walk meets first, and a clean tree is clean.
func TestFindChannelPastOneRead(t *testing.T) {
	src := t.TempDir()
	long := strings.Repeat("n", 200)
	for i := range 1500 { // some 330 KiB of entries
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("%s-%04d", long, i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			if err := os.Mkdir(filepath.Join(src, fmt.Sprintf("dir-%04d", i)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, err := findChannelAt(openPath(t, src), src); err != nil || got != "" {
		t.Fatalf("a clean tree: %q %v", got, err)
	}
	sock := filepath.Join(src, "dir-1400", "deep", "agent.sock")
	mksock(t, sock)
	if got, err := findChannelAt(openPath(t, src), src); err != nil || got != sock {
		t.Fatalf("the socket in the last directory: %q %v, want %q", got, err, sock)
	}
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(src, "dir-0000", "pipe")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	if got, err := findChannelAt(openPath(t, src), src); err != nil || got != fifo {
		t.Fatalf("the FIFO in the first directory: %q %v, want %q", got, err, fifo)
	}
}

// TestDirentRefusesMalformed: an entry getdents could not have written
// (a length that runs past the bytes read or does not cover its own
// header) ends the read instead of being read past its end.
func TestDirentRefusesMalformed(t *testing.T) {
	entry := make([]byte, 32)
	binary.NativeEndian.PutUint64(entry, 7)
	entry[18] = unix.DT_SOCK
	copy(entry[19:], "s.sock\x00")
	for _, c := range []struct {
		reclen uint16
		bytes  int
		ok     bool
	}{{32, 32, true}, {40, 32, false}, {19, 32, false}, {0, 32, false}, {32, 18, false}} {
		binary.NativeEndian.PutUint16(entry[16:], c.reclen)
		ino, typ, name, next, ok := dirent(entry[:c.bytes], 0)
		if ok != c.ok {
			t.Errorf("reclen %d in %d bytes: ok %v, want %v", c.reclen, c.bytes, ok, c.ok)
		}
		if ok && (ino != 7 || typ != unix.DT_SOCK || string(name) != "s.sock" || next != 32) {
			t.Errorf("read %d %d %q %d", ino, typ, name, next)
		}
	}
}

// TestEntryTypeWithoutDType: on a file system that gives no d_type the
// inode says what the entry is.
func TestEntryTypeWithoutDType(t *testing.T) {
	src := t.TempDir()
	mksock(t, filepath.Join(src, "s"))
	if err := unix.Mkfifo(filepath.Join(src, "p"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for name, want := range map[string]uint8{"s": unix.DT_SOCK, "p": unix.DT_FIFO, "d": unix.DT_DIR, "gone": 0} {
		if got, err := entryType(fd, []byte(name), unix.DT_UNKNOWN); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", name, got, err, want)
		}
	}
}
