// Package checkout makes git checkouts as users and CI have them, and
// checks what a sandbox job did to one through a workspace.
package checkout

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

	"bulkhead.dev/bulkhead/test/bundle"
	"bulkhead.dev/bulkhead/test/fstree"
)

// Make makes a git checkout as a user's clone looks: files 0644,
// directories 0755, everything owned by uid:uid, except other.txt, which
// belongs to another user (other).
func Make(t *testing.T, uid, other int) string {
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

// Snapshot hashes a tree without following links: names, types, full
// modes, owners, contents and link targets. The host checkout keeps all.
func Snapshot(t *testing.T, root string) string {
	t.Helper()
	return fstree.Hash(t, root, func(e fstree.Entry) string {
		st := e.Info.Sys().(*syscall.Stat_t)
		return fmt.Sprintf("%s %v %d:%d %s%s", e.Rel, e.Info.Mode(), st.Uid, st.Gid, e.SHA256, e.Target)
	})
}

// sortedLines compares listings whose order differs (find inside,
// WalkDir outside).
func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// OwnersConfig is the configuration a checkout owned by uid needs to be
// a workspace: root's is one only where workspace_owners names root.
func OwnersConfig(uid int) string {
	if uid < 1000 {
		return fmt.Sprintf("[profiles.default]\nworkspace_owners = [\"%d\", \"1000-60000\"]\n", uid)
	}
	return ""
}

// NeedGit skips a test when the host has no git to build its rootfs
// from and to apply patches with.
func NeedGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs git on the host (for the test rootfs and git apply): %v", err)
	}
}

// AddGit copies the host's git, with its libraries, into a rootfs.
func AddGit(rootfs string) error {
	git, err := exec.LookPath("git")
	if err != nil {
		return err
	}
	return bundle.AddProgram(rootfs, git)
}

// Job edits the checkout as a formatter and a developer would:
// sed -i (which writes a new file and renames it over the old), a new
// file, a rename and a delete; then shows git's view and the tree.
const Job = `set -e
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

// Check reads the job's output: the workspace is the sandbox user's with
// the source's modes, the other owner's file is not writable in place,
// and git status inside shows exactly the job's edits.
func Check(t *testing.T, out string) {
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

// CheckPatch applies the patch kept of the job (whose output is out) to
// a copy of src: it must keep the source's modes, apply with git apply,
// and reproduce the container's view.
func CheckPatch(t *testing.T, src, patch, out string) {
	t.Helper()
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
}
