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
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

// runsc makes an exec's own stdio its terminal and chowns those
// descriptors to the sandbox's user, for good: a root-owned file given as
// stdout became nobody's, and `2>/dev/null` would have given away the
// host's /dev/null. It reads --console-socket only when it detaches
// itself, so an engine's `exec -t -d --console-socket` got no terminal.
// On both backends the caller's terminal, stdout and stderr stay root's
// and the process's output comes through a pty: joined to bulkhead's
// stdio without a console socket (as runc exec -t does), sent to the
// console socket with one.
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
			stillRoots := func(t *testing.T, how string, runErr error) {
				t.Helper()
				for _, f := range []string{slavePath, out.Name(), errOut.Name()} {
					var st syscall.Stat_t
					if err := syscall.Stat(f, &st); err != nil {
						t.Fatal(err)
					}
					if st.Uid != 0 || st.Gid != 0 {
						t.Errorf("%s (%v): %s is now %d:%d's", how, runErr, f, st.Uid, st.Gid)
					}
				}
			}

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binaries.Bulkhead(t), append(g, "exec", "-t", id, "sh", "-c", "echo from-the-tty; exit 3")...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, out, errOut
			runErr := cmd.Run()
			stdout, _ := os.ReadFile(out.Name())
			stderr, _ := os.ReadFile(errOut.Name())
			stillRoots(t, "exec -t", runErr)
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 || !strings.Contains(string(stdout), "from-the-tty") {
				t.Fatalf("exec -t: %v, want the process's status 3 and its output\nstdout: %s\nstderr: %s", runErr, stdout, stderr)
			}

			// An engine's exec: detached, the terminal sent to its socket.
			socket, master := consoleSocket(t)
			cmd = exec.CommandContext(ctx, binaries.Bulkhead(t), append(g, "exec", "-t", "-d", "--console-socket", socket, id, "sh", "-c", "echo via-the-socket; sleep 1")...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, out, errOut
			runErr = cmd.Run()
			stillRoots(t, "exec -t -d --console-socket", runErr)
			if runErr != nil {
				stderr, _ := os.ReadFile(errOut.Name())
				t.Fatalf("exec -t -d --console-socket: %v\n%s", runErr, stderr)
			}
			var m *os.File
			select {
			case m = <-master:
			case <-time.After(30 * time.Second):
			}
			if m == nil {
				t.Fatal("exec -t -d --console-socket: no terminal came to the socket")
			}
			defer m.Close()
			_ = m.SetReadDeadline(time.Now().Add(30 * time.Second))
			var got []byte
			buf := make([]byte, 256)
			for !strings.Contains(string(got), "via-the-socket") {
				n, err := m.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					t.Fatalf("the terminal sent to the socket: %v after %q", err, got)
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

// runsc gives every stdio descriptor to its sandbox's host user (nobody),
// whatever uid the process runs as: a job allowed to run as 1000 (a CI
// runner's user) turned uid 1000's own log, handed as stdout, into
// nobody's, which every default sandbox and the host's nobody services
// run as. runc's init leaves a file of the process's own uid alone, but
// the job could write its own code there and run it (the loader maps a
// file executable whatever its mode, and a noexec mount guards only the
// path the descriptor came by). So such a file is refused at run and at
// exec on both backends, and stays 1000's.
func TestStdioOfTheProcesssUidStaysItsOwn(t *testing.T) {
	needRoot(t, backends...)
	config, _ := workspaceConfig(t, "[profiles.default]\nallowed_uids = [\"1000\"]\nallowed_gids = [\"1000\"]\n")
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			g := []string{"--config", config, "--root", stateRoot(t), "--backend", backend}
			log := filepath.Join(t.TempDir(), "build.log")
			if err := os.WriteFile(log, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(log, 1000, 1000); err != nil {
				t.Fatal(err)
			}
			asUser := func(s *rspec.Spec) { s.Process.User = rspec.User{UID: 1000, GID: 1000} }
			owner := func() uint32 {
				var st syscall.Stat_t
				if err := syscall.Stat(log, &st); err != nil {
					t.Fatal(err)
				}
				return st.Uid
			}
			withLog := func(args ...string) (int, string) {
				f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var stderr strings.Builder
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, binaries.Bulkhead(t), append(g, args...)...)
				cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), f, &stderr
				cmd.WaitDelay = 5 * time.Second
				_ = cmd.Run()
				return cmd.ProcessState.ExitCode(), stderr.String()
			}
			const refusal = "stdout (descriptor 1) is a file the job could write"

			id := uniqueID("own-uid-" + backend)
			code, stderr := withLog("run", "--bundle", bundle.New(t, []string{"sh", "-c", "id -u"}, asUser), id)
			if uid := owner(); uid != 1000 {
				t.Fatalf("run with uid 1000's file as stdout (exit %d): the file is now %d's\n%s", code, uid, stderr)
			}
			if code == 0 || !strings.Contains(stderr, refusal) {
				t.Fatalf("run with uid 1000's file as stdout: exit %d, want %q\n%s", code, refusal, stderr)
			}

			id = uniqueID("own-uid-exec-" + backend)
			if r := bulkhead(t, "", append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "600"}, asUser), id)...); r.code != 0 {
				t.Fatalf("create: exit %d\n%s", r.code, r.stderr)
			}
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			must(t, append(g, "start", id)...)
			code, stderr = withLog("exec", id, "id", "-u")
			if uid := owner(); uid != 1000 {
				t.Fatalf("exec with uid 1000's file as stdout (exit %d): the file is now %d's\n%s", code, uid, stderr)
			}
			if code == 0 || !strings.Contains(stderr, refusal) {
				t.Fatalf("exec with uid 1000's file as stdout: exit %d, want %q\n%s", code, refusal, stderr)
			}
		})
	}
}
