package docker

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/test/binaries"
	"bulkhead.dev/bulkhead/test/engine"
	"bulkhead.dev/bulkhead/test/fstree"
)

// TestDisposableWorkspace: `docker run --rm -v SRC:/workspace` edits the
// workspace (adds, modifies and deletes a file); once Docker has removed
// the container, `bulkhead changes export ID --format patch` under the
// root dockerd hands the runtime gives exactly those changes, the patch
// applied to a copy of SRC reproduces what the container saw, SRC is
// unchanged to the byte (and to the mtime and owner), and no mount, state
// directory or process of the container is left.
//
// The runtime is registered with --config, so that the kept changes go to
// the test's own changes_dir and not to /var/lib/bulkhead.
func TestDisposableWorkspace(t *testing.T) {
	d := daemon(t)
	dir := t.TempDir()
	changesDir := filepath.Join(dir, "changes")
	config := filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("changes_dir = %q\naudit_log = %q\n", changesDir, filepath.Join(dir, "audit.jsonl"))
	// bulkhead reads only a root-owned config nobody else may write.
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(config, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	registerRuntime(t, d, "bulkhead-ws", "--config", config)

	// SRC belongs to the sandbox's uid 65534: the overlay's upper root
	// copies the source root's owner and mode, so the sandbox may write
	// where a read-write bind would have let it.
	src := filepath.Join(t.TempDir(), "src")
	files := map[string]string{"keep.txt": "one\ntwo\nthree\n", "mod.txt": "a\nb\n", "del.txt": "gone\n", "sub/x.txt": "x\n"}
	for name, content := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := filepath.WalkDir(src, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	before, beforeHash := sourceSnapshot(t, src), treeHash(t, src)

	// The container edits, then prints its view of /workspace: one "M"
	// line per path with its mode and, for files, the content's sha256.
	script := `set -e
echo new > /workspace/new.txt
echo c >> /workspace/mod.txt
rm /workspace/del.txt
cd /workspace
find . | while read -r p; do
	if [ -f "$p" ]; then echo "M $(stat -c '%n %A' "$p") $(sha256sum "$p" | cut -c1-64)"; else echo "M $(stat -c '%n %A' "$p")"; fi
done
echo edited`
	cidfile := filepath.Join(t.TempDir(), "cid")
	r := d.Run(t, "run", "--rm", "--cidfile", cidfile, "--runtime=bulkhead-ws", "-v", src+":/workspace", image, "sh", "-c", script)
	if r.Code != 0 || !strings.Contains(r.Stdout, "edited") {
		t.Fatalf("the container did not make its edits\n%s\ndockerd log:\n%s", r, d.LogTail(10))
	}
	cid, err := os.ReadFile(cidfile)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(cid))
	if len(id) != 64 {
		t.Fatalf("container id %q from --cidfile", id)
	}
	var view []string
	for _, l := range strings.Split(r.Stdout, "\n") {
		if m, ok := strings.CutPrefix(l, "M "); ok {
			view = append(view, m)
		}
	}
	sort.Strings(view)
	if v := strings.Join(view, "\n"); !strings.Contains(v, "./new.txt ") || strings.Contains(v, "./del.txt ") || !strings.Contains(v, "./sub/x.txt ") {
		t.Fatalf("the container's view lacks its edits:\n%s", v)
	}

	// --rm: the container is gone when docker run returns.
	if out := d.Run(t, "inspect", id); out.Code == 0 {
		t.Fatalf("docker still knows %s after run --rm", id)
	}

	// The changes are kept after delete, under docker's runtime root.
	g := []string{"--config", config, "--root", d.RuntimeRoot()}
	var patch string
	if !engine.Eventually(10*time.Second, func() bool {
		out, err := exec.Command(binaries.Bulkhead(t), append(g, "changes", "export", "--format", "patch", id)...).Output()
		patch = string(out)
		return err == nil && patch != ""
	}) {
		out, _ := exec.Command(binaries.Bulkhead(t), append(g, "changes", "export", "--format", "patch", id)...).CombinedOutput()
		t.Fatalf("no kept changes for %s:\n%s\ndockerd log:\n%s", id, out, d.LogTail(20))
	}
	t.Logf("patch:\n%s", patch)
	var touched []string
	for _, l := range strings.Split(patch, "\n") {
		if rest, ok := strings.CutPrefix(l, "diff --git a/"); ok {
			a, _, _ := strings.Cut(rest, " b/")
			touched = append(touched, a)
		}
	}
	sort.Strings(touched)
	if got, want := strings.Join(touched, ","), "del.txt,mod.txt,new.txt"; got != want {
		t.Fatalf("patch touches %q, want exactly %q", got, want)
	}

	var rep struct {
		Workspaces []struct {
			Changes []struct{ Path, Kind string }
		}
	}
	js, err := exec.Command(binaries.Bulkhead(t), append(g, "changes", "export", "--format", "json", id)...).Output()
	if err != nil {
		t.Fatalf("changes export --format json: %v", err)
	}
	if err := json.Unmarshal(js, &rep); err != nil || len(rep.Workspaces) != 1 {
		t.Fatalf("changes json (%v):\n%s", err, js)
	}
	var kinds []string
	for _, c := range rep.Workspaces[0].Changes {
		kinds = append(kinds, c.Kind+" "+c.Path)
	}
	sort.Strings(kinds)
	if got, want := strings.Join(kinds, ","), "added new.txt,deleted del.txt,modified mod.txt"; got != want {
		t.Fatalf("changes json lists %q, want %q", got, want)
	}

	// They were kept by the delete that ran under docker's runtime root.
	var kept []struct{ ID, Root string }
	list, err := exec.Command(binaries.Bulkhead(t), append(g, "changes", "list", "--format", "json")...).Output()
	if err != nil || json.Unmarshal(list, &kept) != nil {
		t.Fatalf("changes list --format json: %v\n%s", err, list)
	}
	found := false
	for _, k := range kept {
		if k.ID == id {
			found = true
			if k.Root != d.RuntimeRoot() {
				t.Errorf("changes of %s kept with root %q, want docker's runtime root %q", id, k.Root, d.RuntimeRoot())
			}
		}
	}
	if !found {
		t.Fatalf("changes list lacks %s:\n%s", id, list)
	}

	// git apply on a copy of SRC reproduces the container's view.
	cp := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", src, cp).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	apply := exec.Command("git", "apply", "-")
	apply.Dir, apply.Stdin = cp, strings.NewReader(patch)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v %s", err, out)
	}
	if got := viewOf(t, cp); strings.Join(got, "\n") != strings.Join(view, "\n") {
		t.Fatalf("the patched copy differs from the container's view\npatched copy:\n%s\ncontainer:\n%s", strings.Join(got, "\n"), strings.Join(view, "\n"))
	}

	// SRC is untouched: contents, modes, owners and mtimes.
	if after := sourceSnapshot(t, src); after != before {
		t.Fatalf("the source changed\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if after := treeHash(t, src); after != beforeHash {
		t.Fatalf("the source's tree hash changed: %s → %s", beforeHash, after)
	}

	// Nothing of the container remains.
	if m := leftMounts(t, d.RuntimeRoot(), id, src); len(m) > 0 {
		t.Fatalf("mounts left after docker run --rm:\n%s", strings.Join(m, "\n"))
	}
	if _, err := os.Stat(filepath.Join(d.RuntimeRoot(), "bulkhead", id)); !os.IsNotExist(err) {
		t.Fatalf("state directory of %s left (%v)", id, err)
	}
	if l := bulkheadList(t, d); strings.Contains(l, id) {
		t.Fatalf("bulkhead list still shows %s:\n%s", id, l)
	}
	if !engine.Eventually(5*time.Second, func() bool { return len(engine.ProcessesMentioning(id)) == 0 }) {
		t.Fatalf("processes of %s left:\n%s", id, strings.Join(engine.ProcessesMentioning(id), "\n"))
	}

	if out, err := exec.Command(binaries.Bulkhead(t), append(g, "changes", "prune", "--older-than", "0s")...).CombinedOutput(); err != nil || !strings.Contains(string(out), id) {
		t.Fatalf("changes prune did not remove %s: %v %s", id, err, out)
	}
}

// registerRuntime adds a runtime bulkhead with args to the shared dockerd
// for the test's duration, next to the two every test has.
func registerRuntime(t *testing.T, d *engine.Docker, name string, args ...string) {
	t.Helper()
	bin := binaries.Dir(t)
	runtimes := map[string]engine.Runtime{
		"bulkhead":       {Path: filepath.Join(bin, "bulkhead")},
		"bulkhead-runsc": {Path: filepath.Join(bin, "bulkhead-runsc")},
	}
	with := map[string]engine.Runtime{name: {Path: filepath.Join(bin, "bulkhead"), Args: args}}
	for k, v := range runtimes {
		with[k] = v
	}
	if err := d.WriteConfig(with); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.WriteConfig(runtimes); err == nil {
			_ = d.Reload()
		}
	})
}

// sourceSnapshot lists every path below dir with its mode, owner, size,
// mtime and content hash, sorted: a readable byte-for-byte record.
func sourceSnapshot(t *testing.T, dir string) string {
	t.Helper()
	return strings.Join(fstree.Lines(t, dir, func(e fstree.Entry) string {
		st := e.Info.Sys().(*syscall.Stat_t)
		return strings.TrimSpace(fmt.Sprintf("%s %v %d:%d %d %d %s", e.Rel, e.Info.Mode(), st.Uid, st.Gid, e.Info.Size(), e.Info.ModTime().UnixNano(), e.SHA256))
	}), "\n")
}

// viewOf is a tree in the form the container printed its /workspace:
// "./path mode" and, for files, the content's sha256, sorted.
func viewOf(t *testing.T, dir string) []string {
	t.Helper()
	return fstree.Lines(t, dir, func(e fstree.Entry) string {
		name := "."
		if e.Rel != "." {
			name = "./" + filepath.ToSlash(e.Rel)
		}
		return strings.TrimSpace(name + " " + e.Info.Mode().String() + " " + e.SHA256)
	})
}

// leftMounts lists this mount namespace's mounts that belong to the
// container: any overlay under the runtime root, and any mount whose
// mount point names the container or whose options name the source.
func leftMounts(t *testing.T, root, id, src string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		mountpoint := f[4]
		under := mountpoint == root || strings.HasPrefix(mountpoint, root+"/")
		fstype := ""
		if _, after, ok := strings.Cut(l, " - "); ok {
			if g := strings.Fields(after); len(g) > 0 {
				fstype = g[0]
			}
		}
		if (under && fstype == "overlay") || strings.Contains(mountpoint, id) || strings.Contains(l, src) {
			left = append(left, l)
		}
	}
	return left
}

// TestReadOnlyWorkspaceCp: dockerd serves `docker cp` itself, from the
// bind's host source. A workspace given `:ro` still gets its overlay (the
// sandbox writes to its copy), and dockerd refuses `docker cp` into it, so
// the host source is written by neither.
func TestReadOnlyWorkspaceCp(t *testing.T) {
	d := daemon(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("changes_dir = %q\naudit_log = %q\n", filepath.Join(dir, "changes"), filepath.Join(dir, "audit.jsonl"))
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(config, 0o644); err != nil {
		t.Fatal(err)
	}
	registerRuntime(t, d, "bulkhead-wsro", "--config", config)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(src, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, src)
	name := fmt.Sprintf("wsro-%d", os.Getpid())
	r := d.Run(t, "run", "-d", "--name", name, "--runtime=bulkhead-wsro", "-v", src+":/workspace:ro", image,
		"sh", "-c", "echo mine > /workspace/new.txt && sleep 60")
	if r.Code != 0 {
		t.Fatalf("docker run: %s\ndockerd log:\n%s", r, d.LogTail(10))
	}
	t.Cleanup(func() { d.Run(t, "rm", "-f", name) })
	var seen string
	for i := 0; i < 50; i++ {
		seen = d.Run(t, "exec", name, "cat", "/workspace/new.txt").Stdout
		if seen != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.TrimSpace(seen) != "mine" {
		t.Fatalf("the sandbox could not write its :ro workspace's overlay: %q", seen)
	}
	local := filepath.Join(t.TempDir(), "cp.txt")
	if err := os.WriteFile(local, []byte("from docker cp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := d.Run(t, "cp", local, name+":/workspace/cp.txt")
	t.Logf("docker cp into the :ro workspace: exit %d %s", cp.Code, strings.TrimSpace(cp.Stderr))
	if cp.Code == 0 {
		t.Errorf("docker cp into a :ro workspace succeeded")
	}
	if after := treeHash(t, src); after != before {
		t.Errorf("the host source changed")
	}
}
