package seccomp

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

const probeEnv = "BULKHEAD_SECCOMP_PROBE"

// TestProbeDefault loads Default into a child process and makes the calls
// an attacker would, asserting the errno the kernel returns. Arguments are
// all invalid (-1, or flags the kernel refuses), so that no call could do
// anything if the filter were missing; the child first checks that it is
// filtered.
func TestProbeDefault(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("probe numbers are for amd64 and arm64")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestProbeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), probeEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe child: %v\n%s", err, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if name, errno, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "probe "), " = "); ok && strings.HasPrefix(sc.Text(), "probe ") {
			got[name] = errno
		}
	}
	if got["filtered"] != "yes" {
		t.Fatalf("child not filtered:\n%s", out)
	}
	want := map[string]string{
		"socket(AF_UNIX)":             "ok",
		"socket(AF_INET)":             "ok",
		"socket(AF_ALG)":              "EPERM",
		"socket(AF_VSOCK)":            "EPERM",
		"socket(1<<32|AF_ALG)":        "EPERM",
		"socket(NETLINK_ROUTE)":       "EPERM",
		"socket(NETLINK_SOCK_DIAG)":   "EPERM",
		"socket(NETLINK_UEVENT)":      "EPERM",
		"socket(NETLINK_AUDIT)":       "EPERM",
		"clone3":                      "ENOSYS",
		"clone(CLONE_NEWUSER|FS)":     "EPERM",
		"clone(CLONE_THREAD)":         "EINVAL", // allowed; the kernel refuses THREAD without SIGHAND
		"personality(0xffffffff)":     "ok",
		"personality(READ_IMPL_EXEC)": "EPERM",
	}
	for _, name := range Denied {
		nr, _ := libseccomp.GetSyscallFromName(name)
		if nr >= 0 {
			want[name] = "EPERM"
		}
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %q, want %s", name, got[name], w)
		}
	}
}

// TestProbeChild is the child half of TestProbeDefault.
func TestProbeChild(t *testing.T) {
	if os.Getenv(probeEnv) == "" {
		t.Skip("run by TestProbeDefault")
	}
	spec, err := convert(Default())
	if err != nil {
		t.Fatal(err)
	}
	f, err := buildFilter(spec)
	if err != nil {
		t.Fatal(err)
	}
	// The filter applies to this thread only (no TSYNC), so stay on it.
	runtime.LockOSThread()
	if err := f.Load(); err != nil {
		t.Fatalf("load: %v", err)
	}
	status, _ := os.ReadFile("/proc/thread-self/status")
	fmt.Printf("probe filtered = %s\n", map[bool]string{true: "yes", false: "no"}[bytes.Contains(status, []byte("Seccomp:\t2"))])

	report := func(name string, nr uintptr, args ...uintptr) {
		var a [6]uintptr
		copy(a[:], args)
		r, _, e := syscall.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		res := "ok"
		if e != 0 {
			res = errnoName(e)
		} else if name[:6] == "socket" {
			syscall.Close(int(r))
		}
		fmt.Printf("probe %s = %s\n", name, res)
	}
	num := func(name string) uintptr {
		nr, err := libseccomp.GetSyscallFromName(name)
		if err != nil || nr < 0 {
			return ^uintptr(0)
		}
		return uintptr(nr)
	}
	const sigchld = 17
	report("socket(AF_UNIX)", num("socket"), 1, syscall.SOCK_STREAM)
	report("socket(AF_INET)", num("socket"), 2, syscall.SOCK_DGRAM)
	report("socket(AF_ALG)", num("socket"), afALG, syscall.SOCK_SEQPACKET)
	report("socket(AF_VSOCK)", num("socket"), afVSOCK, syscall.SOCK_STREAM)
	report("socket(1<<32|AF_ALG)", num("socket"), 1<<32|afALG, syscall.SOCK_SEQPACKET)
	report("socket(NETLINK_ROUTE)", num("socket"), afNetlink, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, 0)
	report("socket(NETLINK_SOCK_DIAG)", num("socket"), afNetlink, syscall.SOCK_DGRAM, 4)
	report("socket(NETLINK_UEVENT)", num("socket"), afNetlink, syscall.SOCK_RAW, 15)
	report("socket(NETLINK_AUDIT)", num("socket"), afNetlink, syscall.SOCK_RAW, 9)
	report("clone3", num("clone3"), ^uintptr(0), 0)
	report("clone(CLONE_NEWUSER|FS)", num("clone"), 0x10000000|0x200|sigchld)
	report("clone(CLONE_THREAD)", num("clone"), 0x10000|sigchld)
	report("personality(0xffffffff)", num("personality"), 0xffffffff)
	report("personality(READ_IMPL_EXEC)", num("personality"), 0x0400000)
	var bad [6]uintptr
	for i := range bad {
		bad[i] = ^uintptr(0)
	}
	for _, name := range Denied {
		if nr := num(name); nr != ^uintptr(0) {
			report(name, nr, bad[:]...)
		}
	}
}

func errnoName(e syscall.Errno) string {
	for name, v := range map[string]syscall.Errno{
		"EPERM": syscall.EPERM, "ENOSYS": syscall.ENOSYS, "EINVAL": syscall.EINVAL,
		"EFAULT": syscall.EFAULT, "EBADF": syscall.EBADF, "EAFNOSUPPORT": syscall.EAFNOSUPPORT,
	} {
		if e == v {
			return name
		}
	}
	return fmt.Sprintf("errno %d", int(e))
}
