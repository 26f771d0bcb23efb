package workspace

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExportRepositoryMetadata: a job that writes a checkout's .git (a
// core.fsmonitor command in .git/config, a hook, a submodule's .git file)
// gets none of it into any format: extracting the tar into the checkout
// would have run its code with the reviewer's next git command, and one
// .git path made git apply refuse the whole patch. Each such entry is
// named as left out, and the patch of the other changes applies.
func TestExportRepositoryMetadata(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs git to make the checkout and apply the patch: %v", err)
	}
	h := newHostileWorkspace(t)
	src := h.ws.Source
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=d", "-c", "user.email=d@e", "commit", "-q", "-m", "i"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	config, err := os.ReadFile(filepath.Join(src, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	h.file(".git/config", append(config, "[core]\n\tfsmonitor = \"touch /tmp/owned; false\"\n"...))
	h.file(".git/hooks/post-checkout", []byte("#!/bin/sh\ntouch /tmp/owned\n"))
	h.file("sub/.git", []byte("gitdir: /tmp/elsewhere\n"))
	h.file("sub/.GIT/config", []byte("[core]\n"))
	h.file("keep.txt", []byte("one\ntwo\n"))

	out, rejected, err := h.export("patch", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, ".git") || strings.Contains(out, ".GIT") {
		t.Errorf("the patch names repository metadata:\n%s", out)
	}
	want := []string{".git: " + repoMetaReason, "sub/.GIT: " + repoMetaReason, "sub/.git: " + repoMetaReason}
	for _, w := range want {
		found := false
		for _, r := range rejected {
			found = found || r == w
		}
		if !found {
			t.Errorf("the patch does not name %q as left out: %q", w, rejected)
		}
	}
	review := filepath.Join(t.TempDir(), "review")
	if o, err := exec.Command("cp", "-a", src, review).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, o)
	}
	apply := exec.Command("git", "apply")
	apply.Dir, apply.Stdin = review, strings.NewReader(out)
	if o, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v %s\n%s", err, o, out)
	}
	if got, _ := os.ReadFile(filepath.Join(review, "keep.txt")); string(got) != "one\ntwo\n" {
		t.Errorf("keep.txt after git apply: %q", got)
	}

	tarOut, tarRejected, err := h.export("tar", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range tarNames(t, tarOut) {
		if strings.Contains(strings.ToLower(n), ".git") {
			t.Errorf("the tar holds %s", n)
		}
	}
	if len(tarRejected) != 3 {
		t.Errorf("the tar names %d left-out paths, want 3: %q", len(tarRejected), tarRejected)
	}

	js, _, err := h.export("json", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	var rep ChangeReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Workspaces[0].Changes {
		if strings.Contains(strings.ToLower(c.Path), ".git") && c.Rejected == "" {
			t.Errorf("json lists %s as exported", c.Path)
		}
	}
}

// TestExportRepositoryMetadataDeleted: a job that deletes the checkout's
// .git, or hides it below an opaque directory, gets no deletion of
// repository files into the patch or the tar either.
func TestExportRepositoryMetadataDeleted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a whiteout (a 0:0 device)")
	}
	h := newHostileWorkspace(t)
	for _, f := range []string{".git/config", "d/.git/HEAD"} {
		p := filepath.Join(h.ws.Source, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mknod(filepath.Join(h.upperDir, ".git"), unix.S_IFCHR, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(h.upperDir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(filepath.Join(h.upperDir, "d"), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Fatalf("as root, a trusted xattr must be settable here: %v", err)
	}
	for _, format := range []string{"patch", "tar", "json"} {
		out, rejected, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatal(err)
		}
		if format == "patch" && strings.Contains(out, ".git") {
			t.Errorf("the patch deletes repository files:\n%s", out)
		}
		if format == "tar" {
			for _, n := range tarNames(t, out) {
				if strings.Contains(n, ".git") {
					t.Errorf("the tar holds %s", n)
				}
			}
		}
		if format != "tar" && len(rejected) != 2 {
			t.Errorf("%s names %d left-out paths, want .git and d/.git: %q", format, len(rejected), rejected)
		}
	}
}

// TestExportRepositoryByContent: git takes any directory holding HEAD with
// objects and refs (or commondir) for a repository of its own, whatever
// its name, and runs its configuration in it and below. A job that made
// one in the checkout, or half of one (another export may hold the rest),
// or wrote a config into one the checkout already holds, or made the
// workspace's root one, gets none of it into any format or the kept copy;
// a directory without a HEAD is an ordinary change.
func TestExportRepositoryByContent(t *testing.T) {
	h := newHostileWorkspace(t)
	fsmonitor := []byte("[core]\n\tfsmonitor = \"touch /tmp/owned; false\"\n")
	h.file("bare/HEAD", []byte("ref: refs/heads/main\n"))
	h.file("bare/objects/info/packs", []byte("x\n"))
	h.file("bare/refs/heads/keep", []byte("0000000000000000000000000000000000000000\n"))
	h.file("bare/config", fsmonitor)
	h.file("caps/Head", []byte("ref: refs/heads/main\n"))
	h.file("caps/OBJECTS/x", []byte("x\n"))
	h.file("caps/Refs/x", []byte("x\n"))
	h.file("caps/config", fsmonitor)
	h.file("wt/HEAD", []byte("ref: refs/heads/main\n"))
	h.file("wt/commondir", []byte("../.git\n"))
	h.file("wt/config.worktree", fsmonitor)
	// The checkout's own fixture repository; the job only adds a config.
	for _, f := range []string{"fixture/HEAD", "fixture/objects/x", "fixture/refs/x"} {
		p := filepath.Join(h.ws.Source, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.file("fixture/config", fsmonitor)
	// The checkout's HEAD in another spelling, which macOS takes for one.
	if err := os.MkdirAll(filepath.Join(h.ws.Source, "keyed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.ws.Source, "keyed", "Head"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.file("keyed/config", fsmonitor)
	// Half a repository: HEAD and config here, objects and refs in
	// another job's export; applied one after the other they made one.
	h.file("split/HEAD", []byte("ref: refs/heads/main\n"))
	h.file("split/config", fsmonitor)
	// Objects and refs with no HEAD: the common directory a commondir
	// file beside a HEAD elsewhere names, whose config git reads.
	h.file("common/objects/x", []byte("x\n"))
	h.file("common/refs/x", []byte("x\n"))
	h.file("common/config", fsmonitor)
	// Half a common directory, objects or refs alone: another export
	// may hold the other half, so the half stays out, and only it: the
	// config beside it is no repository's (src/objects/ is a package).
	h.file("half/Objects/x", []byte("x\n"))
	h.file("half/config", []byte("plain\n"))
	h.file("halfrefs/refs/x", []byte("x\n"))
	h.file("halfrefs/page.md", []byte("plain\n"))
	halves := []string{"half/Objects", "halfrefs/refs"}
	// A directory named Head: git reads a HEAD as a file or a link only.
	h.file("components/Head/index.tsx", []byte("plain\n"))
	// Objects the checkout holds alone (CPython's Objects), no HEAD:
	// nothing git takes for a repository, changed or not.
	if err := os.MkdirAll(filepath.Join(h.ws.Source, "notrepo", "Objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.file("notrepo/Objects/x", []byte("x\n"))
	h.file("notrepo/config", []byte("plain\n"))
	left := []string{"bare", "caps", "common", "fixture", "keyed", "split", "wt"}
	plainFiles := []string{"notrepo/config", "notrepo/Objects/x", "half/config", "halfrefs/page.md", "components/Head/index.tsx"}

	for _, format := range []string{"patch", "json", "tar"} {
		out, rejected, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range left {
			if !slices.Contains(rejected, d+": "+repoDirReason) {
				t.Errorf("%s does not name %s as left out: %q", format, d, rejected)
			}
		}
		for _, d := range halves {
			if !slices.Contains(rejected, d+": "+repoHalfReason) {
				t.Errorf("%s does not name %s as left out: %q", format, d, rejected)
			}
		}
		var exported []string
		switch format {
		case "tar":
			for _, n := range tarNames(t, out) {
				_, name, _ := strings.Cut(n, " ")
				exported = append(exported, name)
			}
		case "json":
			var rep ChangeReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			for _, c := range rep.Workspaces[0].Changes {
				if c.Rejected == "" {
					exported = append(exported, c.Path)
				}
			}
		case "patch":
			for _, l := range strings.Split(out, "\n") {
				if rest, ok := strings.CutPrefix(l, "+++ b/"); ok {
					exported = append(exported, rest)
				}
			}
		}
		for _, n := range exported {
			for _, d := range append(left, halves...) {
				if strings.HasPrefix(n, d+"/") || n == d {
					t.Errorf("%s exports %s", format, n)
				}
			}
		}
		for _, f := range plainFiles {
			if !slices.Contains(exported, f) {
				t.Errorf("%s leaves out %s, which no git takes for a repository's: %q (left out %q)", format, f, exported, rejected)
			}
		}
	}

	dst := filepath.Join(t.TempDir(), "kept")
	if err := copyLayer(h.upperDir, h.ws.Source, dst, newBudget(defaultChangeLimits), &diskBudget{limit: 1 << 30}, h.ws.Shift, func(string, string) {}); err != nil {
		t.Fatal(err)
	}
	for _, d := range append(left, halves...) {
		if _, err := os.Lstat(filepath.Join(dst, d)); err == nil {
			t.Errorf("the kept copy holds %s", d)
		}
	}
	for _, f := range plainFiles {
		if _, err := os.Lstat(filepath.Join(dst, f)); err != nil {
			t.Errorf("the kept copy lost %s: %v", f, err)
		}
	}

	// The workspace's root made a repository: nothing of it leaves.
	h.file("HEAD", []byte("ref: refs/heads/main\n"))
	h.file("objects/x", []byte("x\n"))
	h.file("refs/x", []byte("x\n"))
	for _, format := range []string{"patch", "tar"} {
		out, rejected, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rejected, []string{".: " + repoDirReason}) {
			t.Errorf("%s with a repository at the root names %q as left out", format, rejected)
		}
		if format == "patch" && strings.Contains(out, "+++") || format == "tar" && len(tarNames(t, out)) > 0 {
			t.Errorf("%s with a repository at the root exports:\n%s", format, out)
		}
	}
}

// TestRepoMetaSpellings: a .git or a HEAD in any spelling a reviewer's
// filesystem takes for one (macOS folds case, normalises and ignores
// invisible code points; Windows also drops trailing dots and spaces,
// reads a colon as a stream, answers to the 8.3 short name and upper-cases
// the dotless ı to I).
func TestRepoMetaSpellings(t *testing.T) {
	for _, n := range []string{".git", ".GIT", ".Git.", ".git ", ".git. .", "git~1", "GIT~1", ".g\u200cit", ".git\ufeff", ".git::$INDEX_ALLOCATION", "GIT~2", "git~10", ".g\u0131t", "G\u0131T~1"} {
		if !isRepoMeta(n) {
			t.Errorf("isRepoMeta(%q) = false", n)
		}
	}
	for _, n := range []string{".github", "git", ".gitignore", "x.git", ".git2", "git~", "gitx~1"} {
		if isRepoMeta(n) {
			t.Errorf("isRepoMeta(%q) = true", n)
		}
	}
	notDir := func(string) bool { return false }
	for _, names := range [][]string{{"HEAD"}, {"head"}, {"HEAD."}, {"He\u200bad"}, {"HEAD:x"}, {"objects", "refs"}, {"Objects", "REFS"}} {
		if !(*checkoutDir)(nil).repoWith(gitMarks(names, notDir)) {
			t.Errorf("a directory with %q is no repository", names)
		}
	}
	for _, names := range [][]string{{"HEADER", "ahead"}, {"objects"}, {"refs"}, {"config", "hooks"}} {
		if (*checkoutDir)(nil).repoWith(gitMarks(names, notDir)) {
			t.Errorf("a directory with %q is a repository", names)
		}
	}
	if (*checkoutDir)(nil).repoWith(gitMarks([]string{"Head"}, func(string) bool { return true })) {
		t.Errorf("a directory holding a directory Head is a repository")
	}
	for _, n := range []string{"objects", "Objects", "REFS.", "refs:x"} {
		if (*checkoutDir)(nil).halfReason(n) == "" {
			t.Errorf("%q the job adds is no half of a repository", n)
		}
	}
	for _, n := range []string{"objects2", "refs.d", "HEAD", "config"} {
		if (*checkoutDir)(nil).halfReason(n) != "" {
			t.Errorf("%q the job adds is half of a repository", n)
		}
	}
}

// TestArchiveNamesFold: a link the tar holds stands above no later entry
// in any spelling: extracted on macOS or Windows, "Foo" (a link) is the
// directory of "foo/x" and "cafe\u0301" that of "caf\u00e9/x". Names
// Windows reads as another entry's (a backslash, an 8.3 short name such as
// a link's "LONGLI~1") are left out.
func TestArchiveNamesFold(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	held := archiveNames{}
	var rejected []string
	reject := func(s string) { rejected = append(rejected, s) }
	write := func(name string, typ byte) bool {
		hdr := &tar.Header{Name: name, Typeflag: typ, Mode: 0o644, Linkname: "/etc"}
		if typ != tar.TypeSymlink {
			hdr.Linkname = ""
		}
		if err := held.writeHeader(tw, hdr, reject); err != nil {
			t.Fatal(err)
		}
		return hdr.Typeflag != 0
	}
	write("Foo", tar.TypeSymlink)
	write("cafe\u0301", tar.TypeSymlink)
	write("dir/", tar.TypeDir)
	write("longlinkname", tar.TypeSymlink)
	for _, name := range []string{"foo/x", "FOO./x", "caf\u00e9/x", "Cafe\u0301/y", "foo", "LONGLI~1/cron", "lnk\\passwd",
		".git\\config", "sub\\.git\\HEAD", "dir/README~1.MD", "LONGLI~1 /x", "LONGLI~1../y", "README~1.MD.."} {
		if write(name, tar.TypeReg) {
			t.Errorf("%q written below or over a link the archive holds", name)
		}
	}
	if !write("DIR/x", tar.TypeReg) || !write("other", tar.TypeReg) || !write("backup~", tar.TypeReg) || !write("a~b.txt", tar.TypeReg) {
		t.Errorf("entries below a directory or beside the links left out: %q", rejected)
	}
}

// TestPatchJudgesDirectoriesByKey: git apply on macOS or Windows writes the
// job's FIXTURE/config into the checkout's fixture, a common directory a
// fixture2 names; the patch and json judge a directory where it lands, by
// key, as the tar does, live and kept.
func TestPatchJudgesDirectoriesByKey(t *testing.T) {
	h := newHostileWorkspace(t)
	for _, d := range []string{"fixture/objects", "fixture/refs"} {
		if err := os.MkdirAll(filepath.Join(h.ws.Source, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.file("FIXTURE/config", []byte("[core]\n\tpager = touch /tmp/owned\n"))
	h.file("Later/config", []byte("[core]\n\tpager = touch /tmp/owned\n"))
	for _, format := range []string{"patch", "json"} {
		out, rejected, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(rejected, "FIXTURE: "+repoDirReason) || format == "patch" && strings.Contains(out, "FIXTURE/config") {
			t.Errorf("the live %s with FIXTURE/config beside the checkout's fixture (left out %q):\n%s", format, rejected, out)
		}
	}
	h.named("", nil)
	cfg := h.keep()
	// The fork's next commit makes later a repository.
	h.named("later/HEAD", []byte("ref: refs/heads/main\n"))
	for _, format := range []string{"patch", "json"} {
		if _, err := Export(cfg, "/run/root-a", "c1", format, io.Discard); err == nil || !strings.Contains(err.Error(), "in Later now, which git may take") {
			t.Errorf("the kept %s writing Later/config where the checkout now has later/HEAD: %v", format, err)
		}
	}
}
