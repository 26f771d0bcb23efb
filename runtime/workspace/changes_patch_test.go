package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// gitCheckout makes src a repository with everything committed, and
// returns a clean copy of it to apply a patch in.
func gitCheckout(t *testing.T, src string) string {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=d", "-c", "user.email=d@e", "commit", "-q", "-m", "i"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	review := filepath.Join(t.TempDir(), "review")
	if o, err := exec.Command("cp", "-a", src, review).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, o)
	}
	return review
}

// TestPatchHeaderOnlyChanges: changes whose patch entry has no hunk. A
// mode change git records the same (chmod 600 of a 0644 file: 100644
// either way) once made an empty `diff --git` header, and git apply
// refused the whole patch for it, losing every other change; it has no
// entry now and is named as left out. The entries that need no hunk
// (a mode change git sees, of a text or a binary file; an empty file
// added or deleted) and a symlink retargeted or turned into a file apply
// with git apply.
func TestPatchHeaderOnlyChanges(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs git to make the checkout and apply the patch: %v", err)
	}
	h := newHostileWorkspace(t)
	// The sandbox user is whoever runs the test: the upper files are its
	// own, as a job's are, whatever their mode.
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	h.ws.Shift = &idShift{UIDFrom: uid, UIDTo: uid, GIDFrom: gid, GIDTo: gid}
	src := h.ws.Source
	lower := map[string]string{"Makefile": "all:\n\ttrue\n", "tool.sh": "#!/bin/sh\n", "secret.txt": "s\n",
		"edit.txt": "a\nb\n", "owned.txt": "same\n", "gone-empty": "", "blob.bin": "\x00\x01"}
	for name, body := range lower {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"link": "edit.txt", "was-link": "edit.txt"} {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	review := gitCheckout(t, src)

	chmod := func(p string, m os.FileMode) {
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	chmod(h.file("Makefile", []byte(lower["Makefile"])), 0o600) // 100644 either way
	chmod(h.file("secret.txt", []byte(lower["secret.txt"])), 0o640)
	chmod(h.file("tool.sh", []byte(lower["tool.sh"])), 0o755)   // 100644 -> 100755
	chmod(h.file("blob.bin", []byte(lower["blob.bin"])), 0o755) // unchanged content: nothing of it is shown
	h.file("edit.txt", []byte("a\nB\n"))
	h.file("new-empty", nil)
	h.file("was-link", []byte("now a file\n"))
	if err := os.Symlink("tool.sh", filepath.Join(h.upperDir, "link")); err != nil {
		t.Fatal(err)
	}
	owned := h.file("owned.txt", []byte(lower["owned.txt"]))
	if os.Geteuid() == 0 {
		// Copied up by a chown: equal in content and mode, no change.
		if err := os.Chown(owned, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mknod(filepath.Join(h.upperDir, "gone-empty"), unix.S_IFCHR, 0); err != nil {
			t.Fatal(err)
		}
	}

	out, rejected, err := h.export("patch", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Makefile", "secret.txt", "owned.txt"} {
		if strings.Contains(out, "a/"+name) {
			t.Errorf("the patch has an entry for %s, which git cannot tell changed:\n%s", name, out)
		}
	}
	for _, name := range []string{"Makefile", "secret.txt"} {
		found := false
		for _, r := range rejected {
			found = found || strings.HasPrefix(r, name+": ")
		}
		if !found {
			t.Errorf("%s (a mode change the patch cannot carry) is not named as left out: %q", name, rejected)
		}
	}
	if len(rejected) != 2 {
		t.Errorf("left out %q, want Makefile and secret.txt only", rejected)
	}

	check := exec.Command("git", "apply", "--check", "-")
	check.Dir, check.Stdin = review, strings.NewReader(out)
	if o, err := check.CombinedOutput(); err != nil {
		t.Fatalf("git apply --check: %v %s\n%s", err, o, out)
	}
	apply := exec.Command("git", "apply", "-")
	apply.Dir, apply.Stdin = review, strings.NewReader(out)
	if o, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v %s\n%s", err, o, out)
	}
	want := map[string]string{"edit.txt": "a\nB\n", "new-empty": "", "was-link": "now a file\n", "Makefile": lower["Makefile"]}
	for name, body := range want {
		if got, err := os.ReadFile(filepath.Join(review, name)); err != nil || string(got) != body {
			t.Errorf("%s after git apply: %q %v, want %q", name, got, err, body)
		}
	}
	for _, name := range []string{"tool.sh", "blob.bin"} {
		if st, err := os.Stat(filepath.Join(review, name)); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable after git apply: %v %v", name, st, err)
		}
	}
	if target, err := os.Readlink(filepath.Join(review, "link")); err != nil || target != "tool.sh" {
		t.Errorf("link after git apply points to %q (%v), want tool.sh", target, err)
	}
	if os.Geteuid() == 0 {
		if _, err := os.Lstat(filepath.Join(review, "gone-empty")); !os.IsNotExist(err) {
			t.Errorf("gone-empty is still there after git apply: %v", err)
		}
	}
}
