package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/seccompexec"
	"bulkhead.dev/bulkhead/seccomp"
)

// busybox is Debian's busybox-static, the workload of these tests.
const busybox = "/bin/busybox"

// build compiles the program as `make build` does (static).
func build(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(busybox); err != nil {
		t.Skipf("busybox-static is needed (hack/install-deps.sh): %v", err)
	}
	bin := filepath.Join(t.TempDir(), "bulkhead-seccomp-exec")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type outcome struct {
	stdout, stderr string
	code           int
}

// runProgram runs the program with the filter prog (hex) in its
// environment, as bulkhead hands it over, and argv.
func runProgram(t *testing.T, bin, prog string, argv ...string) outcome {
	t.Helper()
	cmd := exec.Command(bin, argv...)
	cmd.Env = append(os.Environ(), seccompexec.EnvName+"="+prog)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return outcome{out.String(), errOut.String(), code}
}

func defaultProgram(t *testing.T) string {
	t.Helper()
	p, err := seccomp.ForProfile("", false, false)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := seccomp.Program(p)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(prog)
}

// TestRunsUnderTheFilter: the command runs in seccomp filter mode, a call
// the profile denies answers EPERM, and its output and exit status are
// the command's own.
func TestRunsUnderTheFilter(t *testing.T) {
	bin := build(t)
	script := `grep '^Seccomp:' /proc/self/status; unshare -U true 2>&1; echo unshare=$?; echo "filter in env: ${` + seccompexec.EnvName + `:-none}"; exit 7`
	r := runProgram(t, bin, defaultProgram(t), "--", busybox, "sh", "-c", script)
	if r.code != 7 {
		t.Fatalf("exit %d, want the command's 7; stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "Seccomp:\t2") {
		t.Errorf("stdout %q: want Seccomp: 2 (filter mode)", r.stdout)
	}
	if !strings.Contains(r.stdout, "filter in env: none") {
		t.Errorf("stdout %q: the filter's variable reached the command", r.stdout)
	}
	if !strings.Contains(r.stdout, "Operation not permitted") || !strings.Contains(r.stdout, "unshare=1") {
		t.Errorf("stdout %q: want unshare(CLONE_NEWUSER) refused with EPERM", r.stdout)
	}
}

// TestRefusesABrokenProgram: whatever is wrong with the filter, or when
// the filter stops execve itself, the command does not run and the
// program says why.
func TestRefusesABrokenProgram(t *testing.T) {
	bin := build(t)
	for name, tc := range map[string]struct{ prog, why string }{
		"not hex":          {"zz", "not hex"},
		"half instruction": {"06000000", "not whole"},
		// One instruction that is no return: the kernel refuses it.
		"invalid program": {"0000000000000000", "SECCOMP_SET_MODE_FILTER"},
		// Valid, but answers EPERM to execve alone.
		"denies execve": {deniesExecve(), "execve"},
	} {
		t.Run(name, func(t *testing.T) {
			mark := filepath.Join(t.TempDir(), "ran")
			r := runProgram(t, bin, tc.prog, "--", busybox, "touch", mark)
			if r.code == 0 {
				t.Fatalf("exit 0 with a broken program, want non-zero")
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatalf("the command ran (exit %d)", r.code)
			}
			if !strings.Contains(r.stderr, tc.why) {
				t.Errorf("stderr %q, want it to say %q", r.stderr, tc.why)
			}
		})
	}
}

// deniesExecve is a filter that allows every call but execve, which gets
// EPERM: load the call's number, compare, return.
func deniesExecve() string {
	insns := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_EXECVE},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	var raw []byte
	for _, in := range insns {
		raw = binary.NativeEndian.AppendUint16(raw, in.Code)
		raw = append(raw, in.Jt, in.Jf)
		raw = binary.NativeEndian.AppendUint32(raw, in.K)
	}
	return hex.EncodeToString(raw)
}

func TestLookup(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{"prog", 0o755}, {"plain", 0o644}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), nil, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := "PATH=relative:/nonexistent:" + dir
	for _, tc := range []struct {
		name string
		env  []string
		want string // "" for not found
	}{
		{"prog", []string{path}, filepath.Join(dir, "prog")},
		{"prog", []string{path, "PATH=/nonexistent"}, filepath.Join(dir, "prog")},
		{"plain", []string{path}, ""},
		{"adir", []string{path}, ""},
		{"prog", nil, ""},
		// A path is execve's to judge, but one that names nothing is
		// not found (127, as a shell says), not unrunnable (126).
		{filepath.Join(dir, "prog"), nil, filepath.Join(dir, "prog")},
		{filepath.Join(dir, "plain"), nil, filepath.Join(dir, "plain")},
		{"/abs/prog", nil, ""},
		{filepath.Join(dir, "prog/x"), nil, ""},
		{"", []string{path}, ""},
	} {
		got, err := lookup(tc.name, tc.env)
		if tc.want == "" {
			if err == nil {
				t.Errorf("lookup(%q, %q) = %q, want not found", tc.name, tc.env, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("lookup(%q, %q) = %q, %v; want %q", tc.name, tc.env, got, err, tc.want)
		}
	}
}
