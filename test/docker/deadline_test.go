package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/leftover"
)

// TestDeadline: a runtime whose profile has max_lifetime = "3s" (through
// runtimeArgs --config, since dockerd 20.10 passes no annotations) ends a
// `docker run` with SIGKILL's 137 about 3 s after start; Docker sees it
// exited, its shim is undisturbed, and no watchdog remains.
func TestDeadline(t *testing.T) {
	d := daemon(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	audit := filepath.Join(dir, "audit.jsonl")
	body := fmt.Sprintf("audit_log = %q\n[profiles.default]\nmax_lifetime = \"3s\"\n", audit)
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	registerRuntime(t, d, "bulkhead-3s", "--config", config)

	name := fmt.Sprintf("deadline-%d", os.Getpid())
	t.Cleanup(func() { d.Run(t, "rm", "-f", name) })
	begin := time.Now()
	r := d.Run(t, "run", "--name", name, "--runtime=bulkhead-3s", image, "sleep", "3600")
	took := time.Since(begin)
	if r.Code != 137 {
		t.Fatalf("want exit 137 (SIGKILL at the deadline)\n%s\ndockerd log:\n%s", r, d.LogTail(10))
	}
	// The job sleeps an hour: a minute tells the deadline from its end,
	// with room for a loaded host's create.
	if took < 3*time.Second || took > time.Minute {
		t.Fatalf("docker run took %s, want about the 3 s lifetime", took)
	}
	id := d.Must(t, "inspect", "-f", "{{.Id}}", name)
	if s := d.Must(t, "ps", "-a", "--filter", "name="+name, "--format", "{{.Status}}"); !strings.HasPrefix(s, "Exited (137)") {
		t.Fatalf("docker ps -a: %q, want Exited (137)", s)
	}
	// The watchdog writes its line once it has seen the container's
	// processes gone (at most 5 s after the kill), which can be after
	// docker has reported the exit.
	var data []byte
	if !engine.Eventually(10*time.Second, func() bool {
		data, _ = os.ReadFile(audit)
		return strings.Contains(string(data), `"event":"deadline","id":"`+id+`"`)
	}) {
		t.Fatalf("no deadline event for %s in the audit log:\n%s", id, data)
	}
	if !engine.Eventually(10*time.Second, func() bool { return len(leftover.Watchdogs(id)) == 0 }) {
		t.Fatalf("watchdogs %v of %s left after the deadline", leftover.Watchdogs(id), id)
	}

	// The shim that ran it is still good for the rest of the lifecycle:
	// start again (a new deadline), exec, stop, rm.
	d.Must(t, "start", name)
	if out := d.Must(t, "exec", name, "echo", "exec-ok"); out != "exec-ok" {
		t.Fatalf("docker exec after restart: %q", out)
	}
	pid, _ := strconv.Atoi(d.Must(t, "inspect", "-f", "{{.State.Pid}}", name))
	if pid <= 0 || len(leftover.Watchdogs(id)) != 1 {
		t.Fatalf("after docker start: pid %d, watchdogs %v; want a running container with one watchdog", pid, leftover.Watchdogs(id))
	}
	d.Must(t, "stop", "-t", "1", name)
	d.Must(t, "rm", name)
	if !engine.Eventually(10*time.Second, func() bool { return len(leftover.Watchdogs(id)) == 0 }) {
		t.Fatalf("watchdog of %s left after docker rm", id)
	}

	// Annotations reach a runtime only from API 1.43 (Docker 24) on: with
	// dockerd 20.10 (API 1.41) the client refuses --annotation. This
	// records which, rather than fails; the CLI tests cover the annotation.
	begin = time.Now()
	r = d.Run(t, "run", "--rm", "--annotation", "bulkhead.dev/max-lifetime=1s", "--runtime=bulkhead-3s", image, "sleep", "3600")
	switch took := time.Since(begin); {
	case r.Code == 137 && took < 2500*time.Millisecond:
		t.Logf("annotation max-lifetime=1s honoured through Docker: exit 137 after %s", took)
	case r.Code == 137:
		t.Logf("this dockerd dropped the annotation (no annotations before API 1.43): profile's 3 s applied, exit 137 after %s", took)
	default:
		t.Logf("docker run --annotation not available here: %s", strings.TrimSpace(r.Stderr))
	}

	// A container that ends first leaves no watchdog and no deadline event.
	id = d.Must(t, "run", "-d", "--runtime=bulkhead-3s", image, "true")
	d.Must(t, "wait", id)
	if !engine.Eventually(10*time.Second, func() bool { return len(leftover.Watchdogs(id)) == 0 }) {
		t.Fatalf("watchdog of %s left after the container exited", id)
	}
	d.Must(t, "rm", id)
}
