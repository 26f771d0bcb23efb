package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
		// start returns once the init has taken the fifo's byte and closed
		// its end, as runc's start does; runc's init closes it just before
		// its execve (runc 1.5 explicitly), so the program's file shows
		// moments later. An init start never released stays runc's
		// ("/", its read-only clone) and fails this.
		var exe string
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if exe, err = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == "/bin/busybox" {
				break
			}
		}
		if err != nil || exe != "/bin/busybox" {
			t.Fatalf("after start, the init %d runs %q (%v), want the program, /bin/busybox", pid, exe, err)
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
		pause(t, g, id)
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
		rs := make([]result, 2)
		var wg sync.WaitGroup
		for i := range rs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs[i] = bulkhead(t, "", append(g, "start", id)...)
			}()
		}
		wg.Wait()
		if (rs[0].code == 0) == (rs[1].code == 0) {
			t.Fatalf("two starts at once exited %d and %d, want exactly one 0", rs[0].code, rs[1].code)
		}
		// The other fails for the reason, not killed by the harness's
		// deadline as a start that waits for ever would be.
		for _, r := range rs {
			if r.code != 0 && !strings.Contains(r.stderr, "cannot start an already running container") {
				t.Fatalf("the start that lost: exit %d, stderr %q; want runc's refusal", r.code, r.stderr)
			}
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
		var fields map[string]any
		if err := json.Unmarshal(data, &fields); err != nil {
			t.Fatalf("record %s: %v", rec, err)
		}
		if fields["starts_by_fifo"] != true {
			t.Fatalf("the record of a runc container does not say it starts by its fifo:\n%s", data)
		}
		delete(fields, "starts_by_fifo")
		if data, err = json.Marshal(fields); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(rec, data, 0o600); err != nil {
			t.Fatal(err)
		}
		must(t, append(g, "start", id)...)
		waitStatus(t, g, id, "running")
	})
}

// TestDeleteAsRuncDoes holds bulkhead's delete of a runc container to
// what `runc delete` leaves: no cgroup in any hierarchy runc made one in,
// no state of runc's, and runc's refusal of a running container.
func TestDeleteAsRuncDoes(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	g := []string{"--root", root, "--backend", "runc"}
	b := bundle.New(t, []string{"sleep", "300"})
	create := func(t *testing.T, name string) (string, map[string]string) {
		t.Helper()
		id := uniqueID(name)
		must(t, append(g, "create", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		data, err := os.ReadFile(filepath.Join(root, "runc", id, "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			CgroupPaths map[string]string `json:"cgroup_paths"`
		}
		if err := json.Unmarshal(data, &st); err != nil || len(st.CgroupPaths) == 0 {
			t.Fatalf("runc's state of %s names no cgroups (%v):\n%.300s", id, err, data)
		}
		return id, st.CgroupPaths
	}
	deleted := func(t *testing.T, id string, paths map[string]string) {
		t.Helper()
		for controller, p := range paths {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("the %q cgroup %s is still there after delete (%v)", controller, p, err)
			}
		}
		assertGone(t, root, "runc", id)
		out, err := exec.Command("runc", "--root", filepath.Join(root, "runc"), "list", "-q").Output()
		if err != nil || strings.Contains(string(out), id) {
			t.Errorf("runc list after delete: %q (%v)", out, err)
		}
	}

	t.Run("stopped", func(t *testing.T) {
		id, paths := create(t, "delete-stopped")
		must(t, append(g, "start", id)...)
		must(t, append(g, "kill", id, "KILL")...)
		waitStatus(t, g, id, "stopped")
		must(t, append(g, "delete", id)...)
		deleted(t, id, paths)
	})

	t.Run("running", func(t *testing.T) {
		id, paths := create(t, "delete-running")
		must(t, append(g, "start", id)...)
		r := bulkhead(t, "", append(g, "delete", id)...)
		if r.code == 0 || !strings.Contains(r.stderr, "is not stopped") {
			t.Fatalf("delete of a running container: exit %d, stderr %q; want runc's refusal", r.code, r.stderr)
		}
		if s := containerState(t, g, id); s.Status != "running" {
			t.Fatalf("after a refused delete: status %q, want running", s.Status)
		}
		must(t, append(g, "delete", "--force", id)...)
		deleted(t, id, paths)
	})

	t.Run("created", func(t *testing.T) {
		id, paths := create(t, "delete-created")
		must(t, append(g, "delete", id)...)
		deleted(t, id, paths)
	})

	t.Run("a state runc wrote with a key bulkhead does not know", func(t *testing.T) {
		// As a later runc might write: its own delete must run, and
		// remove everything all the same.
		id, paths := create(t, "delete-unknown-state")
		must(t, append(g, "start", id)...)
		must(t, append(g, "kill", id, "KILL")...)
		waitStatus(t, g, id, "stopped")
		file := filepath.Join(root, "runc", id, "state.json")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		data = append([]byte(`{"a_later_runc_field":true,`), data[1:]...)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		must(t, append(g, "delete", id)...)
		deleted(t, id, paths)
	})
}
