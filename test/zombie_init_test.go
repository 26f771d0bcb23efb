package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/zombieinit"
)

// A job that ends its main thread with exit(2) while another thread runs
// leaves its init's leader a zombie: runc then calls the container
// stopped, and the thread goes on working. Delete and the deadline must
// end it all the same.

// zombieInitContainer creates and starts a runc container whose init
// leaves a thread running, waits until runc calls it stopped and returns
// its id, the init's pid and the thread's ids.
func zombieInitContainer(t *testing.T, g []string, name string) (string, int, []string) {
	t.Helper()
	prog := zombieinit.Build(t)
	b := bundle.New(t, []string{"/bin/zombieinit"})
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "rootfs", "bin", "zombieinit"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	id := uniqueID(name)
	must(t, append(g, "create", "--bundle", b, id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	pid := containerState(t, g, id).Pid
	must(t, append(g, "start", id)...)
	waitStatus(t, g, id, "stopped")
	threads := liveThreads(pid)
	if len(threads) == 0 {
		t.Fatalf("the init %d left no thread running once stopped: the test proves nothing", pid)
	}
	return id, pid, threads
}

// liveThreads are the threads of pid other than its leader that are not
// zombies.
func liveThreads(pid int) []string {
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []string
	for _, e := range entries {
		if e.Name() == fmt.Sprint(pid) {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, e.Name()))
		if err != nil {
			continue
		}
		if !zombieStat(stat) {
			out = append(out, e.Name())
		}
	}
	return out
}

// zombieStat tells whether /proc/<pid>/stat content is a zombie's or a
// dead task's.
func zombieStat(stat []byte) bool {
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || len(stat) <= i+2 || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// waitThreadsGone fails unless pid has no live thread within d.
func waitThreadsGone(t *testing.T, pid int, d time.Duration, after string) {
	t.Helper()
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		left := liveThreads(pid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: threads %v of the container's init %d still run after %s", after, left, pid, d)
		}
	}
}

func TestDeleteEndsWhatOutlivesTheInitsLeader(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runc"}
	for _, force := range []bool{false, true} {
		id, pid, _ := zombieInitContainer(t, g, fmt.Sprintf("zombie-delete-%v", force))
		args := append(g, "delete")
		if force {
			args = append(args, "--force")
		}
		must(t, append(args, id)...)
		waitThreadsGone(t, pid, 10*time.Second, strings.Join(args[len(g):], " "))
		assertGone(t, root, "runc", id)
	}
}

func TestDeadlineEndsWhatOutlivesTheInitsLeader(t *testing.T) {
	needRoot(t, "runc")
	config, audit := lifetimeConfig(t, "2s")
	root := stateRoot(t)
	g := []string{"--config", config, "--root", root, "--backend", "runc"}
	id, pid, _ := zombieInitContainer(t, g, "zombie-deadline")
	waitThreadsGone(t, pid, 30*time.Second, "the 2 s lifetime")
	if e := deadlineEvent(t, audit, id); e["outcome"] != "killed" {
		t.Fatalf("deadline event %v, want outcome killed", e)
	}
	must(t, append(g, "delete", id)...)
	assertGone(t, root, "runc", id)
}

func TestKillReachesWhatOutlivesTheInitsLeader(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runc"}
	id, pid, _ := zombieInitContainer(t, g, "zombie-kill")
	// An engine's stop, once the init ignored TERM as a pid namespace's
	// init does: KILL for the init, without --all.
	must(t, append(g, "kill", id, "KILL")...)
	waitThreadsGone(t, pid, 10*time.Second, "kill KILL")
	must(t, append(g, "delete", id)...)
	assertGone(t, root, "runc", id)
}
