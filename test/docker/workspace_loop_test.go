package docker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/probeout"
)

// TestWorkspaceRunLoopLeavesNothing: twenty `docker run --rm -i --network
// none -v DIR:/workspace` through a dockerd started plainly (its own
// containerd, its exec root reached through a symlink as /var/run/docker
// is) each print ok, and afterwards nothing of them is left: no shim of
// that dockerd, no task in its containerd, no mount in this mount
// namespace, no state directory of bulkhead or its backend, no cleanup
// error in dockerd's log (nor any error of bulkhead's that reached it),
// and each container's audit line for delete says it was deleted, with
// no error.
//
// containerd 1.6 deletes every container a second time after its shim
// exits ("cleaning up dead shim"), and now and then logs that warning with
// "exit status 255" and no message although no process exited 255 (seen
// with perf on sys_enter_exit_group): that report is its own, not a
// failed delete, and is not counted here.
func TestWorkspaceRunLoopLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a private dockerd is started")
	}
	bin := binaries.Dir(t)
	dir := t.TempDir()
	auditLog := filepath.Join(dir, "audit.jsonl")
	config := filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("changes_dir = %q\naudit_log = %q\n", filepath.Join(dir, "changes"), auditLog)
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(config, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	d := engine.NewDocker(t, engine.DockerOptions{NoBridge: true, Runtimes: map[string]engine.Runtime{
		"bulkhead": {Path: filepath.Join(bin, "bulkhead"), Args: []string{"--config", config}},
	}})
	if err := importImage(d, bin); err != nil {
		t.Fatal(err)
	}

	const runs = 20
	var ids []string
	for i := 0; i < runs; i++ {
		src := t.TempDir()
		if err := os.Chmod(src, 0o777); err != nil {
			t.Fatal(err)
		}
		probeout.GiveToUser(t, src)
		cidfile := filepath.Join(t.TempDir(), "cid")
		r := d.RunInput(t, []byte{}, "run", "--rm", "-i", "--cidfile", cidfile, "--network", "none", "--runtime=bulkhead",
			"-v", src+":/workspace", image, "sh", "-c", `echo y > /workspace/x && echo ok`)
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != "ok" {
			t.Fatalf("run %d: %s\ndockerd log:\n%s", i+1, r, d.LogTail(20))
		}
		cid, err := os.ReadFile(cidfile)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strings.TrimSpace(string(cid)))
		// The write went to the overlay, never to the source.
		if _, err := os.Lstat(filepath.Join(src, "x")); !os.IsNotExist(err) {
			t.Fatalf("run %d: the workspace write reached the source (%v)", i+1, err)
		}
		// The caller's directory goes at once, as in a shell loop.
		if err := os.RemoveAll(src); err != nil {
			t.Fatal(err)
		}
	}

	engine.AssertNoneLeft(t, ids, d.RuntimeRoot())
	var shims []string
	if !engine.Eventually(60*time.Second, func() bool {
		shims = nil
		for _, p := range engine.ProcessesMentioning(d.ContainerdAddress) {
			if strings.Contains(p, "containerd-shim") {
				shims = append(shims, p)
			}
		}
		return len(shims) == 0
	}) {
		t.Errorf("shims of this dockerd left:\n%s", strings.Join(shims, "\n"))
	}
	tasks, err := d.Ctr("tasks", "ls", "--quiet").CombinedOutput()
	if err != nil {
		t.Errorf("ctr tasks ls: %v\n%s", err, tasks)
	} else if strings.TrimSpace(string(tasks)) != "" {
		t.Errorf("tasks left in dockerd's containerd:\n%s", tasks)
	}
	if m := bulkheadMountsUnder(t, d.Dir); len(m) > 0 {
		t.Errorf("bulkhead's mounts left under the dockerd's directories:\n%s", strings.Join(m, "\n"))
	}
	entries, err := os.ReadDir(filepath.Join(d.RuntimeRoot(), "bulkhead"))
	if err != nil {
		t.Fatalf("bulkhead's state root under dockerd's runtime root: %v", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("state directory %s left", filepath.Join(d.RuntimeRoot(), "bulkhead", e.Name()))
		}
	}
	log, err := os.ReadFile(d.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(log), "\n") {
		if (strings.Contains(l, "level=error") && strings.Contains(l, "cleanup")) || strings.Contains(l, "bulkhead: ") {
			t.Errorf("dockerd logged a cleanup error: %s", l)
		}
	}

	deletes := auditDeletes(t, auditLog)
	for _, id := range ids {
		e, ok := deletes[id]
		switch {
		case !ok:
			t.Errorf("no delete in the audit log for %s", id)
		case e.Outcome != "deleted" || e.Error != "":
			t.Errorf("audit of delete of %s: outcome %q, error %q", id, e.Outcome, e.Error)
		}
	}
}

type auditLine struct {
	Event, ID, Outcome, Error string
}

// auditDeletes reads the last delete line of each container id.
func auditDeletes(t *testing.T, path string) map[string]auditLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	out := map[string]auditLine{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for s.Scan() {
		var e auditLine
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("audit line %.200q: %v", s.Text(), err)
		}
		if e.Event == "delete" {
			out[e.ID] = e
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// bulkheadMountsUnder lists the mounts of this mount namespace at or below
// dir that bulkhead made (its workspace tmpfs and overlays are named
// bulkhead-ws, and live in its state directories).
func bulkheadMountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) && strings.Contains(l, "bulkhead") {
			found = append(found, l)
		}
	}
	return found
}
