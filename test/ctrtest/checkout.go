package ctrtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/checkout"
	"bulkhead.dev/bulkhead/test/engine"
)

// GitImage is busybox with the host's git.
const GitImage = "docker.io/library/bulkhead-git:latest"

// CheckoutRun runs the checkout job (test/checkout) with `ctr run --rm`
// through the runtime flags given, on a checkout owned by uid 1000 (one
// owned by root is refused: refusedRootCheckout): the job's edits and git status inside, the kept
// patch applied with git apply reproducing its view, the source
// unchanged. The changes go where the runtime's configuration says; the
// test removes the entry it made.
func CheckoutRun(t *testing.T, d *Daemon, runtimeArgs ...string) {
	t.Helper()
	checkout.NeedGit(t)
	if err := d.ImportRootfs(GitImage, nil, checkout.AddGit); err != nil {
		t.Fatal(err)
	}
	for _, own := range []struct {
		name       string
		uid, other int
	}{{"uid1000", 1000, 0}, {"root", 0, 1000}} {
		t.Run(own.name, func(t *testing.T) {
			if own.uid == 0 {
				refusedRootCheckout(t, d, runtimeArgs)
				return
			}
			var out, id, src, before string
			// A container that exits at once sometimes has its output lost
			// through containerd 2 (see WorkspaceLoop): the evidence is
			// the output, so such a run is repeated, never passed.
			for attempt := 0; attempt < 3 && out == ""; attempt++ {
				src = checkout.Make(t, own.uid, own.other)
				before = checkout.Snapshot(t, src)
				id = NewID("checkout")
				args := append([]string{"run", "--rm"}, runtimeArgs...)
				args = append(args, "--mount", "type=bind,src="+src+",dst=/workspace,options=rbind:rw", GitImage, id, "sh", "-c", checkout.Job)
				r := d.Run(2*time.Minute, args...)
				if r.Code != 0 {
					t.Fatalf("%s\ncontainerd log:\n%s", r, d.LogTail(20))
				}
				out = r.Stdout
				t.Cleanup(func() { forgetKept(t, RuntimeRoot(), id) })
			}
			if out == "" {
				t.Fatalf("three runs exited 0 but none's output reached ctr")
			}
			t.Logf("inside:\n%s", out)
			checkout.Check(t, out)
			var patch string
			if !engine.Eventually(10*time.Second, func() bool {
				o, err := exec.Command(binaries.Bulkhead(t), "--root", RuntimeRoot(), "changes", "export", id).Output()
				patch = string(o)
				return err == nil && patch != ""
			}) {
				o, _ := exec.Command(binaries.Bulkhead(t), "--root", RuntimeRoot(), "changes", "export", id).CombinedOutput()
				t.Fatalf("no kept changes for %s:\n%s", id, o)
			}
			checkout.CheckPatch(t, src, patch, out)
			if after := checkout.Snapshot(t, src); after != before {
				t.Fatalf("the host checkout changed (contents, modes or owners)")
			}
			engine.AssertNoneLeft(t, []string{id}, RuntimeRoot())
		})
	}
}

// refusedRootCheckout: a checkout owned by root is refused as a workspace
// under the host's configuration, whose workspace_owners leaves root out
// (TestWorkspaceOwnerRefused): ctr names the reason, nothing runs and
// nothing is left, and the checkout is as it was.
func refusedRootCheckout(t *testing.T, d *Daemon, runtimeArgs []string) {
	src := checkout.Make(t, 0, 1000)
	before := checkout.Snapshot(t, src)
	id := NewID("checkout")
	args := append([]string{"run", "--rm"}, runtimeArgs...)
	args = append(args, "--mount", "type=bind,src="+src+",dst=/workspace,options=rbind:rw", GitImage, id, "sh", "-c", checkout.Job)
	r := d.Run(2*time.Minute, args...)
	t.Cleanup(func() { d.Run(30*time.Second, "container", "rm", id) })
	if r.Code == 0 {
		t.Fatalf("a root-owned checkout was handed over:\n%s", r)
	}
	if !strings.Contains(r.Stderr, "workspace_owners") {
		t.Errorf("the refusal does not name workspace_owners:\n%s", r)
	}
	t.Logf("refused: %s", strings.TrimSpace(r.Stderr))
	if after := checkout.Snapshot(t, src); after != before {
		t.Fatalf("the host checkout changed (contents, modes or owners)")
	}
	if !engine.Eventually(10*time.Second, func() bool { return len(Leftovers(t, id)) == 0 }) {
		t.Errorf("refused container left:\n%s", strings.Join(Leftovers(t, id), "\n"))
	}
}

// forgetKept removes the kept changes of id under the runtime root root,
// and nothing else of changes_dir.
func forgetKept(t *testing.T, root, id string) {
	o, err := exec.Command(binaries.Bulkhead(t), "changes", "list", "--format", "json").Output()
	if err != nil {
		return
	}
	var kept []struct{ ID, Root, Dir string }
	if json.Unmarshal(o, &kept) != nil {
		return
	}
	for _, k := range kept {
		if k.ID == id && strings.HasPrefix(k.Root, filepath.Dir(root)) {
			_ = os.RemoveAll(k.Dir)
			_ = os.Remove(filepath.Dir(k.Dir))
		}
	}
}

// PodCheckout runs the checkout job as a pod's container through CRI, its
// checkout a hostPath mount at /workspace, owned by uid 1000 (one owned by
// root is refused under the host's workspace_owners):
// the same evidence as CheckoutRun, read from the container's log.
func PodCheckout(t *testing.T, c CRI) {
	t.Helper()
	checkout.NeedGit(t)
	if err := c.D.ImportRootfs(GitImage, nil, checkout.AddGit); err != nil {
		t.Fatal(err)
	}
	pod := PodConfig(t, "bh-checkout", false)
	podID := c.Must(t, "runp", "--runtime", c.Handler, pod)
	t.Cleanup(func() {
		c.Run("stopp", podID)
		c.Run("rmp", "--force", podID)
	})
	root := RuntimeRootOf(CRINamespace)
	for i, own := range []struct {
		name       string
		uid, other int
	}{{"uid1000", 1000, 0}, {"root", 0, 1000}} {
		t.Run(own.name, func(t *testing.T) {
			src := checkout.Make(t, own.uid, own.other)
			before := checkout.Snapshot(t, src)
			if own.uid == 0 {
				// The engines read the host's configuration, whose
				// workspace_owners leaves root out (TestWorkspaceOwnerRefused).
				spec := WriteJSON(t, "ctr.json", map[string]any{
					"metadata": map[string]any{"name": "checkout", "attempt": i},
					"image":    map[string]any{"image": GitImage},
					"command":  []string{"sh", "-c", checkout.Job},
					"log_path": "checkout.log",
					"mounts":   []map[string]any{{"container_path": "/workspace", "host_path": src}},
					"linux":    map[string]any{},
				})
				// CRI runs the runtime's create at start.
				cid := c.Must(t, "create", podID, spec, pod)
				t.Cleanup(func() { c.Run("rm", "--force", cid) })
				r := c.Run("start", cid)
				if r.err == nil {
					t.Fatalf("a root-owned checkout was handed over through CRI: %s", r)
				}
				if !strings.Contains(r.stderr, "workspace_owners") {
					t.Errorf("the refusal does not name workspace_owners:\n%s", r)
				}
				t.Logf("refused: %s", strings.TrimSpace(r.stderr))
				if after := checkout.Snapshot(t, src); after != before {
					t.Fatalf("the host checkout changed (contents, modes or owners)")
				}
				return
			}
			spec := WriteJSON(t, "ctr.json", map[string]any{
				"metadata": map[string]any{"name": "checkout", "attempt": i},
				"image":    map[string]any{"image": GitImage},
				"command":  []string{"sh", "-c", checkout.Job},
				"log_path": "checkout.log",
				"mounts":   []map[string]any{{"container_path": "/workspace", "host_path": src}},
				"linux":    map[string]any{},
			})
			cid := c.Must(t, "create", podID, spec, pod)
			t.Cleanup(func() { forgetKept(t, root, cid) })
			c.Must(t, "start", cid)
			var state string
			if !engine.Eventually(time.Minute, func() bool {
				state = c.Run("inspect", "-o", "go-template", "--template", "{{.status.state}} {{.status.exitCode}}", cid).stdout
				return strings.HasPrefix(strings.TrimSpace(state), "CONTAINER_EXITED")
			}) {
				t.Fatalf("the job did not exit: state %q\ncontainerd log:\n%s", state, c.D.LogTail(20))
			}
			out := c.Must(t, "logs", cid)
			t.Logf("inside (%s):\n%s", strings.TrimSpace(state), out)
			if strings.TrimSpace(state) != "CONTAINER_EXITED 0" {
				t.Fatalf("the job failed: %s", state)
			}
			checkout.Check(t, out)
			if !engine.Eventually(30*time.Second, func() bool { return c.Run("rm", cid).err == nil }) {
				t.Fatalf("%s", c.Run("rm", cid))
			}
			var patch string
			if !engine.Eventually(10*time.Second, func() bool {
				o, err := exec.Command(binaries.Bulkhead(t), "--root", root, "changes", "export", cid).Output()
				patch = string(o)
				return err == nil && patch != ""
			}) {
				o, _ := exec.Command(binaries.Bulkhead(t), "--root", root, "changes", "export", cid).CombinedOutput()
				t.Fatalf("no kept changes for %s:\n%s", cid, o)
			}
			checkout.CheckPatch(t, src, patch, out)
			if after := checkout.Snapshot(t, src); after != before {
				t.Fatalf("the host checkout changed (contents, modes or owners)")
			}
			engine.AssertNoneLeft(t, []string{cid}, root)
		})
	}
}
