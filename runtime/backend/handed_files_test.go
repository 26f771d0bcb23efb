package backend

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// handedCase opens one real descriptor and says how the judge must
// treat it as stdio and as a preserved fd ("" allowed, otherwise a
// fragment of the refusal).
type handedCase struct {
	name            string
	open            func(t *testing.T) int
	stdio, preserve string
}

// A stdio file the job could write is refused by JudgeStdioOwner, which
// knows when a terminal of the backend's takes its place.
func TestJudgeHandedFile(t *testing.T) {
	cases := []handedCase{
		{"directory", openPath(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY), "a directory", "a directory"},
		{"O_PATH", openPath(tempFile(t), unix.O_PATH), "an O_PATH descriptor", "an O_PATH descriptor"},
		{"O_PATH directory", openPath("/", unix.O_PATH), "an O_PATH descriptor", "an O_PATH descriptor"},
		{"/dev/null", openPath(os.DevNull, unix.O_RDWR), "", ""},
		{"/dev/urandom", openPath("/dev/urandom", unix.O_RDONLY), "", ""},
		{"pipe", openPipe, "", ""},
		{"regular temp file, read-only", openPath(tempFile(t), unix.O_RDONLY), "", ""},
		{"regular temp file, open for writing", openPath(tempFile(t), unix.O_RDWR), "", "open for writing"},
		{"executable temp file, read-only", openPath(programFile(t, t.TempDir(), 0, 0o755), unix.O_RDONLY), "", ""},
		{"temp file others may write, read-only", openPath(programFile(t, t.TempDir(), 0, 0o646), unix.O_RDONLY), "", "lets others than root write it"},
		{"temp file of uid 1000, read-only", openPath(programFile(t, t.TempDir(), 1000, 0o444), unix.O_RDONLY), "", "uid 1000's"},
		{"file on a noexec mount, open for writing", openPath(programFile(t, noexecDir(t), 0, 0o644), unix.O_RDWR), "", "open for writing"},
		{"file whose ACL lets uid 65534 write, read-only", openPath(aclFile(t), unix.O_RDONLY), "", "lets others than root write it"},
		{"memfd", openMemfd(0), "", "open for writing"},
		{"memfd made with MFD_NOEXEC_SEAL", openMemfd(unix.MFD_NOEXEC_SEAL), "", "open for writing"},
		{"memfd sealed against writes", openSealedMemfd, "", ""},
		{"/proc/self/status", openPath("/proc/self/status", unix.O_RDONLY), "pseudo filesystem", "pseudo filesystem"},
		{"a file in /sys/fs/cgroup", openCgroupFile, "pseudo filesystem", "pseudo filesystem"},
		{"eventfd", openEventfd, "anonymous kernel object", "anonymous kernel object"},
		{"pidfd", openPidfd, "pidfd", "pidfd"},
		{"listening unix socket", openListener, "keeps the network it was made in", ""},
		{"connected unix socket", openSocketpair, "keeps the network it was made in", "not listening"},
		{"unconnected TCP socket", openTCPSocket, "an IP socket", "an IP socket"},
		{"listening TCP socket", openTCPListener, "an IP socket", "an IP socket"},
		{"/dev/ptmx", openPath("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY), "pty master", "pty master"},
		{"pty slave", openPtySlave, "", ""},
		{"/dev/kmsg", openPath("/dev/kmsg", unix.O_RDONLY), "character device 1:11", "character device 1:11"},
		{"closed descriptor", openClosed, "not open", "not open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fd := c.open(t)
			for _, stdio := range []bool{true, false} {
				want := c.preserve
				if stdio {
					want = c.stdio
				}
				err := JudgeHandedFile(fd, stdio)
				t.Logf("stdio=%v: %v", stdio, err)
				switch {
				case want == "" && err != nil:
					t.Errorf("stdio=%v: refused: %v", stdio, err)
				case want != "" && err == nil:
					t.Errorf("stdio=%v: allowed, want it refused as %q", stdio, want)
				case want != "" && !strings.Contains(err.Error(), want):
					t.Errorf("stdio=%v: refused with %q, want %q in it", stdio, err, want)
				}
			}
		})
	}
}

// TestJudgeHandedFileNamesWhatToChange: a refusal names the stream or
// flag, the descriptor, what it is and what to hand instead.
func TestJudgeHandedFileNamesWhatToChange(t *testing.T) {
	dir := openPath("/", unix.O_RDONLY|unix.O_DIRECTORY)(t)
	err := JudgeHandedFile(dir, false)
	if err == nil {
		t.Fatal("a directory was allowed as a preserved fd")
	}
	for _, want := range []string{"--preserve-fds", "descriptor " + strconv.Itoa(dir), "a directory (/)", "hand the container a pipe or a file instead"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	// Stdio is named by its stream, whatever the test's own fd 0 is:
	// the judge is asked about a directory put in its place in a child.
	if msg := judgeStdinAs(t, "/"); !strings.Contains(msg, "stdin (descriptor 0) is a directory (/)") {
		t.Errorf("stdin a directory: %q", msg)
	}
	if msg := judgeStdinAs(t, os.DevNull); msg != "ok" {
		t.Errorf("stdin /dev/null: %q", msg)
	}
}

// judgedStdinEnv makes the test binary a child that judges its stdin.
const judgedStdinEnv = "BULKHEAD_TEST_JUDGED_STDIN"

func judgeStdinAs(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := childOutput(f, judgedStdinEnv)
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	return strings.TrimSpace(out)
}

func judgedStdinChild() {
	if err := JudgeHanded(0); err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
		return
	}
	os.Stdout.WriteString("ok\n")
}

func openPath(path string, flags int) func(t *testing.T) int {
	return func(t *testing.T) int {
		t.Helper()
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			t.Skipf("%s does not exist on this host", path)
		}
		if err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
}

func tempFile(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func openPipe(t *testing.T) int {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return int(r.Fd())
}

func openMemfd(flags int) func(t *testing.T) int {
	return func(t *testing.T) int {
		fd, err := unix.MemfdCreate("handed", unix.MFD_CLOEXEC|flags)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
}

func openSealedMemfd(t *testing.T) int {
	fd := openMemfd(unix.MFD_ALLOW_SEALING)(t)
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE); err != nil {
		t.Fatal(err)
	}
	return fd
}

// programFile is a file of mode in dir, owned by uid.
func programFile(t *testing.T, dir string, uid int, mode os.FileMode) string {
	path := filepath.Join(dir, "program")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	return path
}

// aclFile is a file of root's, mode 0644, whose access ACL lets uid 65534
// write it (setfacl's encoding of u::rw-,u:65534:rw-,g::r--,m::rw-,o::r--):
// the mask shows in the group bits.
func aclFile(t *testing.T) string {
	path := programFile(t, t.TempDir(), 0, 0o644)
	entry := func(tag, perm uint16, id uint32) []byte {
		return []byte{byte(tag), byte(tag >> 8), byte(perm), byte(perm >> 8), byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)}
	}
	const undefined = 0xffffffff
	acl := []byte{2, 0, 0, 0}                       // POSIX_ACL_XATTR_VERSION
	acl = append(acl, entry(0x01, 6, undefined)...) // ACL_USER_OBJ rw
	acl = append(acl, entry(0x02, 6, 65534)...)     // ACL_USER 65534 rw
	acl = append(acl, entry(0x04, 4, undefined)...) // ACL_GROUP_OBJ r
	acl = append(acl, entry(0x10, 6, undefined)...) // ACL_MASK rw
	acl = append(acl, entry(0x20, 4, undefined)...) // ACL_OTHER r
	if err := unix.Setxattr(path, "system.posix_acl_access", acl, 0); err != nil {
		t.Fatalf("set an ACL on %s (the unit tests run as root on a filesystem with ACLs): %v", path, err)
	}
	return path
}

// noexecDir is a directory on a tmpfs of its own mounted noexec.
func noexecDir(t *testing.T) string {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatalf("mount a noexec tmpfs (the unit tests run as root): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func openCgroupFile(t *testing.T) int {
	var found string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && found == "" {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	if found == "" {
		t.Skip("no cgroup filesystem mounted at /sys/fs/cgroup")
	}
	return openPath(found, unix.O_RDONLY)(t)
}

func openEventfd(t *testing.T) int {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func openPidfd(t *testing.T) int {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if errors.Is(err, unix.ENOSYS) {
		t.Skip("this kernel has no pidfd_open")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func openListener(t *testing.T) int {
	return listenerFd(t, "unix", filepath.Join(t.TempDir(), "s"))
}

// listenerFd is the descriptor of a socket listening on network's addr.
func listenerFd(t *testing.T, network, addr string) int {
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.(interface{ File() (*os.File, error) }).File()
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return int(f.Fd())
}

func openSocketpair(t *testing.T) int {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0]
}

func openPtySlave(t *testing.T) int {
	master := openPath("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY)(t)
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(master, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	return openPath("/dev/pts/"+strconv.Itoa(int(n)), unix.O_RDWR|unix.O_NOCTTY)(t)
}

func openClosed(t *testing.T) int {
	const fd = 4095
	if _, err := unix.FcntlInt(fd, unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Fatalf("descriptor %d, which no test opens, is open: %v", fd, err)
	}
	return fd
}

// childOutput runs the test binary as the child env names, with stdin
// as its descriptor 0, and returns what it printed.
func childOutput(stdin *os.File, env string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// openTCPListener is a socket listening on the host's loopback: in the
// container it could be bound again to any address of the host's.
func openTCPListener(t *testing.T) int { return listenerFd(t, "tcp", "127.0.0.1:0") }

// openTCPSocket is a socket of the host's network namespace, never
// connected: in the container it would connect from the host's network.
func openTCPSocket(t *testing.T) int {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// A gVisor pod's container is refused at create when containerd's runc
// task service calls, whichever of its shims runs it; gVisor's own shim,
// an engine or a shell may create one.
func TestMemberCallerRefusal(t *testing.T) {
	for exe, refused := range map[string]bool{
		"/usr/bin/containerd-shim-runc-v2":                      true,
		"/usr/bin/containerd-shim-runc-v1":                      true,
		"/usr/bin/containerd-shim":                              true,
		"/usr/local/bin/containerd-shim-bulkhead-v2":            true,
		"/var/tmp/c/containerd-shim-runc-v2 (deleted)":          true,
		"/usr/local/bin/containerd-shim-runsc-v1":               false,
		"/usr/sbin/dockerd":                                     false,
		"/usr/bin/bash":                                         false,
		"/usr/local/bin/containerd-shim-bulkhead-v2-not-a-shim": false,
	} {
		if err := memberCallerRefusal(exe); (err != nil) != refused {
			t.Errorf("%s: %v, want refused %v", exe, err, refused)
		}
	}
}
