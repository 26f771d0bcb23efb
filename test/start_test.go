package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"bulkhead.dev/bulkhead/test/bundle"
)

// TestStartAsRuncDoes holds bulkhead's start of a runc container to what
// `runc start` answers in each state, whoever releases the init: the
// program runs when start returns, a second start and a start of a paused,
// stopped or dead container fail in runc's words, and of two starts at
// once exactly one succeeds.
func TestStartAsRuncDoes(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runc"}
	b := bundle.New(t, []string{"sleep", "300"})
	create := func(t *testing.T, name string) string {
		t.Helper()
		id := uniqueID(name)
		must(t, append(g, "create", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		return id
	}
	startFails := func(t *testing.T, id, words string) {
		t.Helper()
		r := bulkhead(t, "", append(g, "start", id)...)
		if r.code == 0 || !strings.Contains(r.stderr, words) {
			t.Fatalf("start %s: exit %d, stderr %q; want a failure saying %q", id, r.code, r.stderr, words)
		}
	}

	t.Run("the program runs when start returns", func(t *testing.T) {
		id := create(t, "start-exec")
		pid := containerState(t, g, id).Pid
		must(t, append(g, "start", id)...)
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.HasPrefix(string(cmdline), "sleep\x00300") {
			t.Fatalf("right after start, the init %d runs %q (%v), want sleep 300", pid, cmdline, err)
		}
		if s := containerState(t, g, id); s.Status != "running" {
			t.Fatalf("right after start: status %q, want running", s.Status)
		}
		startFails(t, id, "cannot start an already running container")
		must(t, append(g, "kill", id, "KILL")...)
		waitStatus(t, g, id, "stopped")
		startFails(t, id, "cannot start a container that has stopped")
	})

	t.Run("paused", func(t *testing.T) {
		id := create(t, "start-paused")
		must(t, append(g, "pause", id)...)
		startFails(t, id, "cannot start a container in the paused state")
		must(t, append(g, "resume", id)...)
		if s := containerState(t, g, id); s.Status != "created" {
			t.Fatalf("after a refused start and resume: status %q, want created", s.Status)
		}
		must(t, append(g, "start", id)...)
		waitStatus(t, g, id, "running")
	})

	t.Run("init killed before start", func(t *testing.T) {
		id := create(t, "start-dead")
		must(t, append(g, "kill", id, "KILL")...)
		waitStatus(t, g, id, "stopped")
		startFails(t, id, "cannot start a container that has stopped")
	})

	t.Run("two starts at once", func(t *testing.T) {
		id := create(t, "start-twice")
		codes := make([]int, 2)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = bulkhead(t, "", append(g, "start", id)...).code
			}()
		}
		wg.Wait()
		if (codes[0] == 0) == (codes[1] == 0) {
			t.Fatalf("two starts at once exited %v, want exactly one 0", codes)
		}
		waitStatus(t, g, id, "running")
	})

	t.Run("a record that does not say how to start", func(t *testing.T) {
		// As a record written before bulkhead released inits itself:
		// runc's own start must still start it.
		id := create(t, "start-old-record")
		rec := filepath.Join(root, "bulkhead", id, "record.json")
		data, err := os.ReadFile(rec)
		if err != nil {
			t.Fatal(err)
		}
		old := strings.Replace(string(data), `"starts_by_fifo": true`, `"starts_by_fifo": false`, 1)
		if old == string(data) {
			t.Fatalf("the record of a runc container does not say it starts by its fifo:\n%s", data)
		}
		if err := os.WriteFile(rec, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		must(t, append(g, "start", id)...)
		waitStatus(t, g, id, "running")
	})
}
