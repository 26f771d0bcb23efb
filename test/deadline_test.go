package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	bhstate "bulkhead.dev/bulkhead/runtime/state"
	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/leftover"
)

// lifetimeConfig writes a root-owned, 0644 configuration whose default
// profile has max_lifetime lifetime and whose audit log is the test's.
// It returns the config path and the audit log path.
func lifetimeConfig(t *testing.T, lifetime string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	path := filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("audit_log = %q\n[profiles.default]\nmax_lifetime = %q\n", audit, lifetime)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, audit
}

// noWatchdog fails unless no watchdog of id runs: delete (and run,
// which deletes) returns once the container's watchdog is gone, so that
// nothing of the container acts after it (runc 1.1's state, which the
// watchdog polls, creates the state root again).
func noWatchdog(t *testing.T, id string) {
	t.Helper()
	if pids := leftover.Watchdogs(id); len(pids) != 0 {
		t.Fatalf("watchdog of %s still running after its delete returned: pids %v", id, pids)
	}
}

// waitNoWatchdog fails unless every watchdog of id is gone within d.
func waitNoWatchdog(t *testing.T, id string, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for {
		pids := leftover.Watchdogs(id)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("watchdog of %s still running after %s: pids %v", id, d, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deadlineEvent returns the audit log's deadline event for id.
func deadlineEvent(t *testing.T, audit, id string) map[string]any {
	t.Helper()
	// The watchdog writes the event after its kill, which the container's
	// state shows first: on a loaded host the line can come a little later.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if e := findDeadlineEvent(t, audit, id); e != nil {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("no deadline event for %s in %s after 10 s", id, audit)
		}
	}
}

func findDeadlineEvent(t *testing.T, audit, id string) map[string]any {
	t.Helper()
	return findAuditEvent(t, audit, id, "deadline", "")
}

// findAuditEvent returns the audit log's first line of event for id (with
// outcome, unless that is "").
func findAuditEvent(t *testing.T, audit, id, event, outcome string) map[string]any {
	t.Helper()
	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil && e["event"] == event && e["id"] == id && (outcome == "" || e["outcome"] == outcome) {
			return e
		}
	}
	return nil
}

// inspectJSON is the part of `inspect --format json` the tests read.
type inspectJSON struct {
	Status      string `json:"status"`
	MaxLifetime string `json:"max_lifetime"`
	Deadline    string `json:"deadline"`
	TimeLeft    string `json:"time_left"`
	WatchdogPid int    `json:"watchdog_pid"`
	Decisions   []struct {
		Rule, Field, Action, Before, After, Why string
	} `json:"decisions"`
}

func inspect(t *testing.T, g []string, id string) inspectJSON {
	t.Helper()
	var in inspectJSON
	out := must(t, append(g, "inspect", "--format", "json", id)...)
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("inspect %s: %v\n%s", id, err, out)
	}
	return in
}

func withLifetimeAnnotation(v string) func(*rspec.Spec) {
	return func(s *rspec.Spec) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations["bulkhead.dev/max-lifetime"] = v
	}
}

// A container past its deadline is killed from outside: run returns the
// SIGKILL status 3 to 5 s after start, and the audit log says so.
func TestDeadlineRun(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			config, audit := lifetimeConfig(t, "3s")
			root := stateRoot(t)
			b := bundle.New(t, []string{"sleep", "3600"})
			id := uniqueID("deadline-" + backend)
			// Meanwhile, the watchdog must not be a child of bulkhead run
			// (a subreaper that waits for its children).
			parents := make(chan string, 1)
			done := make(chan struct{})
			go func() {
				seen := ""
				for {
					select {
					case <-done:
						parents <- seen
						return
					case <-time.After(100 * time.Millisecond):
					}
					for _, pid := range leftover.Watchdogs(id) {
						if p := parentCmdline(pid); p != "" {
							seen = p
						}
					}
				}
			}()
			begin := time.Now()
			r := bulkhead(t, "", "--config", config, "--root", root, "--backend", backend, "run", "--bundle", b, id)
			took := time.Since(begin)
			close(done)
			if p := <-parents; p == "" || strings.Contains(p, " run ") {
				t.Fatalf("watchdog's parent during run: %q; want one that is not bulkhead run", p)
			} else {
				t.Logf("watchdog's parent during run: %s", p)
			}
			if r.code != 137 {
				t.Fatalf("run exit %d, want 137 (SIGKILL)\nstderr: %s", r.code, r.stderr)
			}
			// 137 is also an OOM kill's: run says which it was.
			if !strings.Contains(r.stderr, "killed at its deadline, max_lifetime 3s") {
				t.Errorf("run killed at its deadline says nothing of it:\n%s", r.stderr)
			}
			// run includes create and delete; the lifetime counts from start.
			// The job sleeps an hour: 30 s tells the deadline from its end
			// however loaded the machine.
			if took < 3*time.Second || took > 30*time.Second {
				t.Fatalf("run took %s, want the 3 s lifetime plus create and delete", took)
			}
			e := deadlineEvent(t, audit, id)
			if e["outcome"] != "killed" || e["processes_killed"] == nil {
				t.Fatalf("deadline event %v, want outcome killed with a process count", e)
			}
			// The line names what was killed, as every other line does.
			if e["bundle"] != b || e["profile"] != "default" || e["mode"] != "enforce" {
				t.Errorf("deadline event %v: want the bundle %s, profile default and mode enforce", e, b)
			}
			noWatchdog(t, id)
			assertGone(t, root, backend, id)
			t.Logf("run took %s; audit: %v", took, e)
		})
	}
}

// Children that fork, double-fork and ignore SIGTERM die too; the
// deadline counts from start, not create.
func TestDeadlineKillsEveryProcess(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			config, audit := lifetimeConfig(t, "10s")
			root := stateRoot(t)
			g := []string{"--config", config, "--root", root, "--backend", backend}
			b := bundle.New(t, []string{"sh", "-c", `trap "" TERM; (sleep 3600 &) ; sleep 3600; echo not reached`})
			id := uniqueID("forks-" + backend)
			must(t, append(g, "create", "--bundle", b, id)...)
			t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
			if n := len(leftover.Watchdogs(id)); n != 1 {
				t.Fatalf("after create: %d watchdogs of %s, want 1", n, id)
			}
			in := inspect(t, g, id)
			if in.MaxLifetime != "10s" || in.Deadline != "" || !strings.Contains(in.TimeLeft, "not started yet") {
				t.Fatalf("before start: inspect %+v, want max_lifetime 10s, no deadline yet, and the time left not started", in)
			}
			time.Sleep(2 * time.Second) // a created container's clock does not run
			beforeStart := time.Now()
			must(t, append(g, "start", id)...)
			started := time.Now()
			time.Sleep(time.Second)
			s := containerState(t, g, id)
			if s.Status != "running" {
				t.Fatalf("1 s after start: %+v, want running", s)
			}
			var pids []json.RawMessage
			ps := must(t, append(g, "ps", "--format", "json", id)...)
			if err := json.Unmarshal([]byte(ps), &pids); err != nil || len(pids) < 3 {
				t.Fatalf("ps before the deadline: %s (%v), want sh, its sleep and the orphaned sleep", ps, err)
			}
			in = inspect(t, g, id)
			if in.Deadline == "" || in.TimeLeft == "" {
				t.Fatalf("running: inspect %+v, want a deadline and the time left", in)
			}
			deadline, err := time.Parse(time.RFC3339Nano, in.Deadline)
			if err != nil {
				t.Fatalf("deadline %q: %v", in.Deadline, err)
			}
			// The clock runs from start, not create: the watchdog arms it
			// when it sees the container run, within a poll of start.
			if deadline.Before(beforeStart.Add(10*time.Second)) || deadline.After(started.Add(15*time.Second)) {
				t.Fatalf("deadline %s is not 10 s after start (start ran from %s to %s)", in.Deadline, beforeStart.Format(time.RFC3339Nano), started.Format(time.RFC3339Nano))
			}
			if text := must(t, append(g, "inspect", id)...); !strings.Contains(text, "time left") || !strings.Contains(text, "watchdog") || !strings.Contains(text, "verification (") {
				t.Fatalf("inspect text lacks the time left, watchdog or verification:\n%s", text)
			}
			for containerState(t, g, id).Status != "stopped" {
				if time.Since(started) > 70*time.Second {
					t.Fatalf("container %s still %s 70 s after start, with a 10 s lifetime", id, containerState(t, g, id).Status)
				}
				time.Sleep(50 * time.Millisecond)
			}
			took := time.Since(started)
			if now := time.Now(); now.Before(deadline) {
				t.Fatalf("stopped %s after start, %s before its deadline", took, deadline.Sub(now))
			}
			// Stopped: no time is left, whatever the deadline said.
			if in := inspect(t, g, id); in.TimeLeft != "none: it has stopped" {
				t.Errorf("stopped: inspect says time left %q", in.TimeLeft)
			}
			e := deadlineEvent(t, audit, id)
			if n, _ := e["processes_killed"].(float64); n < 3 {
				t.Fatalf("deadline event %v: want at least 3 processes killed (sh, sleep, the orphaned sleep)", e)
			}
			waitNoWatchdog(t, id, 10*time.Second)
			must(t, append(g, "delete", id)...)
			assertGone(t, root, backend, id)
			t.Logf("stopped %s after start; audit: %v", took, e)
		})
	}
}

// A container that ends before its deadline, or is deleted first, leaves
// no watchdog behind: none runs once its delete (or run) returned.
func TestDeadlineWatchdogLeaves(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			config, audit := lifetimeConfig(t, "1m")
			root := stateRoot(t)
			g := []string{"--config", config, "--root", root, "--backend", backend}

			id := uniqueID("early-exit-" + backend)
			r := bulkhead(t, "", append(g, "run", "--bundle", bundle.New(t, []string{"sh", "-c", "sleep 1; exit 3"}), id)...)
			if r.code != 3 {
				t.Fatalf("run exit %d, want the container's 3\nstderr: %s", r.code, r.stderr)
			}
			noWatchdog(t, id)

			id = uniqueID("early-delete-" + backend)
			must(t, append(g, "run", "--detach", "--bundle", bundle.New(t, []string{"sleep", "3600"}), id)...)
			if n := len(leftover.Watchdogs(id)); n != 1 {
				t.Fatalf("running: %d watchdogs of %s, want 1", n, id)
			}
			must(t, append(g, "delete", "--force", id)...)
			noWatchdog(t, id)

			id = uniqueID("created-delete-" + backend)
			must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "3600"}), id)...)
			if n := len(leftover.Watchdogs(id)); n != 1 {
				t.Fatalf("created: %d watchdogs of %s, want 1", n, id)
			}
			must(t, append(g, "delete", "--force", id)...)
			noWatchdog(t, id)

			if data, _ := os.ReadFile(audit); strings.Contains(string(data), `"event":"deadline"`) {
				t.Fatalf("a deadline fired for a container that ended first:\n%s", data)
			}
		})
	}
}

// A watchdog whose container was deleted, and whose id a newer create
// took while the watchdog did not run, leaves the newer container alone:
// it neither writes its deadline into the newer record nor kills the
// newer container when its own deadline passes. Delete ends the watchdog
// once the record is gone; a delete killed right then (a caller's
// timeout) leaves it running, which the test makes: the old watchdog is
// stopped, and the delete is killed once it has signalled it.
func TestDeadlineWatchdogOfReplacedContainer(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			oldConfig, oldAudit := lifetimeConfig(t, "2s")
			newConfig, _ := lifetimeConfig(t, "1h")
			root := stateRoot(t)
			id := uniqueID("replaced-" + backend)
			g := func(config string) []string {
				return []string{"--config", config, "--root", root, "--backend", backend}
			}

			must(t, append(g(oldConfig), "run", "--detach", "--bundle", bundle.New(t, []string{"sleep", "3600"}), id)...)
			old := inspect(t, g(oldConfig), id).WatchdogPid
			if old <= 0 {
				t.Fatalf("no watchdog pid for %s", id)
			}
			// Stopped, the watchdog sees nothing of the delete and the
			// newer create; it resumes with its init gone and a record
			// under its id that is not its container's. It is stopped
			// while the test holds the registry's lock, so not while it
			// holds it (arming its deadline just after the start): a
			// watchdog stopped there would stop the delete below.
			unlock := registryLocked(t, root)
			err := syscall.Kill(old, syscall.SIGSTOP)
			unlock()
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(old, syscall.SIGCONT)
			deleteKilledAfterSignal(t, append(g(oldConfig), "delete", "--force", id), old)
			must(t, append(g(newConfig), "run", "--detach", "--bundle", bundle.New(t, []string{"sleep", "3600"}), id)...)
			defer bulkhead(t, "", append(g(newConfig), "delete", "--force", id)...)
			// The newer watchdog arms its deadline once it sees the start.
			var before string
			for end := time.Now().Add(20 * time.Second); before == ""; time.Sleep(50 * time.Millisecond) {
				if before = inspect(t, g(newConfig), id).Deadline; before == "" && time.Now().After(end) {
					t.Fatalf("the newer container %s has no deadline 20 s after its start", id)
				}
			}
			if err := syscall.Kill(old, syscall.SIGCONT); err != nil {
				t.Fatalf("resuming the old watchdog %d: %v", old, err)
			}

			// The old watchdog's 2 s are long past and its SIGTERM is
			// pending: it finishes the step it resumed in and leaves.
			for end := time.Now().Add(20 * time.Second); processRuns(old); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("the watchdog %d of the deleted container still runs 20 s after it resumed", old)
				}
			}
			var st struct{ Status string }
			if err := json.Unmarshal([]byte(must(t, append(g(newConfig), "state", id)...)), &st); err != nil {
				t.Fatal(err)
			}
			if st.Status != "running" {
				t.Fatalf("the newer container %s is %q after the old watchdog left, want running", id, st.Status)
			}
			if after := inspect(t, g(newConfig), id).Deadline; after != before {
				t.Fatalf("the newer container's deadline changed from %s to %s: the old watchdog wrote it", before, after)
			}
			if e := findDeadlineEvent(t, oldAudit, id); e != nil {
				t.Fatalf("the old watchdog fired: %v", e)
			}
		})
	}
}

// deleteKilledAfterSignal runs bulkhead with args (a delete) and kills it
// once watchdog, stopped, has SIGTERM pending: the delete sends it after
// removing the record, and then waits for the watchdog to go.
func deleteKilledAfterSignal(t *testing.T, args []string, watchdog int) {
	t.Helper()
	cmd := exec.Command(binaries.Bulkhead(t), args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for end := time.Now().Add(time.Minute); !termPending(t, watchdog); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("delete %v ended (%v) without signalling the stopped watchdog %d", args, err, watchdog)
		default:
		}
		if time.Now().After(end) {
			_ = cmd.Process.Kill()
			t.Fatalf("delete %v has not signalled the watchdog %d a minute later", args, watchdog)
		}
	}
	_ = cmd.Process.Kill()
	<-exited
}

// termPending tells whether SIGTERM waits for pid, sent to the process.
func termPending(t *testing.T, pid int) bool {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("watchdog %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if hex, ok := strings.CutPrefix(line, "ShdPnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatalf("watchdog %d: %q: %v", pid, line, err)
			}
			return mask&(1<<(syscall.SIGTERM-1)) != 0
		}
	}
	t.Fatalf("watchdog %d: no ShdPnd in its status", pid)
	return false
}

// processRuns tells whether pid runs: not gone, and no zombie its
// parent has yet to reap.
func processRuns(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !zombieStat(stat)
}

// The annotation may shorten the profile's lifetime, never lengthen it.
func TestDeadlineAnnotation(t *testing.T) {
	needRoot(t, "runc")
	config, audit := lifetimeConfig(t, "1m")
	root := stateRoot(t)
	g := []string{"--config", config, "--root", root}

	id := uniqueID("longer")
	must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "3600"}, withLifetimeAnnotation("2h")), id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	in := inspect(t, g, id)
	d := findDecision(t, in, "lifetime")
	if in.MaxLifetime != "1m0s" || d.Action != "tightened" || d.Before != "2h" || !strings.Contains(d.Why, "clamped") {
		t.Fatalf("annotation 2h over a 1m profile: max_lifetime %q, decision %+v; want clamped to 1m", in.MaxLifetime, d)
	}
	must(t, append(g, "delete", "--force", id)...)

	id = uniqueID("shorter")
	begin := time.Now()
	r := bulkhead(t, "", append(g, "run", "--bundle", bundle.New(t, []string{"sleep", "3600"}, withLifetimeAnnotation("1s")), id)...)
	// Well under the profile's minute, however loaded the machine.
	if took := time.Since(begin); r.code != 137 || took > 30*time.Second {
		t.Fatalf("annotation 1s under a 1m profile: run exit %d after %s, want 137 within about 1 s\nstderr: %s", r.code, took, r.stderr)
	}
	// The watchdog writes its deadline line after the kill; run's delete
	// lets it finish and waits for it.
	noWatchdog(t, id)
	if findDeadlineEvent(t, audit, id) == nil {
		t.Fatalf("run returned before the watchdog wrote the deadline line of %s", id)
	}

	id = uniqueID("garbage")
	r = bulkhead(t, "", append(g, "create", "--bundle", bundle.New(t, []string{"true"}, withLifetimeAnnotation("forever")), id)...)
	if r.code == 0 || !strings.Contains(r.stderr, "max-lifetime") {
		t.Fatalf("annotation forever: exit %d, stderr %q; want a refusal naming the annotation", r.code, r.stderr)
	}
	if n := len(leftover.Watchdogs(id)); n != 0 {
		t.Fatalf("refused create left %d watchdogs", n)
	}
}

func findDecision(t *testing.T, in inspectJSON, rule string) struct{ Rule, Field, Action, Before, After, Why string } {
	t.Helper()
	for _, d := range in.Decisions {
		if d.Rule == rule {
			return d
		}
	}
	t.Fatalf("no %s decision in %+v", rule, in.Decisions)
	return struct{ Rule, Field, Action, Before, After, Why string }{}
}

// parentCmdline is the command line of pid's parent, spaces for NULs.
func parentCmdline(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The fields after the command's closing parenthesis: state, ppid.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return ""
	}
	data, err := os.ReadFile("/proc/" + fields[1] + "/cmdline")
	if err != nil {
		return ""
	}
	return fields[1] + ": " + strings.ReplaceAll(strings.TrimRight(string(data), "\x00"), "\x00", " ") + " "
}

// registryLocked takes the registry's lock under root, as every bulkhead
// process that changes a record does, and returns its release.
func registryLocked(t *testing.T, root string) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, "bulkhead", bhstate.LockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// A container created and not started takes no exec: its process would
// be the only workload, and the lifetime, which runs from start, would
// never bound it. Once started, exec works.
func TestDeadlineNoExecBeforeStart(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, _ []string) {
		config, audit := lifetimeConfig(t, "1h")
		g := []string{"--config", config, "--root", root, "--backend", backend}
		id := uniqueID("execfirst-" + backend)
		must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "3600"}), id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		r := bulkhead(t, "", append(g, "exec", "-d", id, "sleep", "1000")...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code == 0 || !strings.Contains(lines[len(lines)-1], "has not been started") {
			t.Fatalf("exec into a created container: exit %d, stderr %q; want refused, naming why", r.code, r.stderr)
		}
		if s := containerState(t, g, id); s.Status != "created" {
			t.Fatalf("after the refused exec: %+v, want still created", s)
		}
		if backend == "runc" {
			var pids []json.RawMessage
			ps := must(t, append(g, "ps", "--format", "json", id)...)
			if err := json.Unmarshal([]byte(ps), &pids); err != nil || len(pids) != 1 {
				t.Fatalf("ps of the created container after the refused exec: %s (%v), want its init alone", ps, err)
			}
		}
		if findAuditEvent(t, audit, id, "exec", "refused") == nil {
			t.Errorf("no refused exec line for %s in the audit log", id)
		}
		must(t, append(g, "start", id)...)
		must(t, append(g, "exec", id, "true")...)
	})
}

// A container paused when its deadline passes is killed all the same, and
// ends stopped, so that an engine's plain delete removes it: runsc keeps
// a sandbox killed while paused as paused, and refuses that delete.
func TestDeadlinePausedContainer(t *testing.T) {
	onEachBackend(t, func(t *testing.T, backend, root string, _ []string) {
		config, audit := lifetimeConfig(t, "10s")
		g := []string{"--config", config, "--root", root, "--backend", backend}
		b := bundle.New(t, []string{"sleep", "3600"})
		id := uniqueID("paused-" + backend)
		must(t, append(g, "create", "--bundle", b, id)...)
		t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
		must(t, append(g, "start", id)...)
		started := time.Now()
		pause(t, g, id)
		waitKilledAtDeadline(t, g, audit, id, started, 10*time.Second)
		waitNoWatchdog(t, id, 5*time.Second)
		must(t, append(g, "delete", id)...)
		assertGone(t, root, backend, id)
	})
}

// A created runc container paused and resumed before start has not
// started: runc calls it paused meanwhile, and the watchdog armed the
// deadline on that and killed a container that never ran.
func TestDeadlineNotArmedByPauseBeforeStart(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	config, _ := lifetimeConfig(t, "1h")
	g := []string{"--config", config, "--root", root, "--backend", "runc"}
	id := uniqueID("pausecreated")
	must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "3600"}), id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	pause(t, g, id)
	// Longer than the watchdog's poll, so that it sees the paused status.
	time.Sleep(time.Second)
	must(t, append(g, "resume", id)...)
	time.Sleep(3 * time.Second)
	if in, st := inspect(t, g, id), containerState(t, g, id); in.Deadline != "" || st.Status != "created" {
		t.Fatalf("created, paused and resumed, never started: %s with deadline %q; want created with no deadline", st.Status, in.Deadline)
	}
	must(t, append(g, "start", id)...)
	must(t, append(g, "exec", id, "true")...)
}

// A start killed after it released the init and before it removed runc's
// exec.fifo leaves runc calling a running container created: the
// watchdog took that for "not started" and never armed the deadline, and
// a second start waited for a writer that would never come. The init's
// program tells instead: once it is no longer runc's, the job runs.
func TestDeadlineHoldsAfterAStartKilledMidway(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	config, audit := lifetimeConfig(t, "10s")
	g := []string{"--config", config, "--root", root, "--backend", "runc"}
	id := uniqueID("halfstart")
	must(t, append(g, "create", "--bundle", bundle.New(t, []string{"sleep", "3600"}), id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	// What a start does up to its death: release the init by reading the
	// fifo, and leave the fifo where it is.
	fifo := filepath.Join(root, "runc", id, "exec.fifo")
	f, err := os.OpenFile(fifo, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := io.ReadAll(f); err != nil || len(data) == 0 {
		t.Fatalf("reading %s: %q, %v", fifo, data, err)
	}
	f.Close()
	released := time.Now()
	// A second start ends at once, saying it runs, and leaves runc's
	// state saying so too.
	done := make(chan result, 1)
	go func() { done <- bulkhead(t, "", append(g, "start", id)...) }()
	select {
	case r := <-done:
		// A machine slow enough for the 10 s to pass first has the
		// deadline's kill end the job before the start: refused as dead.
		refused := strings.Contains(r.stderr, "already running") ||
			strings.Contains(r.stderr, "already dead") && findDeadlineEvent(t, audit, id) != nil
		if r.code == 0 || !refused {
			t.Errorf("start after a start killed midway: exit %d, stderr %q; want refused as already running", r.code, r.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("start after a start killed midway still waits 20 s later")
	}
	waitKilledAtDeadline(t, g, audit, id, released, 10*time.Second)
}

// waitKilledAtDeadline waits up to a minute past its lifetime from start
// for id to stop, and for its deadline line to say it was killed.
func waitKilledAtDeadline(t *testing.T, g []string, audit, id string, start time.Time, lifetime time.Duration) {
	t.Helper()
	for containerState(t, g, id).Status != "stopped" {
		if limit := lifetime + time.Minute; time.Since(start) > limit {
			t.Fatalf("container %s still %s %s after start, with a %s lifetime", id, containerState(t, g, id).Status, limit, lifetime)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if e := deadlineEvent(t, audit, id); e["outcome"] != "killed" {
		t.Errorf("deadline event %v, want killed", e)
	}
}
