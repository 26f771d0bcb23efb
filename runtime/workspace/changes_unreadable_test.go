package workspace

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
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
	if err := copyLayer(h.upperDir, "", dst, newBudget(defaultChangeLimits), &diskBudget{limit: 1 << 30}, h.ws.Shift, func(string, string) {}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"stolen.txt": false, "readme.txt": false, "mine.txt": true} {
		if _, err := os.Lstat(filepath.Join(dst, name)); (err == nil) != want {
			t.Errorf("kept copy: %s there = %v, want %v", name, err == nil, want)
		}
	}
}

// TestPatchReadsTheFileItJudged: the scan judged the job's own file A and
// the patch read A again by path, later: a job swapping a root-owned 0600
// token into A between the two (a loop of renames) had the token printed
// as A's new content. The patch reads only the inode the scan judged.
func TestPatchReadsTheFileItJudged(t *testing.T) {
	h := newHostileWorkspace(t)
	h.ws.Shift = &idShift{UIDFrom: 1000, UIDTo: 65534, GIDFrom: 1000, GIDTo: 65534}
	a := h.file("A", []byte("harmless\n"))
	if err := os.Chown(a, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	b := newBudget(defaultChangeLimits)
	wcs, rejected, err := scanSets(liveSets([]Workspace{h.ws}), b)
	if err != nil {
		t.Fatal(err)
	}
	// The swap, between the scan and the read.
	token := filepath.Join(h.upperDir, ".swap")
	if err := os.WriteFile(token, []byte("SECRET-swapped\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(token, a); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rejected, err = writePatchSets(&out, wcs, rejected, b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "SECRET-swapped") {
		t.Fatalf("the patch shows a file swapped in after the scan:\n%s", out.String())
	}
	if joined := strings.Join(rejected, "\n"); !strings.Contains(joined, "A: A: replaced while bulkhead read it") {
		t.Errorf("A is not named as replaced: %q", rejected)
	}
}

// TestExportHidesWhatAnACLDenies: a file whose mode bits let anyone read
// it, with an ACL entry denying the checkout's owner (the sandbox user
// through the id map), was judged readable by its bits and left in every
// export, old side and new. A file with an access ACL is taken as one the
// sandbox could not read.
func TestExportHidesWhatAnACLDenies(t *testing.T) {
	h := newHostileWorkspace(t)
	h.ws.Shift = &idShift{UIDFrom: 1000, UIDTo: 65534, GIDFrom: 1000, GIDTo: 65534}
	denied := func(p, body string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := unix.Setxattr(p, "system.posix_acl_access", denyACL(1000), 0); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) {
				t.Skipf("the test's filesystem takes no ACL: %v", err)
			}
			t.Fatal(err)
		}
	}
	denied(filepath.Join(h.ws.Source, "deleted"), "SECRET-acl-old\n")
	whiteout(t, h, "deleted")
	denied(filepath.Join(h.upperDir, "moved"), "SECRET-acl-new\n")
	for _, format := range []string{"patch", "tar"} {
		out, rejected, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if strings.Contains(out, "SECRET-acl") {
			t.Errorf("%s shows what an ACL denies the sandbox:\n%s", format, out)
		}
		if !strings.Contains(strings.Join(rejected, "\n"), "moved: "+unreadableReason) {
			t.Errorf("%s: moved is not named as left out: %q", format, rejected)
		}
	}
}

// denyACL is a POSIX access ACL (the kernel's xattr form) of rw-r--r--
// with a named entry giving uid nothing.
func denyACL(uid uint32) []byte {
	const version = 2
	entry := func(tag, perm uint16, id uint32) []byte {
		return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(nil, tag), perm), id)
	}
	const undefined = ^uint32(0)
	acl := binary.LittleEndian.AppendUint32(nil, version)
	acl = append(acl, entry(0x01, 6, undefined)...) // owner rw
	acl = append(acl, entry(0x02, 0, uid)...)       // the named user: nothing
	acl = append(acl, entry(0x04, 4, undefined)...) // group r
	acl = append(acl, entry(0x10, 4, undefined)...) // mask r
	acl = append(acl, entry(0x20, 4, undefined)...) // other r
	return acl
}

// TestACLJudgedOnTheJudgedInode: the ACL was read by name, after the mode
// was judged on an lstat: a job swapping its own file and an ACL'd one in
// a loop had the ACL looked up on its file and the ACL'd one read. The
// lookup now answers for the judged inode only.
func TestACLJudgedOnTheJudgedInode(t *testing.T) {
	h := newHostileWorkspace(t)
	acl := h.file("A", []byte("SECRET-acl\n"))
	if err := unix.Setxattr(acl, "system.posix_acl_access", denyACL(1000), 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			t.Skipf("the test's filesystem takes no ACL: %v", err)
		}
		t.Fatal(err)
	}
	h.file("B", []byte("mine\n"))
	up, err := openLayer(h.upperDir)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	judged, err := up.lstat("A")
	if err != nil {
		t.Fatal(err)
	}
	if !up.hasAccessACL("A", judged) {
		t.Fatal("the ACL'd file is not taken as having one")
	}
	if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(h.upperDir, "A"), unix.AT_FDCWD, filepath.Join(h.upperDir, "B"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	if !up.hasAccessACL("A", judged) {
		t.Fatal("after the swap A names a file without an ACL, and the judged inode passed as one without")
	}
}

// TestReplacedByTheSameBytesIsAChange: a copied-up file equal to its lower
// original is no change, but for a lower file the sandbox could not read
// that told the job whether its guess of the content was right (listed
// when wrong, silent when right).
func TestReplacedByTheSameBytesIsAChange(t *testing.T) {
	h := newHostileWorkspace(t)
	h.ws.Shift = &idShift{UIDFrom: 1000, UIDTo: 65534, GIDFrom: 1000, GIDTo: 65534}
	for name, uid := range map[string]int{"token": 0, "readme": 1000} {
		lower := filepath.Join(h.ws.Source, name)
		if err := os.WriteFile(lower, []byte("GUESSED\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(lower, uid, uid); err != nil {
			t.Fatal(err)
		}
		upper := h.file(name, []byte("GUESSED\n"))
		if err := os.Chmod(upper, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(upper, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := h.export("json", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"path":"token"`) && !strings.Contains(out, `"path": "token"`) {
		t.Errorf("the replaced unreadable token is not listed:\n%s", out)
	}
	if strings.Contains(out, "readme") {
		t.Errorf("a readable file copied up unchanged is listed:\n%s", out)
	}
}
