package specs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// startNamed runs a copy of sleep named dockerd, through prefix (such as
// unshare), and returns its /proc/<pid>/exe.
func startNamed(t *testing.T, mode os.FileMode, prefix ...string) (procExe, bin string) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep to copy")
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(t.TempDir(), "dockerd")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, mode); err != nil {
		t.Fatal(err)
	}
	argv := append(prefix, bin, "60")
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	if len(prefix) > 0 {
		// unshare execs the named binary in the same process.
		for i := 0; i < 100; i++ {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); l == bin {
				break
			}
			exec.Command("sleep", "0.05").Run()
		}
	}
	return fmt.Sprintf("/proc/%d/exe", pid), bin
}

// TestDockerdHookJudgesTheProcess: dockerd's network hook is kept only
// for a root process of the host's namespaces whose executable, named
// dockerd, only root can write, and it is handed over by that file's path.
// A container's process can be named dockerd as well (a review ran a
// container's own binary as root on the host that way).
func TestDockerdHookJudgesTheProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root process named dockerd")
	}
	procExe, bin := startNamed(t, 0o755)
	if got := dockerdExecutable(procExe); got != bin {
		t.Errorf("dockerd of the host: %q, want %q", got, bin)
	}
	writable, _ := startNamed(t, 0o777)
	if got := dockerdExecutable(writable); got != "" {
		t.Errorf("dockerd whose file others may write: %q, want refused", got)
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare for a process in another mount namespace")
	}
	inNS, _ := startNamed(t, 0o755, "unshare", "--mount")
	if l, _ := os.Readlink(inNS); filepath.Base(l) != "dockerd" {
		t.Fatalf("the process in another mount namespace runs %q, not the copy named dockerd", l)
	}
	if got := dockerdExecutable(inNS); got != "" {
		t.Errorf("dockerd in another mount namespace: %q, want refused", got)
	}
}
