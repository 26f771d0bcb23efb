package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/fstree"
)

// treeHash hashes a tree without following links: names, types, modes,
// contents and link targets.
func treeHash(t *testing.T, root string, skip ...string) string {
	t.Helper()
	return fstree.Hash(t, root, func(e fstree.Entry) string {
		if slices.Contains(skip, e.Rel) {
			return ""
		}
		line := fmt.Sprintf("%s %v", e.Rel, e.Info.Mode().Type())
		switch {
		case e.Info.Mode().IsRegular():
			line += fmt.Sprintf(" %o %s", e.Info.Mode().Perm()&0o111, e.SHA256)
		case e.Target != "":
			line += " -> " + e.Target
		}
		return line
	})
}

// workspaceSource is a small tree the sandbox (uid 65534) may edit.
func workspaceSource(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	files := map[string]string{"keep.txt": "one\ntwo\nthree\n", "mod.txt": "a\nb\n", "del.txt": "gone\n", "sub/x.txt": "x\n"}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("chown", "-R", "65534:65534", src).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	return src
}

// workspaceConfig writes a bulkhead config whose kept changes go to a
// directory of the test's own.
func workspaceConfig(t *testing.T, extra string) (cfg, changes string) {
	t.Helper()
	dir := t.TempDir()
	changes = filepath.Join(dir, "changes")
	cfg = filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("changes_dir = %q\naudit_log = %q\n%s", changes, filepath.Join(dir, "audit.jsonl"), extra)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, changes
}

func workspaceBundle(t *testing.T, src, script string) string {
	return bundle.New(t, []string{"sh", "-c", script}, func(s *rspec.Spec) {
		s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: src, Options: []string{"rbind", "rw"}})
	})
}

// mountsUnder lists the mounts at or below dir in this process's mount table.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, l)
		}
	}
	return out
}

// keptEntries lists what changes_dir holds besides its lock file.
func keptEntries(t *testing.T, changes string) []string {
	t.Helper()
	var left []string
	err := filepath.WalkDir(changes, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != changes && filepath.Base(p) != ".lock" {
			left = append(left, strings.TrimPrefix(p, changes+"/"))
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return left
}

func runToEnd(t *testing.T, g []string, b, id string) {
	t.Helper()
	must(t, append(g, "create", "--bundle", b, id)...)
	t.Cleanup(func() { bulkhead(t, "", append(g, "delete", "--force", id)...) })
	must(t, append(g, "start", id)...)
	waitStatus(t, g, id, "stopped")
}

func TestWorkspaceOverlay(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, changes := workspaceConfig(t, "")
			src := workspaceSource(t)
			before := treeHash(t, src)
			id := uniqueID("ws-" + backend)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			b := workspaceBundle(t, src, "echo new > /workspace/new.txt && echo c >> /workspace/mod.txt && rm /workspace/del.txt")
			runToEnd(t, g, b, id)

			var rep struct {
				Workspaces []struct {
					Source  string
					Changes []struct{ Path, Kind, SHA256 string }
				}
			}
			if err := json.Unmarshal([]byte(must(t, append(g, "diff", "--format", "json", id)...)), &rep); err != nil {
				t.Fatal(err)
			}
			// The reviewer is told where the patch applies: the checkout,
			// not bulkhead's pin of it.
			if rep.Workspaces[0].Source != src {
				t.Errorf("diff names the source %q, want %q", rep.Workspaces[0].Source, src)
			}
			var got []string
			for _, c := range rep.Workspaces[0].Changes {
				got = append(got, c.Kind+" "+c.Path)
			}
			if want := "deleted del.txt,modified mod.txt,added new.txt"; strings.Join(got, ",") != want {
				t.Fatalf("diff lists %q, want %q", strings.Join(got, ","), want)
			}
			patch := must(t, append(g, "diff", id)...)
			t.Logf("patch:\n%s", patch)

			// The patch reproduces the container's view in a copy of the source.
			merged := filepath.Join(root, "bulkhead", id, "ws", "0", "merged")
			view := treeHash(t, merged)
			cp := filepath.Join(t.TempDir(), "copy")
			if out, err := exec.Command("cp", "-a", src, cp).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			apply := exec.Command("git", "apply", "-")
			apply.Dir, apply.Stdin = cp, strings.NewReader(patch)
			if out, err := apply.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v %s", err, out)
			}
			if h := treeHash(t, cp); h != view {
				t.Fatalf("patched copy differs from the container's view")
			}

			must(t, append(g, "delete", id)...)
			if after := treeHash(t, src); after != before {
				t.Fatalf("host source changed: %s → %s", before, after)
			}
			if m := mountsUnder(t, root); len(m) > 0 {
				t.Fatalf("mounts left after delete:\n%s", strings.Join(m, "\n"))
			}
			if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
				t.Fatalf("state directory left after delete (%v)", err)
			}
			// The changes outlive the container, with the same patch.
			if kept := must(t, append(g, "changes", "export", id)...); kept != patch {
				t.Fatalf("kept patch differs from the live one:\n%s", kept)
			}
			if l := must(t, append(g, "changes", "list")...); !strings.Contains(l, id) {
				t.Fatalf("changes list lacks %s:\n%s", id, l)
			}
			if out := must(t, append(g, "changes", "prune", "--older-than", "0s")...); !strings.Contains(out, id) {
				t.Fatalf("prune did not remove %s: %q", id, out)
			}
			if left := keptEntries(t, changes); len(left) != 0 {
				t.Fatalf("changes left after prune: %v", left)
			}
		})
	}
}

func TestWorkspaceHostile(t *testing.T) {
	shadow, err := os.ReadFile("/etc/shadow")
	if err != nil {
		t.Skip("no /etc/shadow to compare against")
	}
	secret := strings.SplitN(string(shadow), "\n", 2)[0]
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "[profiles.default]\nworkspace_size = \"32m\"\n")
			src := workspaceSource(t)
			before := treeHash(t, src)
			id := uniqueID("wsh-" + backend)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			b := workspaceBundle(t, src, "ln -s /etc/shadow /workspace/shadow; ln -s suid.ls /workspace/inside; "+
				"echo x > /workspace/suid && chmod u+s /workspace/suid; ls -l /workspace/suid > /workspace/suid.ls; "+
				"dd if=/dev/zero of=/workspace/big bs=1M count=1024 2> /tmp/dd.err; rm -f /workspace/big; cat /tmp/dd.err > /workspace/dd.err")
			runToEnd(t, g, b, id)
			upper := filepath.Join(root, "bulkhead", id, "ws", "0", "upper")
			ddErr, _ := os.ReadFile(filepath.Join(upper, "dd.err"))
			t.Logf("dd: %s", ddErr)
			if !strings.Contains(string(ddErr), "No space left on device") {
				t.Errorf("1 GiB write: %q, want ENOSPC", ddErr)
			}
			suidLs, _ := os.ReadFile(filepath.Join(upper, "suid.ls"))
			t.Logf("inside: %s", suidLs)
			// A device node cannot be made inside (no CAP_MKNOD): plant one
			// in the upper layer as a compromised sandbox would have to.
			if err := unix.Mknod(filepath.Join(upper, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{"patch", "json", "tar"} {
				r := bulkhead(t, "", append(g, "diff", "--format", format, id)...)
				if r.code != 0 {
					t.Fatalf("diff --format %s: %d %s", format, r.code, r.stderr)
				}
				if strings.Contains(r.stdout, secret) {
					t.Fatalf("diff --format %s read /etc/shadow", format)
				}
				t.Logf("%s stderr: %s", format, r.stderr)
				for _, want := range []string{"null: device node 1:3", "suid: setuid/setgid bit"} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("diff --format %s does not say %q: %s", format, want, r.stderr)
					}
				}
				if format == "patch" && (!strings.Contains(r.stdout, "diff --git a/inside b/inside\nnew file mode 120000") || strings.Contains(r.stdout, "b/shadow")) {
					t.Errorf("patch lacks the link inside as a symlink, or holds the one to /etc/shadow:\n%s", r.stdout)
				}
				// A link out of the checkout is one a tar extracted
				// after it would write through: in no format.
				if !strings.Contains(r.stderr, "shadow: a symlink whose target is absolute") {
					t.Errorf("diff --format %s does not name the link to /etc/shadow as left out: %s", format, r.stderr)
				}
			}
			must(t, append(g, "delete", id)...)
			if after := treeHash(t, src); after != before {
				t.Fatalf("host source changed")
			}
			if m := mountsUnder(t, root); len(m) > 0 {
				t.Fatalf("mounts left after delete:\n%s", strings.Join(m, "\n"))
			}
		})
	}
}

func TestWorkspaceModes(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			src := workspaceSource(t)
			write := "echo x > /workspace/new.txt"

			cfg, _ := workspaceConfig(t, "[profiles.default]\nworkspace_mode = \"readonly\"\n")
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			r := bulkhead(t, "", append(g, "run", "--bundle", workspaceBundle(t, src, write), uniqueID("wsro-"+backend))...)
			if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "Read-only file system") {
				t.Fatalf("readonly: exit %d, %q %q, want EROFS", r.code, r.stdout, r.stderr)
			}

			cfg, _ = workspaceConfig(t, "[profiles.default]\nworkspace_mode = \"direct\"\n")
			g = []string{"--config", cfg, "--root", root, "--backend", backend}
			r = bulkhead(t, "", append(g, "create", "--bundle", workspaceBundle(t, src, write), uniqueID("wsd-"+backend))...)
			if r.code == 0 || !strings.Contains(r.stderr, "workspace") {
				t.Fatalf("direct on an untrusted profile: exit %d %q, want refused by rule workspace", r.code, r.stderr)
			}

			cfg, _ = workspaceConfig(t, "[profiles.default]\nworkspace_mode = \"direct\"\ntrusted = true\n")
			g = []string{"--config", cfg, "--root", root, "--backend", backend}
			must(t, append(g, "run", "--bundle", workspaceBundle(t, src, write), uniqueID("wst-"+backend))...)
			if _, err := os.Stat(filepath.Join(src, "new.txt")); err != nil {
				t.Fatalf("direct on a trusted profile did not write the source: %v", err)
			}
		})
	}
}

// TestWorkspaceFailedCreate: a create the backend refuses leaves no
// overlay, tmpfs or directory behind.
func TestWorkspaceFailedCreate(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			src := workspaceSource(t)
			id := uniqueID("wsf-" + backend)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			b := bundle.New(t, []string{"/no/such/program"}, func(s *rspec.Spec) {
				s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: src, Options: []string{"rbind"}})
			})
			r := bulkhead(t, "", append(g, "create", "--bundle", b, id)...)
			if r.code == 0 {
				bulkhead(t, "", append(g, "delete", "--force", id)...)
				t.Skip("backend accepted the bundle")
			}
			if m := mountsUnder(t, root); len(m) > 0 {
				t.Fatalf("mounts left after a failed create:\n%s", strings.Join(m, "\n"))
			}
			if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
				t.Fatalf("state directory left after a failed create (%v)", err)
			}
		})
	}
}

// TestWorkspaceNothingChangedKeepsNothing: a job that changed nothing in
// its workspace (a read-only check, the probe, doctor) leaves no kept entry
// to bury the ones a reviewer must read, and asking for its changes says
// why there are none rather than naming a state file.
func TestWorkspaceNothingChangedKeepsNothing(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			cfg, changes := workspaceConfig(t, "")
			id := uniqueID("ws-none-" + backend)
			g := []string{"--config", cfg, "--root", stateRoot(t), "--backend", backend}
			runToEnd(t, g, workspaceBundle(t, workspaceSource(t), "cat /workspace/keep.txt >/dev/null"), id)
			must(t, append(g, "delete", id)...)
			if left := keptEntries(t, changes); len(left) != 0 {
				t.Errorf("a job that changed nothing kept %v", left)
			}
			r := bulkhead(t, "", append(g, "changes", "export", id)...)
			if r.code == 0 {
				t.Fatalf("changes export of a job with nothing kept succeeded: %q", r.stdout)
			}
			if !strings.Contains(r.stderr, "no changes of it are kept") || strings.Contains(r.stderr, "record.json") {
				t.Errorf("changes export says: %s", r.stderr)
			}
		})
	}
}

// TestWorkspaceEarlierRunKeptApart: a second run of an id keeps its
// changes beside the first run's, which is set aside under a name no
// container may have: a caller who created a container of a set-aside
// name (they were <id>.<delete time>) took that name at its delete, and
// the reviewer exporting it read the caller's changes.
func TestWorkspaceEarlierRunKeptApart(t *testing.T) {
	needRoot(t, "runc")
	root := stateRoot(t)
	cfg, _ := workspaceConfig(t, "")
	src := workspaceSource(t)
	id := uniqueID("ws-again")
	g := []string{"--config", cfg, "--root", root, "--backend", "runc"}
	for _, run := range []string{"first", "second"} {
		runToEnd(t, g, workspaceBundle(t, src, "echo "+run+" > /workspace/run.txt"), id)
		must(t, append(g, "delete", id)...)
	}
	var kept []struct{ ID string }
	if err := json.Unmarshal([]byte(must(t, append(g, "changes", "list", "--format", "json")...)), &kept); err != nil {
		t.Fatal(err)
	}
	var aside string
	for _, k := range kept {
		if strings.HasPrefix(k.ID, id+"@") {
			aside = k.ID
		}
	}
	if aside == "" {
		t.Fatalf("no entry set aside as %s@<delete time>: %+v", id, kept)
	}
	if p := must(t, append(g, "changes", "export", aside)...); !strings.Contains(p, "+first") {
		t.Errorf("%s exports:\n%s\nwant the first run's changes", aside, p)
	}
	if p := must(t, append(g, "changes", "export", id)...); !strings.Contains(p, "+second") {
		t.Errorf("%s exports:\n%s\nwant the second run's changes", id, p)
	}
	b := workspaceBundle(t, src, "echo caller > /workspace/run.txt")
	if r := bulkhead(t, "", append(g, "create", "--bundle", b, aside)...); r.code == 0 {
		bulkhead(t, "", append(g, "delete", "--force", aside)...)
		t.Errorf("a container was created under the set-aside name %s", aside)
	}
	must(t, append(g, "changes", "prune", "--older-than", "0s")...)
}
