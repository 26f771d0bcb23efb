package verify

import (
	"os"
	"os/exec"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// filteredChildEnv makes the test binary, run again, install a filter
// that allows everything and sleep: a process with a filter of its own.
const filteredChildEnv = "BULKHEAD_VERIFY_FILTERED_CHILD"

func init() {
	if os.Getenv(filteredChildEnv) == "" {
		return
	}
	allow := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	prog := unix.SockFprog{Len: 1, Filter: &allow[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		os.Exit(2)
	}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		os.Exit(3)
	}
	os.Stdout.WriteString("filtered\n")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestUnfiltered: a process bulkhead started holds only the filters
// bulkhead runs under (a runc init before it installs the profile's); one
// that installed a filter of its own, as every process of a workload
// inherits, does not pass for it.
func TestUnfiltered(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	plain := exec.Command("sleep", "60")
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Process.Kill(); _ = plain.Wait() }()
	if !Unfiltered(plain.Process.Pid) {
		t.Errorf("a child without a filter of its own: Unfiltered false, want true")
	}

	filtered := exec.Command(self, "-test.run=^$")
	filtered.Env = append(os.Environ(), filteredChildEnv+"=1")
	out, err := filtered.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := filtered.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = filtered.Process.Kill(); _ = filtered.Wait() }()
	buf := make([]byte, len("filtered\n"))
	if _, err := out.Read(buf); err != nil || string(buf) != "filtered\n" {
		t.Fatalf("the filtered child did not install its filter: %q %v", buf, err)
	}
	if Unfiltered(filtered.Process.Pid) {
		t.Errorf("a child with a filter of its own: Unfiltered true, want false")
	}
	if Unfiltered(1 << 30) {
		t.Errorf("a pid that does not exist: Unfiltered true, want false")
	}
}
