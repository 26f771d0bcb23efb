package runtime

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHeldProcessRunning: a live process is neither ending nor exited,
// and once killed through the pidfd it has exited.
func TestHeldProcessRunning(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	p, err := holdProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release()
	if p.ending() {
		t.Fatal("a sleeping process is said to be ending")
	}
	if !p.sharesPidNamespace(os.Getpid()) {
		t.Fatal("a child is said to be in another pid namespace than its parent's")
	}
	if err := p.kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: a zombie has exited.
	if !p.exited(10 * time.Second) {
		t.Fatal("killed process not seen to exit")
	}
	if !leaderExiting(cmd.Process.Pid) {
		t.Error("an unreaped killed process (a zombie) is not said to be exiting")
	}
	if !p.ending() {
		t.Error("a zombie is not said to be ending")
	}
	// Its pid may go to another process at any time now.
	if p.sharesPidNamespace(os.Getpid()) {
		t.Error("an exited process is still taken for the pid's holder")
	}
}

// TestHeldProcessLeaderGone: a process whose main thread exited while
// another thread runs is not ending, though its leader shows as a zombie:
// it goes on running unverified, so it must be killed.
func TestHeldProcessLeaderGone(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: it starts the thread that outlives its leader")
	}
	// The main thread ends with SYS_exit (60 on x86_64, 93 on arm64),
	// which ends that thread alone.
	script := `
import ctypes, os, platform, sys, threading, time
threading.Thread(target=lambda: time.sleep(300), daemon=False).start()
print("ready", flush=True)
ctypes.CDLL(None).syscall(60 if platform.machine() == "x86_64" else 93, 0)
`
	cmd := exec.Command(py, "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	buf := make([]byte, 6)
	if n, _ := out.Read(buf); !strings.HasPrefix(string(buf[:n]), "ready") {
		t.Fatalf("script said %q", buf[:n])
	}
	p, err := holdProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release()
	deadline := time.Now().Add(10 * time.Second)
	for !leaderExiting(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("the leader thread did not exit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p.ending() {
		t.Fatal("a process whose other thread still runs is said to be ending")
	}
	if err := p.kill(); err != nil {
		t.Fatal(err)
	}
	if !p.exited(10 * time.Second) {
		t.Fatal("killed process not seen to exit")
	}
	if ws, _ := cmd.Process.Wait(); ws != nil {
		if st, ok := ws.Sys().(syscall.WaitStatus); !ok || !st.Signaled() {
			t.Errorf("status %v, want killed", ws)
		}
	}
}
