package test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/console"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/cgroups"
	"bulkhead.dev/bulkhead/runtime"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
)

var backends = []string{"runc", "runsc"}

// state is the part of `state` output the tests read.
type state struct {
	ID     string `json:"id"`
	Pid    int    `json:"pid"`
	Status string `json:"status"`
}

func containerState(t *testing.T, g []string, id string) state {
	t.Helper()
	var s state
	out := must(t, append(g, "state", id)...)
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("state %s is not JSON: %v\n%s", id, err, out)
	}
	return s
}

func waitStatus(t *testing.T, g []string, id, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := containerState(t, g, id)
		if s.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s: status %q, want %q", id, s.Status, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertGone checks that nothing of a deleted container remains: no
// record or state directory of bulkhead's, no backend state, no cgroup.
func assertGone(t *testing.T, root, backend, id string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
		t.Errorf("bulkhead state of %s still there (err %v)", id, err)
	}
	if _, err := os.Stat(filepath.Join(root, backend, id)); !os.IsNotExist(err) {
		t.Errorf("%s state of %s still there (err %v)", backend, id, err)
	}
	if cgroups.Exists(runtime.DefaultCgroupsPath(root, id)) {
		t.Errorf("cgroup %s still there", runtime.DefaultCgroupsPath(root, id))
	}
}

func TestLifecycle(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			b := bundle.New(t, []string{"sleep", "300"})
			id := uniqueID("life-" + backend)
			g := []string{"--root", root, "--backend", backend}

			must(t, append(g, "create", "--bundle", b, id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			if s := containerState(t, g, id); s.Status != "created" || s.Pid <= 0 {
				t.Fatalf("after create: %+v, want status created with a pid", s)
			}
			must(t, append(g, "start", id)...)
			waitStatus(t, g, id, "running")

			var pids []int
			if err := json.Unmarshal([]byte(must(t, append(g, "ps", "--format", "json", id)...)), &pids); err != nil || len(pids) == 0 {
				t.Fatalf("ps --format json: %v %v", pids, err)
			}

			must(t, append(g, "exec", "--detach", id, "sh", "-c", "echo detached > /tmp/mark")...)
			var out string
			for i := 0; i < 50; i++ {
				if out = bulkhead(t, "", append(g, "exec", id, "cat", "/tmp/mark")...).stdout; out != "" {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if strings.TrimSpace(out) != "detached" {
				t.Fatalf("attached exec read %q from the detached exec's file, want \"detached\"", out)
			}

			if backend == "runc" {
				pause(t, g, id)
				waitStatus(t, g, id, "paused")
				must(t, append(g, "resume", id)...)
				waitStatus(t, g, id, "running")
			}

			must(t, append(g, "kill", id, "KILL")...)
			waitStatus(t, g, id, "stopped")
			must(t, append(g, "delete", id)...)
			assertGone(t, root, backend, id)
			if r := bulkhead(t, "", append(g, "state", id)...); r.code == 0 {
				t.Fatalf("state after delete succeeded: %s", r.stdout)
			}
		})
	}
}

func TestRunExitStatus(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			b := bundle.New(t, []string{"sh", "-c", "echo out; exit 7"})
			id := uniqueID("exit-" + backend)
			r := bulkhead(t, "", "--root", root, "--backend", backend, "run", "--bundle", b, id)
			if r.code != 7 {
				t.Fatalf("run exit status %d, want 7\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if strings.TrimSpace(r.stdout) != "out" {
				t.Fatalf("run stdout %q, want the container's \"out\"", r.stdout)
			}
			assertGone(t, root, backend, id)
		})
	}
}

func TestRunDetach(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			b := bundle.New(t, []string{"sleep", "300"})
			id := uniqueID("detach-" + backend)
			g := []string{"--root", root, "--backend", backend}
			must(t, append(g, "run", "--detach", "--bundle", b, id)...)
			waitStatus(t, g, id, "running")
			must(t, append(g, "delete", "--force", id)...)
			assertGone(t, root, backend, id)
		})
	}
}

func TestRunWithTerminal(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			b := bundle.New(t, []string{"sh", "-c", "test -t 0 && test -t 1 && echo on-a-tty; echo ready"}, func(s *rspec.Spec) { s.Process.Terminal = true })
			id := uniqueID("tty-" + backend)
			g := []string{"--root", root, "--backend", backend}
			sock, master := consoleSocket(t)
			must(t, append(g, "create", "--bundle", b, "--console-socket", sock, id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			pty := <-master
			if pty == nil {
				t.Fatal("no pty master received on the console socket")
			}
			defer pty.Close()
			must(t, append(g, "start", id)...)
			out := readUntil(t, pty, "ready")
			if !strings.Contains(out, "on-a-tty") {
				t.Fatalf("the container's stdin and stdout are not a terminal: it printed %q", out)
			}
		})
	}
}

func TestPreserveFds(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"sh", "-c", "echo through-fd-3 >&3"})
	id := "fds"
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res := bulkheadWithFiles(t, []*os.File{w}, "--root", root, "run", "--preserve-fds", "1", "--bundle", b, id)
	w.Close()
	if res.code != 0 {
		t.Fatalf("run --preserve-fds: exit %d: %s", res.code, res.stderr)
	}
	buf := make([]byte, 64)
	n, _ := r.Read(buf)
	if got := strings.TrimSpace(string(buf[:n])); got != "through-fd-3" {
		t.Fatalf("read %q from the preserved fd, want through-fd-3", got)
	}
}

// TestPreserveFdsOnlyTheCallers: --preserve-fds past the descriptors the
// caller handed over would give the container bulkhead's own (the --log
// file, the host-wide cgroup lock file, the runtime's cgroup files, whose
// ".." is the host's cgroup tree). create refuses it, and leaves no
// record and no cgroup.
func TestPreserveFdsOnlyTheCallers(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	cgroupsPath := "/" + uniqueID("bulkhead-test-preserve")
	b := bundle.New(t, []string{"sh", "-c", "for f in /proc/self/fd/*; do ls $f/../../.. >&3; done"}, func(s *rspec.Spec) {
		s.Linux.CgroupsPath = cgroupsPath
	})
	id := uniqueID("fds-own")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	log := filepath.Join(t.TempDir(), "log.json")
	res := bulkheadWithFiles(t, []*os.File{w}, "--root", root, "--log", log, "run", "--preserve-fds", "8", "--bundle", b, id)
	w.Close()
	t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
	leaked, _ := io.ReadAll(r)
	if res.code == 0 || !strings.Contains(res.stderr, "bulkhead's own") {
		t.Fatalf("run --preserve-fds 8 with one descriptor handed: exit %d, stderr %s; the container listed:\n%s", res.code, res.stderr, leaked)
	}
	if len(leaked) > 0 {
		t.Fatalf("the container ran and listed through bulkhead's descriptors:\n%s", leaked)
	}
	if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
		t.Fatalf("the refused container's record is left: %v", err)
	}
	if cgroups.Exists(cgroupsPath) {
		t.Fatalf("the refused container's cgroup %s is left", cgroupsPath)
	}
}

// TestPreserveFdsRefusesAHostDirectory: a directory handed as a
// preserved fd is the host tree behind it (/proc/self/fd/3/etc/passwd,
// the host's /tmp writable), a bind the policy refuses in config.json.
// run refuses it naming the descriptor, and leaves no container.
func TestPreserveFdsRefusesAHostDirectory(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"sh", "-c", "echo ran; ls /proc/self/fd/3/; cat /proc/self/fd/3/etc/hostname"})
	id := uniqueID("fds-dir")
	dir, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
	res := bulkheadWithFiles(t, []*os.File{dir}, "--root", root, "run", "--preserve-fds", "1", "--bundle", b, id)
	if res.code == 0 || !strings.Contains(res.stderr, "--preserve-fds: descriptor 3 is a directory (/)") {
		t.Fatalf("run --preserve-fds 1 with the host's / as fd 3: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout, "ran") {
		t.Fatalf("the container ran with the host's / as fd 3:\n%s", res.stdout)
	}
	assertGone(t, root, "runc", id)
}

// TestPreserveFdsRefusesWhatTheJobCouldTurn: a file the job may write is
// one it can write its own code into and run through /proc/self/fd/3 (a
// memfd: 0777 on a mount that allows execution; any file at all through
// the loader, which maps it executable whatever its mode), past the
// noexec /tmp and the seccomp rule that keeps memfd_create from it; a
// listening TCP socket keeps the host's network namespace, where the job
// can take it off its address and bind it to any of the host's. run
// refuses these, naming the descriptor, and runs nothing. A memfd sealed
// against writes is handed: the job reads it and cannot write it (what
// it runs from there is the caller's).
func TestPreserveFdsRefusesWhatTheJobCouldTurn(t *testing.T) {
	needRoot(t, "runc")
	script := "echo ran; cat /proc/self/fd/3; printf '#!/bin/sh\\necho own code ran\\n' > /proc/self/fd/3; /proc/self/fd/3; echo exit=$?"
	memfd := func(flags int, seal bool) func() *os.File {
		return func() *os.File {
			fd, err := unix.MemfdCreate("handed", unix.MFD_CLOEXEC|flags)
			if err != nil {
				t.Fatal(err)
			}
			f := os.NewFile(uintptr(fd), "memfd")
			if seal {
				if _, err := f.WriteString("sealed content\n"); err != nil {
					t.Fatal(err)
				}
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK); err != nil {
					t.Fatal(err)
				}
			}
			return f
		}
	}
	listener := func() *os.File {
		l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		f, err := l.File()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		name, refusal string
		file          func() *os.File
	}{
		{"memfd", "--preserve-fds: descriptor 3 is a file the job could write", memfd(0, false)},
		{"memfd made with MFD_NOEXEC_SEAL", "--preserve-fds: descriptor 3 is a file the job could write", memfd(unix.MFD_NOEXEC_SEAL, false)},
		{"listening TCP socket", "--preserve-fds: descriptor 3 is an IP socket", listener},
		{"memfd sealed against writes", "", memfd(unix.MFD_ALLOW_SEALING, true)},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := stateRoot(t)
			b := bundle.New(t, []string{"sh", "-c", script})
			id := uniqueID("fds-turn")
			f := c.file()
			defer f.Close()
			t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
			res := bulkheadWithFiles(t, []*os.File{f}, "--root", root, "run", "--preserve-fds", "1", "--bundle", b, id)
			if strings.Contains(res.stdout, "own code ran") {
				t.Fatalf("the job ran code it wrote into fd 3:\n%s", res.stdout)
			}
			if c.refusal == "" {
				if res.code != 0 || !strings.Contains(res.stdout, "sealed content") || !strings.Contains(res.stderr, "can't create /proc/self/fd/3: Operation not permitted") {
					t.Fatalf("run with fd 3 handed: exit %d, want the job to read it and fail to write it\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
				}
				return
			}
			if res.code == 0 || !strings.Contains(res.stderr, c.refusal) {
				t.Fatalf("run --preserve-fds 1: exit %d, want %q\nstdout: %s\nstderr: %s", res.code, c.refusal, res.stdout, res.stderr)
			}
			if strings.Contains(res.stdout, "ran") {
				t.Fatalf("the container ran:\n%s", res.stdout)
			}
			assertGone(t, root, "runc", id)
		})
	}
}

// TestRunRefusesADirectoryAsStdin: `bulkhead run ID < /` would give the
// container's init the host's root as fd 0. run refuses it naming the
// stream, and leaves no container; /dev/null as stdin runs.
func TestRunRefusesADirectoryAsStdin(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"sh", "-c", "echo ran; ls /proc/self/fd/0/"})
	id := uniqueID("stdin-dir")
	dir, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
	res := bulkheadWithStdin(t, dir, "--root", root, "run", "--bundle", b, id)
	if res.code == 0 || !strings.Contains(res.stderr, "stdin (descriptor 0) is a directory (/)") {
		t.Fatalf("run with the host's / as stdin: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout, "ran") {
		t.Fatalf("the container ran with the host's / as stdin:\n%s", res.stdout)
	}
	assertGone(t, root, "runc", id)

	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	res = bulkheadWithStdin(t, null, "--root", root, "run", "--bundle", bundle.New(t, []string{"echo", "ran"}), id)
	if res.code != 0 || !strings.Contains(res.stdout, "ran") {
		t.Fatalf("run with /dev/null as stdin: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
}

// TestRunRefusesAFileRuncWouldChown: runc's init chowns a stdio file to
// the container's uid (65534 under the default profile), so `run` with a
// root-owned file as stdin or a named FIFO as stdout is refused and keeps
// its owner. A file as stdout is one the job writes, and what it writes
// it could run (the loader maps a file executable whatever its mode): it
// is refused whoever owns it. A pipe is handed over.
func TestRunRefusesAFileRuncWouldChown(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	id := uniqueID("stdout-file")
	t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
	runWith := func(in, out *os.File) (int, string) {
		t.Helper()
		cmd := exec.Command(binaries.Bulkhead(t), "--root", root, "run", "--bundle", bundle.New(t, []string{"echo", "ran"}), id)
		stderr, err := binaries.NewCapture()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, stderr.W
		err = cmd.Run()
		msg := stderr.Collect()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), msg
	}
	ownerOf := func(f *os.File) uint32 {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return st.Uid
	}
	file := func(uid int) *os.File {
		t.Helper()
		f, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if err := f.Chown(uid, -1); err != nil {
			t.Fatal(err)
		}
		return f
	}
	pipe, err := binaries.NewCapture()
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Collect()

	input := file(0)
	readOnly, err := os.Open(input.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer readOnly.Close()
	code, stderr := runWith(readOnly, pipe.W)
	if code == 0 || !strings.Contains(stderr, "stdin (descriptor 0) is a regular file ("+input.Name()+") owned by uid 0; runc would give it to the container's uid 65534") {
		t.Fatalf("run with a root-owned file as stdin: exit %d\nstderr: %s", code, stderr)
	}
	if uid := ownerOf(input); uid != 0 {
		t.Fatalf("the refused run gave the file to uid %d", uid)
	}
	assertGone(t, root, "runc", id)

	for _, uid := range []int{0, 65534} {
		out := file(uid)
		code, stderr = runWith(nil, out)
		if code == 0 || !strings.Contains(stderr, "stdout (descriptor 1) is a file the job could write") {
			t.Fatalf("run with a file of uid %d as stdout: exit %d\nstderr: %s", uid, code, stderr)
		}
		if owner := ownerOf(out); owner != uint32(uid) {
			t.Fatalf("the refused run gave uid %d's file to uid %d", uid, owner)
		}
		if data, _ := os.ReadFile(out.Name()); len(data) != 0 {
			t.Fatalf("the container ran with the file as stdout: %q", data)
		}
		assertGone(t, root, "runc", id)
	}

	// A named FIFO a host service reads is a file too: runc would give
	// it to the sandbox's uid, and the sandbox would write to the service.
	fifo := filepath.Join(t.TempDir(), "service.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	service, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer service.Close()
	code, stderr = runWith(nil, service)
	if code == 0 || !strings.Contains(stderr, "stdout (descriptor 1) is a named FIFO ("+fifo+") owned by uid 0; runc would give it to the container's uid 65534") {
		t.Fatalf("run with a root-owned named FIFO as stdout: exit %d\nstderr: %s", code, stderr)
	}
	if uid := ownerOf(service); uid != 0 {
		t.Fatalf("the refused run gave the FIFO to uid %d", uid)
	}
	assertGone(t, root, "runc", id)

	out, err := binaries.NewCapture()
	if err != nil {
		t.Fatal(err)
	}
	code, stderr = runWith(nil, out.W)
	if got := out.Collect(); code != 0 || got != "ran\n" {
		t.Fatalf("run with a pipe as stdout: exit %d, stdout %q\nstderr: %s", code, got, stderr)
	}
}

// TestExecRefusesADirectoryAsStdin: an exec'd process gets the caller's
// stdio as the init does; a directory is refused, /dev/null is not.
func TestExecRefusesADirectoryAsStdin(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"sleep", "300"})
	id := uniqueID("exec-stdin-dir")
	g := []string{"--root", root}
	must(t, append(g, "run", "--detach", "--bundle", b, id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	dir, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	res := bulkheadWithStdin(t, dir, append(g, "exec", id, "sh", "-c", "echo ran; ls /proc/self/fd/0/")...)
	if res.code == 0 || !strings.Contains(res.stderr, "stdin (descriptor 0) is a directory (/)") {
		t.Fatalf("exec with the host's / as stdin: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout, "ran") {
		t.Fatalf("the exec ran with the host's / as stdin:\n%s", res.stdout)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	res = bulkheadWithStdin(t, null, append(g, "exec", id, "echo", "ran")...)
	if res.code != 0 || !strings.Contains(res.stdout, "ran") {
		t.Fatalf("exec with /dev/null as stdin: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
}

// TestNoPivotRefused: --no-pivot would leave the host's mount tree under
// the container's chroot, and --no-new-keyring (a containerd client's
// NoNewKeyring runc option) would share the caller's session keyring with
// the job; enforce mode refuses each before the backend runs and leaves no
// record, and each set false runs.
func TestNoPivotRefused(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"true"})
	for _, flag := range []string{"--no-pivot", "--no-new-keyring"} {
		id := uniqueID(strings.TrimPrefix(flag, "--"))
		t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
		res := bulkhead(t, "", "--root", root, "run", flag, "--bundle", b, id)
		if res.code == 0 || !strings.Contains(res.stderr, "refuses "+flag) {
			t.Fatalf("run %s: exit %d, stderr %s", flag, res.code, res.stderr)
		}
		if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
			t.Fatalf("the refused container's record is left: %v", err)
		}
		if res := bulkhead(t, "", "--root", root, "state", id); res.code == 0 {
			t.Fatalf("the backend has the refused container: %s", res.stdout)
		}
		must(t, "--root", root, "run", flag+"=false", "--bundle", b, id)
	}
}

// TestRootlessRefused: the global --rootless true makes runc ignore
// errors joining the container's cgroups, then and at every exec (an
// `exec --cgroup nosuch` ran outside every limit); enforce mode refuses it
// before the backend runs, and --rootless false runs.
func TestRootlessRefused(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"true"})
	id := uniqueID("rootless")
	t.Cleanup(func() { bulkhead(t, "", "--root", root, "delete", "--force", id) })
	for _, v := range []string{"true", "1"} {
		res := bulkhead(t, "", "--root", root, "--rootless", v, "run", "--bundle", b, id)
		if res.code == 0 || !strings.Contains(res.stderr, "refuses --rootless "+v) {
			t.Fatalf("--rootless %s run: exit %d, stderr %s", v, res.code, res.stderr)
		}
		if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
			t.Fatalf("the refused container's record is left: %v", err)
		}
	}
	must(t, "--root", root, "--rootless", "false", "run", "--bundle", b, id)
}

// TestSameBundleTwice: two containers from the same bundle at once each
// get a cgroup of their own.
func TestSameBundleTwice(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"sleep", "300"})
	g := []string{"--root", root}
	for _, id := range []string{uniqueID("twice-a"), uniqueID("twice-b")} {
		must(t, append(g, "create", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		if !cgroups.Exists(runtime.DefaultCgroupsPath(root, id)) {
			t.Fatalf("%s: no cgroup of its own at %s", id, runtime.DefaultCgroupsPath(root, id))
		}
	}
}

// TestFeaturesAndVersion: dockerd runs `features` at start and parses
// `--version`; both must work through bulkhead for each backend.
func TestFeaturesAndVersion(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			var doc map[string]any
			out := must(t, "--backend", backend, "features")
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["ociVersionMax"] == nil {
				t.Fatalf("features is not a features document: %v\n%s", err, out)
			}
		})
	}
	out := strings.TrimSpace(must(t, "--version"))
	lines := strings.Split(out, "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "bulkhead version ") {
		t.Fatalf("--version ends with %q, want the bulkhead version line docker parses", last)
	}
	if !strings.Contains(out, "backend runc: /") {
		t.Fatalf("--version does not say which runc it uses:\n%s", out)
	}
}

// TestListMergesBackends: `list` shows the containers of every backend,
// each with the caller's bundle and the time it was created.
func TestListMergesBackends(t *testing.T) {
	needRoot(t, "runc", "runsc")
	root := stateRoot(t)
	ids, bundles := map[string]string{}, map[string]string{}
	begin := time.Now()
	for _, backend := range backends {
		id := uniqueID("list-" + backend)
		ids[id] = backend
		bundles[id] = bundle.New(t, []string{"sleep", "60"})
		g := []string{"--root", root, "--backend", backend}
		must(t, append(g, "create", "--bundle", bundles[id], id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	}
	end := time.Now()
	var states []struct {
		ID      string    `json:"id"`
		Bundle  string    `json:"bundle"`
		Created time.Time `json:"created"`
	}
	out := must(t, "--root", root, "list", "--format", "json")
	if err := json.Unmarshal([]byte(out), &states); err != nil {
		t.Fatalf("list --format json: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, s := range states {
		seen[s.ID] = true
		if ids[s.ID] == "" {
			continue
		}
		if s.Bundle != bundles[s.ID] {
			t.Errorf("list gives %s's container %s the bundle %q, want the caller's %q", ids[s.ID], s.ID, s.Bundle, bundles[s.ID])
		}
		if s.Created.Before(begin.Add(-time.Second)) || s.Created.After(end.Add(time.Second)) {
			t.Errorf("list gives %s's container %s the creation time %s, want one between %s and %s", ids[s.ID], s.ID, s.Created, begin, end)
		}
	}
	for id, backend := range ids {
		if !seen[id] {
			t.Errorf("list does not show %s's container %s:\n%s", backend, id, out)
		}
	}
	if q := must(t, "--root", root, "list", "-q"); len(strings.Fields(q)) != len(ids) {
		t.Errorf("list -q printed %q, want %d ids", q, len(ids))
	}
}

// TestRunTerminalWithoutSocket: `bulkhead run` of a terminal container
// with no console socket joins the container's terminal to its own
// stdio, as `runc run` does (a `runc spec` bundle asks for a terminal).
func TestRunTerminalWithoutSocket(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	b := bundle.New(t, []string{"sh", "-c", "test -t 0 && test -t 1 && echo on-a-tty; exit 3"}, func(s *rspec.Spec) { s.Process.Terminal = true })
	pty, slave, err := console.NewPty()
	if err != nil {
		t.Fatal(err)
	}
	defer pty.Close()
	tty, err := os.OpenFile(slave, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	cmd := exec.Command(binaries.Bulkhead(t), "--root", root, "run", "--bundle", b, uniqueID("runtty"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		data, _ := io.ReadAll(pty)
		out <- string(data)
	}()
	err = cmd.Wait()
	tty.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("run: %v, want exit status 3", err)
	}
	select {
	case got := <-out:
		if !strings.Contains(got, "on-a-tty") {
			t.Fatalf("the container's stdio is not a terminal: %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no output from the terminal")
	}
}

// A created gVisor container cannot be paused: runsc paused the sandbox
// and then panicked, leaving it frozen. runc pauses it and resumes it to
// created (TestStartAsRuncDoes). The container still starts and runs.
func TestPauseBeforeStartRefusedOnGVisor(t *testing.T) {
	needRoot(t, "runsc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runsc"}
	id := uniqueID("pausefirst-runsc")
	must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "3600"}), id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	r := bulkhead(t, "", append(g, "pause", id)...)
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); r.code == 0 || !strings.Contains(lines[len(lines)-1], "has not been started") {
		t.Fatalf("pause of a created gVisor container: exit %d, stderr %q; want refused, saying why", r.code, r.stderr)
	}
	if s := containerState(t, g, id); s.Status != "created" {
		t.Fatalf("after the refused pause: %+v, want still created", s)
	}
	must(t, append(g, "start", id)...)
	must(t, append(g, "exec", id, "true")...)
}
