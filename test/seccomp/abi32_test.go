package seccomp_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// abi32Attempts are the lines testdata/abi32.c prints, one per attempt.
var abi32Attempts = []string{"socket-alg", "socket-vsock", "socketcall-alg", "socketcall-vsock", "socketcall-unix", "socketcall-bind-badfd"}

// TestCompatABIsRefused opens refused socket families through the i386
// system call ABI of an x86_64 process (int $0x80), where the x86_64
// argument filter does not apply and socketcall hides its arguments. The
// policy's filter lists only the 64-bit ABIs, so each attempt is killed
// (runc) or fails (gVisor has no i386 ABI); none may return a socket.
func TestCompatABIsRefused(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the i386 ABI through int $0x80 is an x86_64 matter; this is %s", runtime.GOARCH)
	}
	need(t, "runc", "runsc")
	b := bundle.New(t, []string{"/bin/abi32"})
	cProgram(t, b, "abi32")
	i386 := hostRunsI386Calls(t, filepath.Join(b, "rootfs/bin/abi32"))
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			out := newEnv(t, "").run(be.entry, b)
			t.Logf("%s:\n%s", be.name, out)
			noSocketMade(t, out)
		})
	}
	// A profile that keeps the 32-bit ABIs keeps x32 and arm32, not
	// i386: libseccomp makes each socket rule an unconditional
	// socketcall(SYS_SOCKET) there, which would open any family.
	t.Run("compat_syscalls/runc", func(t *testing.T) {
		out := newEnv(t, "[profiles.default]\ncompat_syscalls = true\n").run("bulkhead", b)
		t.Logf("compat_syscalls on runc:\n%s", out)
		noSocketMade(t, out)
		if !i386 {
			t.Skip("this kernel runs no i386 system call made through int $0x80 (abi32 outside any container gets SIGSEGV for each), so none reaches the filter's architecture check")
		}
		for _, a := range abi32Attempts {
			if !slices.Contains(strings.Split(out, "\n"), a+" signal 31") {
				t.Errorf("under compat_syscalls: %s was not killed as an i386 call", a)
			}
		}
	})
}

// noSocketMade fails for each attempt without a result or with a socket.
func noSocketMade(t *testing.T, out string) {
	t.Helper()
	for _, a := range abi32Attempts {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, a+" ") {
				line = l
			}
		}
		switch {
		case line == "":
			t.Errorf("%s: no result (output %q)", a, out)
		case strings.HasSuffix(line, " fd"):
			t.Errorf("%s: a refused socket family was opened through the i386 ABI", a)
		}
	}
}

// hostRunsI386Calls says whether this kernel runs the i386 system calls an
// x86_64 process makes through int $0x80: abi32, run on the host outside
// any filter, is killed by SIGSEGV at each attempt where it does not.
func hostRunsI386Calls(t *testing.T, abi32 string) bool {
	t.Helper()
	out, err := exec.Command(abi32).Output()
	if err != nil {
		t.Fatalf("abi32 on the host: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	for _, a := range abi32Attempts {
		if !slices.Contains(lines, a+" signal 11") {
			return true
		}
	}
	t.Logf("abi32 on the host, outside any filter:\n%s", out)
	return false
}
