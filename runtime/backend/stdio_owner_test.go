package backend

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// stdioOwnerEnv makes the test binary a child that judges its own stdio
// for the uid the variable holds (",runsc" appended: for runsc;
// ",terminal": a pty of the backend's own).
const stdioOwnerEnv = "BULKHEAD_TEST_STDIO_OWNER"

func stdioOwnerChild(arg string) {
	arg, terminal := strings.CutSuffix(arg, ",terminal")
	uidText, runsc := strings.CutSuffix(arg, ",runsc")
	b := &Backend{Name: "runc", Path: "/usr/sbin/runc"}
	if runsc {
		b = &Backend{Name: "runsc", Path: "/usr/bin/runsc"}
	}
	uid, err := strconv.ParseUint(uidText, 10, 32)
	if err == nil {
		err = b.JudgeStdioOwner(uint32(uid), terminal)
	}
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return
	}
	os.Stderr.WriteString("ok\n")
}

// judgeStdioOwnerAs runs a child whose stdin is in and stdout is out
// (nil: a pipe) and returns what the judge said of them for uid.
func judgeStdioOwnerAs(t *testing.T, in, out *os.File, uid string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioOwnerEnv+"="+uid)
	cmd.Stdin = in
	if out != nil {
		cmd.Stdout = out
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	return strings.TrimSpace(stderr.String())
}

// ownedFile creates a regular file owned by uid; chowning needs root.
func ownedFile(t *testing.T, uid int) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stdio"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if uid != os.Geteuid() {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a file to another uid")
		}
		if err := f.Chown(uid, -1); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// readOnly is f opened again for reading only.
func readOnly(t *testing.T, f *os.File) *os.File {
	t.Helper()
	return openFile(t, f.Name(), os.O_RDONLY)
}

func openFile(t *testing.T, path string, flag int) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestJudgeStdioOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: files are given to other uids, as runc's init does")
	}
	const sandbox = "65534"
	root := ownedFile(t, 0)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	fifo := filepath.Join(t.TempDir(), "init-stdout")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ownedFifo := filepath.Join(t.TempDir(), "own-stdout")
	if err := unix.Mkfifo(ownedFifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ownedFifo, 65534, -1); err != nil {
		t.Fatal(err)
	}
	slave := os.NewFile(uintptr(openPtySlave(t)), "pty-slave")
	cases := []struct {
		name    string
		in, out *os.File
		uid     string
		want    string // "ok" or a fragment of the refusal
	}{
		{"root's regular file as stdin", readOnly(t, root), nil, sandbox,
			"stdin (descriptor 0) is a regular file (" + root.Name() + ") owned by uid 0; runc would give it to the container's uid 65534"},
		// A file the job could write is its own code wherever it lies.
		{"root's regular file as stdout", nil, root, sandbox, "stdout (descriptor 1) is a file the job could write (" + root.Name() + "): it is open for writing"},
		{"a file already the container's", ownedFile(t, 65534), nil, sandbox, "stdin (descriptor 0) is a file the job could write"},
		{"a file already the container's, read-only", readOnly(t, ownedFile(t, 65534)), nil, sandbox, "it is uid 65534's"},
		{"root's file, read-only, for a root container", readOnly(t, root), nil, "0", "ok"},
		{"a pipe", pr, pw, sandbox, "ok"},
		{"root's named FIFO", openFile(t, fifo, os.O_RDWR), nil, sandbox,
			"stdin (descriptor 0) is a named FIFO (" + fifo + ") owned by uid 0; runc would give it"},
		{"a named FIFO already the container's", openFile(t, ownedFifo, os.O_RDWR), nil, sandbox, "ok"},
		{"/dev/null", openFile(t, os.DevNull, os.O_RDWR), nil, sandbox, "ok"},
		{"/dev/urandom", openFile(t, "/dev/urandom", os.O_RDONLY), nil, sandbox, "stdin (descriptor 0) is /dev/urandom (/dev/urandom) owned by uid 0"},
		{"the caller's terminal", slave, nil, sandbox, "stdin (descriptor 0) is a pty slave (/dev/pts/"},
		// At a terminal every stream is on it: all are named at once.
		{"the caller's terminal on stdin and stdout", slave, slave, sandbox, "; stdout (descriptor 1) is a pty slave (/dev/pts/"},
		{"root's file under a terminal of runc's own", root, root, sandbox + ",terminal", "ok"},
		// runsc gives stdio to its host user, not to the process's uid.
		{"root's file on runsc", readOnly(t, root), nil, "1000,runsc",
			"owned by uid 0; runsc would give it to the sandbox's host user, uid 65534"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before unix.Stat_t
			if c.in != nil {
				if err := unix.Fstat(int(c.in.Fd()), &before); err != nil {
					t.Fatal(err)
				}
			}
			got := judgeStdioOwnerAs(t, c.in, c.out, c.uid)
			t.Logf("%s", got)
			if c.want == "ok" && got != "ok" || c.want != "ok" && !strings.Contains(got, c.want) {
				t.Errorf("judge said %q, want %q", got, c.want)
			}
			// Each refused stream, and only those, is told what to get
			// instead.
			for fd, name := range streamNames {
				refused := c.want != "ok" && strings.Contains(got, name+" (descriptor")
				if advised := strings.Contains(got, streamAdvice[fd]); refused != advised {
					t.Errorf("refusal %q: %s refused %v, advised %v", got, name, refused, advised)
				}
			}
			var after unix.Stat_t
			if c.in != nil {
				if err := unix.Fstat(int(c.in.Fd()), &after); err != nil {
					t.Fatal(err)
				}
				if after.Uid != before.Uid {
					t.Errorf("judging changed the owner from %d to %d", before.Uid, after.Uid)
				}
			}
		})
	}
}

// Only runc is known to put a pty of its own in place of the caller's
// stdio without a console socket; runsc makes them the terminal itself.
func TestOwnTerminal(t *testing.T) {
	cases := []struct {
		backend                 Backend
		terminal, socket, owned bool
	}{
		{Backend{Name: "runc", Path: "/usr/sbin/runc"}, true, false, true},
		{Backend{Name: "runc", Path: "/usr/sbin/runc"}, false, true, false},
		{Backend{Name: "runsc", Path: "/usr/bin/runsc"}, true, false, false},
		{Backend{Name: "gvisor", Path: "/opt/runsc"}, true, false, false},
		{Backend{Name: "runsc", Path: "/usr/bin/runsc"}, true, true, true},
		{Backend{Name: "crun", Path: "/usr/bin/crun"}, true, false, false},
	}
	for _, c := range cases {
		if got := c.backend.OwnTerminal(c.terminal, c.socket); got != c.owned {
			t.Errorf("%s OwnTerminal(terminal %v, console socket %v) = %v, want %v", c.backend.Path, c.terminal, c.socket, got, c.owned)
		}
	}
}
