package workspace

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPatchHidesWhatTheSandboxCouldNotRead: a root-owned 0600 token in a
// checkout of uid 1000 is unreadable inside, but its directory is the
// sandbox's, so the job may delete or replace it. The patch's old side
// is read on the host as root: it printed the token. Now such a file is
// left out of the patch and named; what the sandbox could read (the
// owner's files through the id map, others' world-readable ones) still
// shows.
func TestPatchHidesWhatTheSandboxCouldNotRead(t *testing.T) {
	h := newHostileWorkspace(t)
	h.ws.Shift = &idShift{UIDFrom: 1000, UIDTo: 65534, GIDFrom: 1000, GIDTo: 65534}
	src := h.ws.Source
	for name, c := range map[string]struct {
		uid, gid int
		mode     os.FileMode
	}{
		"token":    {0, 0, 0o600},
		"replaced": {0, 0, 0o600},
		"group":    {0, 1000, 0o640},
		"mine":     {1000, 1000, 0o600},
		"public":   {0, 0, 0o644},
	} {
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, []byte("SECRET-"+name+"\n"), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, c.uid, c.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	whiteout(t, h, "token")
	h.file("replaced", []byte("mine now\n"))
	whiteout(t, h, "group")
	whiteout(t, h, "mine")
	whiteout(t, h, "public")
	out, rejected, err := h.export("patch", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, hidden := range []string{"SECRET-token", "SECRET-replaced"} {
		if strings.Contains(out, hidden) {
			t.Errorf("the patch shows %s, which the sandbox could not read:\n%s", hidden, out)
		}
	}
	for _, shown := range []string{"SECRET-group", "SECRET-mine", "SECRET-public"} {
		if !strings.Contains(out, shown) {
			t.Errorf("the patch does not show %s, which the sandbox could read:\n%s", shown, out)
		}
	}
	joined := strings.Join(rejected, "\n")
	for _, name := range []string{"token", "replaced"} {
		if !strings.Contains(joined, name+": its old content was not readable by the sandbox user") {
			t.Errorf("%s is not named as left out: %q", name, rejected)
		}
	}
}

// whiteout deletes a lower file in the upper layer as overlayfs does.
func whiteout(t *testing.T, h *hostileWorkspace, rel string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a whiteout (a 0:0 device)")
	}
	if err := unix.Mknod(filepath.Join(h.upperDir, rel), unix.S_IFCHR, 0); err != nil {
		t.Fatal(err)
	}
}

// TestExportHidesWhatTheSandboxMovedButCouldNotRead: the job cannot read a
// root-owned 0600 token, but may rename it (its directory is the job's).
// overlayfs copies the file up as root, keeping root's owner and mode,
// and the export read the upper layer as root: `mv token stolen.txt`
// printed the token as a new file, `mv token readme.txt` as the new side
// of a modified one, in the patch, the tar, the json's digest and the
// kept changes. Such files are left out and named; the job's own files,
// private or not, still leave.
func TestExportHidesWhatTheSandboxMovedButCouldNotRead(t *testing.T) {
	h := newHostileWorkspace(t)
	h.ws.Shift = &idShift{UIDFrom: 1000, UIDTo: 65534, GIDFrom: 1000, GIDTo: 65534}
	owned := func(p string, data string, uid, gid int, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	src := h.ws.Source
	owned(filepath.Join(src, "token"), "SECRET-token\n", 0, 0, 0o600)
	owned(filepath.Join(src, "readme.txt"), "hello\n", 1000, 1000, 0o644)
	// What the job's renames left in the upper layer.
	whiteout(t, h, "token")
	owned(filepath.Join(h.upperDir, "stolen.txt"), "SECRET-token\n", 0, 0, 0o600)
	owned(filepath.Join(h.upperDir, "readme.txt"), "SECRET-token\n", 0, 0, 0o600)
	// The job's own private file.
	owned(filepath.Join(h.upperDir, "mine.txt"), "MINE\n", 65534, 65534, 0o600)

	secretSum := fmt.Sprintf("%x", sha256.Sum256([]byte("SECRET-token\n")))
	for _, format := range []string{"patch", "json", "tar"} {
		out, rejected, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if strings.Contains(out, "SECRET-token") || strings.Contains(out, secretSum) {
			t.Errorf("%s shows the token the sandbox could not read:\n%s", format, out)
		}
		if !strings.Contains(out, "MINE") && format != "json" {
			t.Errorf("%s does not show the job's own file:\n%s", format, out)
		}
		joined := strings.Join(rejected, "\n")
		for _, name := range []string{"stolen.txt", "readme.txt"} {
			if !strings.Contains(joined, name+": "+unreadableReason) {
				t.Errorf("%s: %s is not named as left out: %q", format, name, rejected)
			}
		}
	}

	dst := filepath.Join(t.TempDir(), "kept")
	if err := copyLayer(h.upperDir, dst, newBudget(defaultChangeLimits), &diskBudget{limit: 1 << 30}, h.ws.Shift); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"stolen.txt": false, "readme.txt": false, "mine.txt": true} {
		if _, err := os.Lstat(filepath.Join(dst, name)); (err == nil) != want {
			t.Errorf("kept copy: %s there = %v, want %v", name, err == nil, want)
		}
	}
}
