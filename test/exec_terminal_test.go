package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/console"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// `exec -t` without a console socket: runc makes a pty of its own and
// proxies the caller's stdio to it, but runsc makes the caller's own
// descriptors the process's terminal and chowns them to the sandbox's
// user, for good: a root-owned file given as stdout became nobody's, and
// `2>/dev/null` would have given away the host's /dev/null. The caller's
// terminal, stdout and stderr stay root's on both backends; runsc's exec
// is refused, runc's runs.
func TestExecTerminalKeepsTheCallersStdio(t *testing.T) {
	needRoot(t, backends...)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			g := []string{"--root", stateRoot(t), "--backend", backend}
			id := uniqueID("exec-tty-" + backend)
			if r := bulkhead(t, "", append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "600"}), id)...); r.code != 0 {
				t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
			}
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			must(t, append(g, "start", id)...)

			pty, slavePath, err := console.NewPty()
			if err != nil {
				t.Fatal(err)
			}
			defer pty.Close()
			slave, err := os.OpenFile(slavePath, os.O_RDWR|syscall.O_NOCTTY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer slave.Close()
			dir := t.TempDir()
			out, errOut := rootFile(t, filepath.Join(dir, "out")), rootFile(t, filepath.Join(dir, "err"))

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binaries.Bulkhead(t), append(g, "exec", "-t", id, "echo", "from-the-tty")...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, out, errOut
			runErr := cmd.Run()
			stdout, _ := os.ReadFile(out.Name())
			stderr, _ := os.ReadFile(errOut.Name())

			for _, f := range []string{slavePath, out.Name(), errOut.Name()} {
				var st syscall.Stat_t
				if err := syscall.Stat(f, &st); err != nil {
					t.Fatal(err)
				}
				if st.Uid != 0 || st.Gid != 0 {
					t.Errorf("exec -t (%v): %s is now %d:%d's\nstderr: %s", runErr, f, st.Uid, st.Gid, stderr)
				}
			}
			switch backend {
			case "runc":
				if runErr != nil || !strings.Contains(string(stdout), "from-the-tty") {
					t.Fatalf("exec -t on runc, whose pty is its own: %v\nstdout: %s\nstderr: %s", runErr, stdout, stderr)
				}
			default:
				if runErr == nil || !strings.Contains(string(stderr), "stdin (descriptor 0) is a pty slave") {
					t.Fatalf("exec -t on runsc without a console socket: %v, want a refusal naming stdin\nstdout: %s\nstderr: %s", runErr, stdout, stderr)
				}
			}
		})
	}
}

// rootFile creates a regular file of root's that anyone may read, as a
// log a caller redirects output to would be.
func rootFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
