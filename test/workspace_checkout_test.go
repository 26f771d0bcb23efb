package test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/fstree"
)

// gitCheckout makes a git checkout as a user's clone looks: files 0644,
// directories 0755, everything owned by uid:uid, except other.txt, which
// belongs to another user (other).
func gitCheckout(t *testing.T, uid, other int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "checkout")
	files := map[string]string{
		"README.md":      "hello\nworld\n",
		"src/main.go":    "package main\n\nfunc main() {}\n",
		"rename-me.txt":  "moving\n",
		"delete-me.txt":  "going\n",
		"other.txt":      "not yours\n",
		"docs/guide.txt": "read me\n",
	}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=dev", "-c", "user.email=dev@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "initial")
	for _, c := range [][]string{
		{"chmod", "-R", "u=rwX,go=rX", src},
		{"chown", "-R", fmt.Sprintf("%d:%d", uid, uid), src},
		{"chown", fmt.Sprintf("%d:%d", other, other), filepath.Join(src, "other.txt")},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", c, err, out)
		}
	}
	return src
}

// ownedTreeHash is treeHash with every entry's owner and full mode: the
// host checkout must keep all of them.
func ownedTreeHash(t *testing.T, root string) string {
	t.Helper()
	return fstree.Hash(t, root, func(e fstree.Entry) string {
		st := e.Info.Sys().(*syscall.Stat_t)
		return fmt.Sprintf("%s %v %d:%d %s%s", e.Rel, e.Info.Mode(), st.Uid, st.Gid, e.SHA256, e.Target)
	})
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// gitRootfs is a busybox rootfs with the host's git in it.
func gitRootfs(t *testing.T, rootfs string) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skipf("needs git on the host to build the test rootfs: %v", err)
	}
	if err := bundle.AddProgram(rootfs, git); err != nil {
		t.Fatal(err)
	}
}

// checkoutJob edits the checkout as a formatter and a developer would:
// sed -i (which writes a new file and renames it over the old), a new
// file, a rename and a delete; then shows git's view and the tree.
const checkoutJob = `set -e
cd /workspace
sed -i s/world/sandbox/ README.md
echo 'package main // added' > src/new.go
mv rename-me.txt renamed.txt
rm delete-me.txt
if echo x >> other.txt 2>/dev/null; then echo other-writable; else echo other-not-writable; fi
id -u; stat -c '%u:%g %a %n' . README.md src
echo STATUS
git status --porcelain
echo DIFF
git diff --stat
echo VIEW
find . -path ./.git -prune -o -type f -print | xargs sha256sum
`

// TestWorkspaceCheckout: a git checkout owned by an ordinary user and one
// owned by root are the sandbox user's inside, on runc and gVisor: it
// edits, creates, renames and deletes, git status shows it, the host tree
// (owners and modes included) stays as it was, and the kept patch applies
// with git apply to reproduce the container's view.
func TestWorkspaceCheckout(t *testing.T) {
	for _, backend := range backends {
		for _, own := range []struct {
			name       string
			uid, other int
		}{{"uid1000", 1000, 0}, {"root", 0, 1000}} {
			t.Run(backend+"/"+own.name, func(t *testing.T) {
				needRoot(t, backend)
				root := stateRoot(t)
				cfg, _ := workspaceConfig(t, "")
				src := gitCheckout(t, own.uid, own.other)
				before := ownedTreeHash(t, src)
				id := uniqueID("co-" + backend)
				g := []string{"--config", cfg, "--root", root, "--backend", backend}
				b := bundle.New(t, []string{"sh", "-c", checkoutJob}, func(s *rspec.Spec) {
					s.Mounts = append(s.Mounts, rspec.Mount{Destination: "/workspace", Type: "bind", Source: src, Options: []string{"rbind", "rw"}})
				})
				gitRootfs(t, filepath.Join(b, "rootfs"))

				out := must(t, append(g, "run", "--bundle", b, id)...)
				t.Logf("inside:\n%s", out)
				checkCheckoutJob(t, out)

				if after := ownedTreeHash(t, src); after != before {
					t.Fatalf("host checkout changed (contents, modes or owners)")
				}
				patch := must(t, append(g, "changes", "export", id)...)
				t.Logf("patch:\n%s", patch)
				if strings.Contains(patch, "old mode") || !strings.Contains(patch, "new file mode 100644") {
					t.Errorf("the patch must keep the source's modes and give the new file 0644:\n%s", patch)
				}
				cp := filepath.Join(t.TempDir(), "copy")
				if out, err := exec.Command("cp", "-a", src, cp).CombinedOutput(); err != nil {
					t.Fatalf("cp: %v %s", err, out)
				}
				apply := exec.Command("git", "apply", "-")
				apply.Dir, apply.Stdin = cp, strings.NewReader(patch)
				if out, err := apply.CombinedOutput(); err != nil {
					t.Fatalf("git apply: %v %s", err, out)
				}
				view := sortedLines(section(out, "VIEW", ""))
				if got := hostView(t, cp); got != view {
					t.Fatalf("the patched copy differs from the container's view:\ncopy:\n%s\ncontainer:\n%s", got, view)
				}
			})
		}
	}
}

func checkCheckoutJob(t *testing.T, out string) {
	t.Helper()
	if !strings.Contains(out, "other-not-writable") {
		t.Errorf("a file of another owner was writable in place; it keeps its owner")
	}
	lines := strings.Split(section(out, "", "STATUS"), "\n")
	if len(lines) < 4 || lines[1] != "65534" || !strings.HasPrefix(lines[2], "65534:65534 755 .") || !strings.HasPrefix(lines[3], "65534:65534 644 README.md") {
		t.Errorf("inside, the workspace must be the sandbox user's with the source's modes:\n%s", section(out, "", "STATUS"))
	}
	status := section(out, "STATUS", "DIFF")
	for _, want := range []string{" M README.md", " D delete-me.txt", " D rename-me.txt", "?? renamed.txt", "?? src/new.go"} {
		if !strings.Contains(status, want+"\n") {
			t.Errorf("git status inside lacks %q:\n%s", want, status)
		}
	}
	if strings.Contains(status, "other.txt") {
		t.Errorf("other.txt changed inside:\n%s", status)
	}
}

// section is the text of out between the lines start and end ("" for the
// beginning or the end).
func section(out, start, end string) string {
	if start != "" {
		i := strings.Index(out, start+"\n")
		if i < 0 {
			return ""
		}
		out = out[i+len(start)+1:]
	}
	if end != "" {
		if i := strings.Index(out, end+"\n"); i >= 0 {
			out = out[:i]
		}
	}
	return out
}

// hostView lists a tree's regular files outside .git as sha256sum does,
// in the order of `find` inside: compared as a sorted set.
func hostView(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		lines = append(lines, hex.EncodeToString(sum[:])+"  ./"+strings.TrimPrefix(p, root+"/"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sortedLines(strings.Join(lines, "\n"))
}

// TestWorkspaceNoIDMapRefused: a source whose filesystem cannot be
// id-mapped (ramfs, as any filesystem on a kernel without id-mapped
// mounts) and that the sandbox user does not own is refused with the
// reason, and nothing is left behind; never a workspace the job cannot
// write.
func TestWorkspaceNoIDMapRefused(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, _ := workspaceConfig(t, "")
			src := filepath.Join(t.TempDir(), "ramfs")
			if err := os.Mkdir(src, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("bulkhead-test", src, "ramfs", 0, "mode=0755"); err != nil {
				t.Skipf("no ramfs to stand for a filesystem without id-mapped mounts: %v", err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(src, 0) })
			if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(src, 1000, 1000); err != nil {
				t.Fatal(err)
			}
			id := uniqueID("wsnoidmap-" + backend)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			r := bulkhead(t, "", append(g, "create", "--bundle", workspaceBundle(t, src, "true"), id)...)
			if r.code == 0 {
				bulkhead(t, "", append(g, "delete", "--force", id)...)
				t.Fatalf("a workspace on ramfs owned by 1000 was created")
			}
			t.Logf("refused: %s", r.stderr)
			for _, want := range []string{"source owned by 1000:1000, sandbox user 65534:65534", "needs id-mapped mounts", "Linux 5.12+"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("the refusal does not say %q", want)
				}
			}
			if m := mountsUnder(t, root); len(m) > 0 {
				t.Fatalf("mounts left after the refusal:\n%s", strings.Join(m, "\n"))
			}
			if _, err := os.Stat(filepath.Join(root, "bulkhead", id)); !os.IsNotExist(err) {
				t.Fatalf("state directory left after the refusal (%v)", err)
			}
		})
	}
}
