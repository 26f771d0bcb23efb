package seccomp_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// abi32Attempts are the lines testdata/abi32.c prints, one per attempt.
var abi32Attempts = []string{"socket-alg", "socket-vsock", "socketcall-alg", "socketcall-vsock"}

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
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc is needed to build testdata/abi32.c (hack/install-deps.sh installs it): %v", err)
	}
	b := bundle.New(t, []string{"/bin/abi32"})
	if out, err := exec.Command(gcc, "-static", "-O2", "-o", filepath.Join(b, "rootfs/bin/abi32"), "testdata/abi32.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			e := newEnv(t, "")
			out := e.run(be.entry, b)
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
			t.Logf("%s:\n%s", be.name, out)
		})
	}
}
