package state

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer/system"
)

// procStat reads what libcontainer's system.Stat reads, for a running
// process, one whose name holds spaces and parentheses, and a zombie.
func TestProcStatAsLibcontainer(t *testing.T) {
	// The kernel's name of a process is its program's file name.
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	oddName := filepath.Join(t.TempDir(), "a ) b (c")
	if err := os.WriteFile(oddName, sleep, 0o755); err != nil {
		t.Fatal(err)
	}
	odd := exec.Command(oddName, "30")
	if err := odd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = odd.Process.Kill(); _ = odd.Wait() }()
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	// Not waited for until the end: it stays a zombie meanwhile.
	defer func() { _ = zombie.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if st, _, err := procStat(zombie.Process.Pid); err == nil && st == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child did not become a zombie in 10 s")
		}
	}
	for _, pid := range []int{os.Getpid(), 1, odd.Process.Pid, zombie.Process.Pid} {
		want, err := system.Stat(pid)
		if err != nil {
			t.Fatalf("system.Stat(%d): %v", pid, err)
		}
		st, start, err := procStat(pid)
		if err != nil {
			t.Fatalf("procStat(%d): %v", pid, err)
		}
		if start != want.StartTime || system.State(st) != want.State {
			t.Errorf("pid %d: procStat %c %d, system.Stat %c %d", pid, st, start, want.State, want.StartTime)
		}
	}
	if _, _, err := procStat(1 << 30); err == nil {
		t.Error("procStat of a pid that does not exist: no error")
	}
}
