package test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/binaries"
)

// result is what one bulkhead invocation printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// needRoot skips a test that needs root and a backend binary, saying why.
func needRoot(t *testing.T, backends ...string) {
	t.Helper()
	binaries.NeedRoot(t, backends...)
}

// bulkhead runs the bulkhead binary with args and stdin.
func bulkhead(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := binaries.Cmd{Stdin: stdin}.Run(t, binaries.Bulkhead(t), args...)
	return result{r.Stdout, r.Stderr, r.Code}
}

// must runs bulkhead and fails the test on a non-zero exit.
func must(t *testing.T, args ...string) string {
	t.Helper()
	r := bulkhead(t, "", args...)
	if r.code != 0 {
		t.Fatalf("bulkhead %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// pause pauses id as an engine does: runc 1.1's cgroup v1 freezer gives
// up ("unable to freeze") when the group does not settle while the
// machine is busy, and thaws it again, so an engine pauses again.
func pause(t *testing.T, g []string, id string) {
	t.Helper()
	for i := 0; ; i++ {
		r := bulkhead(t, "", append(g, "pause", id)...)
		if r.code == 0 {
			return
		}
		if i == 4 || !strings.Contains(r.stderr, "unable to freeze") {
			t.Fatalf("pause %s: exit %d\n%s", id, r.code, r.stderr)
		}
		time.Sleep(time.Second)
	}
}

// stateRoot makes a fresh --root for one test and removes it afterwards.
func stateRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	return root
}

// consoleSocket listens where a backend sends the pty master of a
// terminal container, as containerd's shim does, and delivers the master.
func consoleSocket(t *testing.T) (string, <-chan *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "console.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *os.File, 1)
	go func() {
		defer ln.Close()
		_ = ln.SetDeadline(time.Now().Add(time.Minute))
		conn, err := ln.AcceptUnix()
		if err != nil {
			ch <- nil
			return
		}
		defer conn.Close()
		ch <- recvFd(conn)
	}()
	return path, ch
}

// recvFd receives one file descriptor sent with SCM_RIGHTS, as the
// backend sends the pty master.
func recvFd(conn *net.UnixConn) *os.File {
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := conn.ReadMsgUnix(make([]byte, 4096), oob)
	if err != nil {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil
	}
	return os.NewFile(uintptr(fds[0]), "pty-master")
}

// readUntil reads from f until want appears or 20 s pass.
func readUntil(t *testing.T, f *os.File, want string) string {
	t.Helper()
	var got strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 256)
		for !strings.Contains(got.String(), want) {
			n, err := f.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("waited 20 s for %q, read %q", want, got.String())
	}
	return got.String()
}

// bulkheadWithFiles runs bulkhead with extra open files at fds 3, 4, …
// bulkheadWithStdin runs bulkhead with stdin as its descriptor 0.
func bulkheadWithStdin(t *testing.T, stdin *os.File, args ...string) result {
	t.Helper()
	r := binaries.Cmd{StdinFile: stdin}.Run(t, binaries.Bulkhead(t), args...)
	return result{r.Stdout, r.Stderr, r.Code}
}

func bulkheadWithFiles(t *testing.T, files []*os.File, args ...string) result {
	t.Helper()
	r := binaries.Cmd{ExtraFiles: files}.Run(t, binaries.Bulkhead(t), args...)
	return result{r.Stdout, r.Stderr, r.Code}
}

// uniqueID names a container after what it tests and this test process:
// gVisor's control socket is named after the id host-wide, so two test
// runs must not share ids.
func uniqueID(name string) string {
	return fmt.Sprintf("%s-%d", name, os.Getpid())
}

// onEachBackend runs body once per backend, as a subtest that needs root
// and that backend, with a fresh state root and the global flags naming
// both.
func onEachBackend(t *testing.T, body func(t *testing.T, backend, root string, g []string)) {
	t.Helper()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			body(t, backend, root, []string{"--root", root, "--backend", backend})
		})
	}
}
