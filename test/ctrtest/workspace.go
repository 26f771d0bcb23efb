package ctrtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/probeout"
)

// workspaceScript writes to the workspace and says so: the sandbox's uid
// may write there, and its overlay takes the write.
const workspaceScript = `echo y > /workspace/x && echo ok`

// LoopRuns is how many containers the workspace loops run: enough that
// a leak per container shows up as a count, not a one-off.
const LoopRuns = 20

// assertSourceUntouched fails unless the container's write stayed in its
// overlay: the write succeeded (the sandbox printed ok), and the source
// has no trace of it.
func assertSourceUntouched(t *testing.T, src string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(src, "x")); !os.IsNotExist(err) {
		t.Fatalf("the workspace write reached the source %s (%v): no overlay", src, err)
	}
}

// workspaceSource is a fresh directory of an ordinary user's that anyone
// may write to, as a user's `mktemp -d; chmod 777` is.
func workspaceSource(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	if err := os.Chmod(src, 0o777); err != nil {
		t.Fatal(err)
	}
	probeout.GiveToUser(t, src)
	return src
}

// WorkspaceLoop runs `ctr run --rm` with a workspace bind LoopRuns times
// through the runtime flags given; each writes to its workspace (exit 0,
// the source untouched), and afterwards nothing of any is left
// (engine.AssertNoneLeft), no task of them is listed and containerd
// logged no cleanup error about them.
func WorkspaceLoop(t *testing.T, d *Daemon, runtimeArgs ...string) {
	t.Helper()
	var ids []string
	lost := 0
	for i := 0; i < LoopRuns; i++ {
		src := workspaceSource(t)
		id := NewID("wsloop")
		args := append([]string{"run", "--rm"}, runtimeArgs...)
		args = append(args, "--mount", "type=bind,src="+src+",dst=/workspace,options=rbind:rw", Image, id, "sh", "-c", workspaceScript)
		r := d.Run(2*time.Minute, args...)
		// The exit status is the container's: 0 only if the write to the
		// workspace succeeded. Its output is checked too, but through
		// containerd 2.x and containerd-shim-bulkhead-v2 a container that
		// exits at once sometimes has its output lost; that is counted and
		// logged, not taken for a failed write.
		if r.Code != 0 {
			t.Fatalf("run %d: %s\ncontainerd log:\n%s", i+1, r, d.LogTail(20))
		}
		if out := strings.TrimSpace(r.Stdout); out != "ok" {
			if out != "" {
				t.Fatalf("run %d printed %q, want ok", i+1, out)
			}
			lost++
		}
		ids = append(ids, id)
		assertSourceUntouched(t, src)
		if err := os.RemoveAll(src); err != nil {
			t.Fatal(err)
		}
	}
	if lost > 0 {
		t.Logf("%d of %d runs exited 0 but their output did not reach ctr", lost, LoopRuns)
	}
	engine.AssertNoneLeft(t, ids, RuntimeRoot())
	tasks := d.Must(t, "task", "ls", "--quiet")
	for _, id := range ids {
		if strings.Contains(tasks, id) {
			t.Errorf("task %s still listed:\n%s", id, tasks)
		}
	}
	assertNoCleanupErrors(t, d.Log, ids)
}

// cleanupWords mark an error line of a daemon's log as one about taking a
// container down. containerd 2's CRI also logs errors for metrics it could
// not collect from a container that just exited: those are not cleanup.
var cleanupWords = []string{"delete", "cleanup", "clean up", "remove", "unmount", "shim", "bulkhead"}

// assertNoCleanupErrors fails for every error line of a daemon's log that
// names one of ids and is about taking it down.
func assertNoCleanupErrors(t *testing.T, log string, ids []string) {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.Contains(l, "level=error") || strings.Contains(l, "collecting metrics") {
			continue
		}
		cleanup := false
		for _, w := range cleanupWords {
			cleanup = cleanup || strings.Contains(strings.ToLower(l), w)
		}
		for _, id := range ids {
			if cleanup && strings.Contains(l, id) {
				t.Errorf("the daemon logged a cleanup error about %s: %s", id, l)
			}
		}
	}
}

// PodWorkspace runs LoopRuns containers with a workspace mount one after
// another in one pod through CRI (create, start, exit, rm), then stops and
// removes the pod; each prints ok, and nothing of any container or the
// pod is left.
func PodWorkspace(t *testing.T, c CRI) {
	pod := PodConfig(t, "bh-ws", false)
	podID := c.Must(t, "runp", "--runtime", c.Handler, pod)
	t.Cleanup(func() {
		c.Run("stopp", podID)
		c.Run("rmp", "--force", podID)
	})
	var ids []string
	for i := 0; i < LoopRuns; i++ {
		src := workspaceSource(t)
		spec := WriteJSON(t, "ctr.json", map[string]any{
			"metadata": map[string]any{"name": "ws", "attempt": i},
			"image":    map[string]any{"image": Image},
			"command":  []string{"sh", "-c", workspaceScript},
			"log_path": "ws.log",
			"mounts":   []map[string]any{{"container_path": "/workspace", "host_path": src}},
			"linux":    map[string]any{},
		})
		cid := c.Must(t, "create", podID, spec, pod)
		ids = append(ids, cid)
		c.Must(t, "start", cid)
		var state string
		if !engine.Eventually(time.Minute, func() bool {
			state = c.Run("inspect", "-o", "go-template", "--template", "{{.status.state}}", cid).stdout
			return strings.TrimSpace(state) == "CONTAINER_EXITED"
		}) {
			t.Fatalf("container %d did not exit: state %q\ncontainerd log:\n%s", i+1, state, c.D.LogTail(20))
		}
		if out := c.Must(t, "logs", cid); strings.TrimSpace(out) != "ok" {
			t.Fatalf("container %d printed %q, want ok", i+1, out)
		}
		// The CRI plugin records the exit asynchronously: rm can race it.
		if !engine.Eventually(30*time.Second, func() bool { return c.Run("rm", cid).err == nil }) {
			t.Fatalf("%s", c.Run("rm", cid))
		}
		assertSourceUntouched(t, src)
		if err := os.RemoveAll(src); err != nil {
			t.Fatal(err)
		}
	}
	engine.AssertNoneLeft(t, ids, RuntimeRootOf(CRINamespace))
	c.Must(t, "stopp", podID)
	c.Must(t, "rmp", podID)
	c.LeftoversGone(t, podID)
	assertNoCleanupErrors(t, c.D.Log, append(ids, podID))
}
