package workspace

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/runtime/state"
	"golang.org/x/sys/unix"
)

// TestTarNeverBelowALink: an archive of several workspaces never holds an
// entry below a name it holds as a symlink: an extractor that follows the
// link (Python's tarfile) would write the entry where it points. Here two
// layer sets share the empty prefix, as kept changes had it, one holding
// x -> target and the other x/pwned: the second x, and everything
// below it, is left out and named.
func TestTarNeverBelowALink(t *testing.T) {
	a, b := newHostileWorkspace(t), newHostileWorkspace(t)
	if err := os.Symlink("target", filepath.Join(a.upperDir, "x")); err != nil {
		t.Fatal(err)
	}
	b.file("x/pwned", []byte("owned\n"))
	b.file("y", []byte("fine\n"))
	a.file("y", []byte("first\n"))
	sets := append(liveSets([]Workspace{a.ws}), liveSets([]Workspace{b.ws})...)
	var out bytes.Buffer
	rejected, err := exportChanges(&out, "tar", sets, defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Join(tarNames(t, out.String()), ",")
	if strings.Contains(names, "x/") || strings.Count(names, " y") != 1 {
		t.Errorf("the tar holds %s", names)
	}
	joined := strings.Join(rejected, "\n")
	for _, want := range []string{"x: the archive already holds this name", "y: the archive already holds this name"} {
		if !strings.Contains(joined, want) {
			t.Errorf("left-out lines %q do not say %q", rejected, want)
		}
	}
}

// TestArchiveNamesEscapeOnce: a left-out line escapes what the sandbox
// named once, in its path and in its reason alike, so "l\x1bk" in the
// reason is the "l\x1bk" of the path and not a name with a backslash.
func TestArchiveNamesEscapeOnce(t *testing.T) {
	tw := tar.NewWriter(io.Discard)
	held := archiveNames{}
	var lines []string
	for _, hdr := range []*tar.Header{
		{Name: "l\x1bk", Typeflag: tar.TypeSymlink, Linkname: "/etc"},
		{Name: "l\x1bk/z", Typeflag: tar.TypeReg},
	} {
		reject := func(why string) { lines = append(lines, rejectLine(hdr.Name, why)) }
		if err := held.writeHeader(tw, hdr, reject); err != nil {
			t.Fatal(err)
		}
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], `l\x1bk/z: below l\x1bk, `) {
		t.Errorf("left-out lines %q, want one naming l\\x1bk/z below l\\x1bk", lines)
	}
}

// TestKeptTarKeepsPrefixes: the kept changes of a container with two
// workspaces export as a tar whose entries stand below each workspace's
// name, as the live diff's do, never mixed in one tree.
func TestKeptTarKeepsPrefixes(t *testing.T) {
	a, b := newHostileWorkspace(t), newHostileWorkspace(t)
	a.ws.Destination, b.ws.Destination = "/workspace", "/cache"
	if err := os.Symlink("target", filepath.Join(a.upperDir, "x")); err != nil {
		t.Fatal(err)
	}
	b.file("x/pwned", []byte("owned\n"))
	cfg := testConfig(t)
	r, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c1"}, []Workspace{a.ws, b.ws}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := readRetained(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	held := archiveNames{}
	for _, s := range kept.layers {
		if _, err := writeLayerTar(tw, s, newBudget(defaultChangeLimits), held); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	names := strings.Join(tarNames(t, out.String()), ",")
	for _, want := range []string{"workspace/x", "cache/x/pwned"} {
		if !strings.Contains(names, want) {
			t.Errorf("the kept tar holds %s, want %s", names, want)
		}
	}
}

// TestArchiveNames: below a link or a file the archive holds, nothing is
// written, and no name twice; a directory may be named again.
func TestArchiveNames(t *testing.T) {
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	held := archiveNames{}
	for _, c := range []struct {
		hdr  tar.Header
		kept bool
	}{
		{tar.Header{Name: "a/", Typeflag: tar.TypeDir}, true},
		{tar.Header{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}, true},
		{tar.Header{Name: "a/l/passwd", Typeflag: tar.TypeReg}, false},
		{tar.Header{Name: "a/l/d/", Typeflag: tar.TypeDir}, false},
		{tar.Header{Name: "a/", Typeflag: tar.TypeDir}, true},
		{tar.Header{Name: "a/l", Typeflag: tar.TypeReg}, false},
		{tar.Header{Name: "f", Typeflag: tar.TypeReg}, true},
		{tar.Header{Name: "f/g", Typeflag: tar.TypeReg}, false},
	} {
		hdr := c.hdr
		var why string
		if err := held.writeHeader(tw, &hdr, func(w string) { why = w }); err != nil {
			t.Fatal(err)
		}
		if kept := hdr.Typeflag != 0; kept != c.kept {
			t.Errorf("%s: written %v (%s), want %v", c.hdr.Name, kept, why, c.kept)
		}
	}
}

// TestTarOwnersAndModes: the tar names no owner (a header of the
// sandbox's uid, extracted as root, gave the checkout files of nobody's)
// and no write for group or others (a 0777 directory the job made was
// one anyone could plant files in).
func TestTarOwnersAndModes(t *testing.T) {
	h := newHostileWorkspace(t)
	p := h.file("ww/s.sh", []byte("x\n"))
	for _, q := range []string{p, filepath.Dir(p)} {
		if err := os.Chmod(q, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(q, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := h.export("tar", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(strings.NewReader(out))
	n := 0
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		n++
		if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" || hdr.Mode&0o7022 != 0 {
			t.Errorf("%s: owner %d:%d (%q:%q), mode %o", hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname, hdr.Mode)
		}
	}
	if n != 2 {
		t.Errorf("the tar holds %d entries, want ww/ and ww/s.sh", n)
	}
}

// TestTarNeverThroughCheckoutLinks: a job that replaces a symlink of the
// checkout (one pointing out of it) with a directory or a file gets
// neither into a tar, live or kept: extracted into the checkout by an
// extractor that follows links (Python's tarfile makes a directory over a
// link and opens a file through it), they would be written where the links
// point. The patch carries them: git apply deletes the links first.
func TestTarNeverThroughCheckoutLinks(t *testing.T) {
	h := newHostileWorkspace(t)
	for name, target := range map[string]string{"linkdir": "../outside", "abslink": "/etc/passwd", "relink": "../outside"} {
		if err := os.Symlink(target, filepath.Join(h.ws.Source, name)); err != nil {
			t.Fatal(err)
		}
	}
	h.file("linkdir/keep.txt", []byte("owned\n"))
	h.file("abslink", []byte("owned\n"))
	h.file("keep.txt", []byte("changed\n"))
	// A link that replaces a link is a link in the tar: extractors remove
	// a link before they make one.
	if err := os.Symlink("keep.txt", filepath.Join(h.upperDir, "relink")); err != nil {
		t.Fatal(err)
	}
	check := func(how, out string, rejected []string) {
		t.Helper()
		names := tarNames(t, out)
		joined := strings.Join(names, ",")
		if strings.Contains(joined, "linkdir") || strings.Contains(joined, "abslink") {
			t.Errorf("%s tar holds %s", how, joined)
		}
		if !strings.Contains(joined, "keep.txt") || !strings.Contains(joined, "relink") {
			t.Errorf("%s tar lost the other changes: %s", how, joined)
		}
		for _, p := range []string{"linkdir", "abslink"} {
			if !slices.Contains(rejected, p+": "+checkoutLinkReason) {
				t.Errorf("%s tar's left-out lines %q do not name %s", how, rejected, p)
			}
		}
	}
	out, rejected, err := h.export("tar", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	check("the live", out, rejected)
	patch, _, err := h.export("patch", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch, "+++ b/linkdir/keep.txt") || !strings.Contains(patch, "+++ b/abslink") {
		t.Errorf("the patch does not carry the replaced links:\n%s", patch)
	}

	cfg := testConfig(t)
	const root = "/run/root-a"
	r, err := saveChanges(cfg, root, &state.Record{ID: "c1"}, []Workspace{h.ws}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var kept bytes.Buffer
	rejected, err = Export(cfg, root, "c1", "tar", &kept)
	if err != nil {
		t.Fatal(err)
	}
	check("the kept", kept.String(), rejected)

	// An entry kept by a copy that did not judge the checkout's links
	// has no tar.
	meta := filepath.Join(r.Dir, "meta.json")
	data, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, bytes.Replace(data, []byte(`"tar_judgement": 3`), []byte(`"tar_judgement": 2`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(cfg, root, "c1", "tar", io.Discard); err == nil || !strings.Contains(err.Error(), "--format patch") {
		t.Errorf("the tar of an entry whose copy did not judge links: %v", err)
	}
}

// TestTarMarksNeverThroughCheckoutLinks: the tar's own marks of a deletion
// are names it writes in the checkout like any other. Where the checkout
// (a fork's commit) has a symlink named .wh.file.txt or d/.wh..wh..opq, the
// whiteout of a deleted file.txt and the marker of a replaced d would have
// Python's tarfile, extracting into the checkout, empty the file the link
// points at. Both are left out of the live and the kept tar and named; a
// whiteout with no link of its name stays.
func TestTarMarksNeverThroughCheckoutLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a whiteout (a 0:0 device) and an opaque directory")
	}
	h := newHostileWorkspace(t)
	for _, f := range []string{"file.txt", "other.txt", "d/a.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(h.ws.Source, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.ws.Source, f), []byte("in\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{".wh.file.txt": "../victim", "d/.wh..wh..opq": "../../victim"} {
		if err := os.Symlink(target, filepath.Join(h.ws.Source, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"file.txt", "other.txt"} {
		if err := unix.Mknod(filepath.Join(h.upperDir, f), unix.S_IFCHR, 0); err != nil {
			t.Fatal(err)
		}
	}
	h.file("d/n.txt", []byte("new\n"))
	if err := unix.Setxattr(filepath.Join(h.upperDir, "d"), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	check := func(how, out string, rejected []string) {
		t.Helper()
		names := tarNames(t, out)
		for _, n := range []string{".wh.file.txt", "d/.wh..wh..opq"} {
			if slices.Contains(names, "0 "+n) {
				t.Errorf("%s tar holds %s, where the checkout has a symlink: %q", how, n, names)
			}
			if !slices.Contains(rejected, n+": "+checkoutMarkReason) {
				t.Errorf("%s tar's left-out lines %q do not name %s", how, rejected, n)
			}
		}
		for _, n := range []string{".wh.other.txt", "d/n.txt"} {
			if !slices.Contains(names, "0 "+n) {
				t.Errorf("%s tar lost %s: %q", how, n, names)
			}
		}
	}
	liveAndKeptTar(t, h, check)
}

// TestTarNeverThroughCheckoutLinksByKey: a reviewer on macOS or Windows
// extracts "Docs/x" into the checkout's "docs", and "SRC/Keys/x" below its
// "src/keys". Where those are symlinks, the entries are left out and named
// as if the names were the same, live and kept.
func TestTarNeverThroughCheckoutLinksByKey(t *testing.T) {
	h := newHostileWorkspace(t)
	if err := os.MkdirAll(filepath.Join(h.ws.Source, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"docs", "src/keys"} {
		if err := os.Symlink("/tmp/outside", filepath.Join(h.ws.Source, name)); err != nil {
			t.Fatal(err)
		}
	}
	h.file("Docs/x", []byte("owned\n"))
	h.file("SRC/Keys/x", []byte("owned\n"))
	h.file("SRC/fine", []byte("fine\n"))
	check := func(how, out string, rejected []string) {
		t.Helper()
		names := tarNames(t, out)
		for _, n := range []string{"Docs/x", "SRC/Keys/x"} {
			if slices.Contains(names, "0 "+n) {
				t.Errorf("%s tar holds %s: %q", how, n, names)
			}
		}
		for _, n := range []string{"Docs", "SRC/Keys"} {
			if !slices.Contains(rejected, n+": "+checkoutLinkReason) {
				t.Errorf("%s tar's left-out lines %q do not name %s", how, rejected, n)
			}
		}
		if !slices.Contains(names, "0 SRC/fine") {
			t.Errorf("%s tar lost SRC/fine: %q", how, names)
		}
	}
	liveAndKeptTar(t, h, check)
}

// liveAndKeptTar hands check the tar of h's changes, live, then kept
// (kept anew at each call).
func liveAndKeptTar(t *testing.T, h *hostileWorkspace, check func(how, out string, rejected []string)) {
	t.Helper()
	out, rejected, err := h.export("tar", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	check("the live", out, rejected)
	cfg := h.keep()
	var kept bytes.Buffer
	if rejected, err = Export(cfg, "/run/root-a", "c1", "tar", &kept); err != nil {
		t.Fatal(err)
	}
	check("the kept", kept.String(), rejected)
}

// TestLinksNeverLeadOut: a symlink one export puts in the checkout, the
// patch's or a tar's, is where a later tar (another export of the same
// fork) writes through, so no link any format holds may lead anywhere but
// a new place or a plain file of the checkout: not out (absolute,
// climbing above it or after it descended), into .git, through one of the
// checkout's links (by key, as macOS finds it), to the checkout's own
// directories, its repositories or a file with other hard links. Links
// to new places (node_modules/.bin's) and plain files stay, live and
// kept.
func TestLinksNeverLeadOut(t *testing.T) {
	h := newHostileWorkspace(t)
	if err := os.Symlink("../outside", filepath.Join(h.ws.Source, "linkdir")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"srcdir/deep", "fixture/objects", "fixture/refs"} {
		if err := os.MkdirAll(filepath.Join(h.ws.Source, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A directory of the checkout with nothing a write could pass its
	// judgement through below it (a monorepo's package).
	if err := os.MkdirAll(filepath.Join(h.ws.Source, "pkgs", "util", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.ws.Source, "pkgs", "util", "src", "a.js"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The checkout's links at the second and third step of a target.
	if err := os.Symlink("../.git/hooks", filepath.Join(h.ws.Source, "srcdir", "lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(h.ws.Source, "srcdir", "deep", "ln")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.ws.Source, "store.txt"), []byte("a package store's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(h.ws.Source, "store.txt"), filepath.Join(h.ws.Source, "stored.txt")); err != nil {
		t.Fatal(err)
	}
	// Links into the checkout's own directories, its repositories and
	// its files with other hard links: a later tar writes below them.
	out := map[string]string{
		"self":      ".",
		"sub/root":  "..",
		"intoDir":   "srcdir",
		"byKeyDir":  "SRCDIR/deep",
		"intoRepo":  "fixture/hooks",
		"store":     "Stored.txt",
		"hk":        "srcdir/lnk/pre-commit",
		"deepLink":  "srcdir/deep/ln/passwd",
		"keyLink":   "SrcDir/LNK/x",
		"abs":       "/etc/passwd",
		"up":        "../x",
		"sub/up2":   "../../x",
		"sneaky":    "sub/../../x",
		"dotdot":    "sub/../keep.txt",
		"through":   "linkdir/x",
		"byKey":     "LINKDIR",
		"hooks":     ".git/hooks",
		"short":     "LINKDI~1/x",
		"backslash": "a\\..\\..\\x",
	}
	// A link climbs only from a directory the checkout holds: a directory
	// the job made may be another export's link (a/b/m -> ../../docs),
	// and the climb would start there. Nor does a link stand where the
	// checkout holds a directory.
	for name, target := range map[string]string{
		"node_modules/.bin/x":     "../pkg/bin/x.js",
		"sub/back":                "../keep.txt",
		"node_modules/@mono/util": "../../pkgs/util",
		"a/b/m/l":                 "../../../x",
		"PKGS":                    "elsewhere",
		// Written through, a HEAD, objects or refs would make a
		// directory a repository no entry's name showed.
		"hd": "newdir/HEAD",
		"ob": "pkgs/Objects",
		"rf": "refs",
	} {
		out[name] = target
	}
	in := map[string]string{
		"ok":                     "keep.txt",
		"newInDir":               "srcdir/new",
		"utilSrc":                "PKGS/util/src",
		"pkgs/back":              "../keep.txt",
		"pkgs/util/src/up":       "../../../keep.txt",
		"node_modules/foo":       ".pnpm/foo@1/node_modules/foo",
		"node_modules/.bin/tool": "tool.js",
	}
	for _, links := range []map[string]string{out, in} {
		for name, target := range links {
			p := filepath.Join(h.upperDir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	liveAndKeptTar(t, h, func(how, tarball string, rejected []string) {
		t.Helper()
		names := tarNames(t, tarball)
		for name, target := range out {
			if slices.Contains(names, "2 "+name) {
				t.Errorf("%s tar holds %s -> %s", how, name, target)
			}
			if !leftOutAsLink(rejected, name) {
				t.Errorf("%s tar's left-out lines %q do not name %s", how, rejected, name)
			}
		}
		for name := range in {
			if !slices.Contains(names, "2 "+name) {
				t.Errorf("%s tar lost %s: %q", how, name, names)
			}
		}
	})
	cfg := h.keep()
	for _, format := range []string{"patch", "json"} {
		live, rejected, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatal(err)
		}
		var kept bytes.Buffer
		if _, err := Export(cfg, "/run/root-a", "c1", format, &kept); err != nil {
			t.Fatal(err)
		}
		for name, target := range out {
			if !leftOutAsLink(rejected, name) {
				t.Errorf("the live %s's left-out lines %q do not name %s", format, rejected, name)
			}
			if format == "patch" && (strings.Contains(live, "b/"+name+"\n") || strings.Contains(kept.String(), "b/"+name+"\n")) {
				t.Errorf("the %s holds %s -> %s:\n%s", format, name, target, live)
			}
		}
		for name := range in {
			if format == "patch" && (!strings.Contains(live, "+++ b/"+name+"\n") || !strings.Contains(kept.String(), "+++ b/"+name+"\n")) {
				t.Errorf("the %s lost %s:\n%s", format, name, live)
			}
		}
	}
}

// TestTarJudgedAgainstTheCheckoutNow: the checkout the reviewer extracts
// into is the one at the named path when the tar is made, which may hold
// links the layer never saw (the fork's next commit, a fresh clone at the
// same path). Entries standing on them are left out of the live tar and of
// the kept one, though the keep judged them clean.
func TestTarJudgedAgainstTheCheckoutNow(t *testing.T) {
	h := newHostileWorkspace(t)
	h.named("", nil)
	h.file("conf.txt", []byte("owned\n"))
	h.file("esc/payload", []byte("owned\n"))
	h.file("fine.txt", []byte("fine\n"))
	cfg := h.keep()
	for _, name := range []string{"conf.txt", "esc"} {
		if err := os.Symlink("/tmp/outside", filepath.Join(h.ws.Named, name)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(how, tarball string, rejected []string) {
		t.Helper()
		names := tarNames(t, tarball)
		for _, n := range []string{"conf.txt", "esc/payload"} {
			if slices.Contains(names, "0 "+n) {
				t.Errorf("%s tar holds %s, where the checkout has a symlink now: %q", how, n, names)
			}
		}
		for _, n := range []string{"conf.txt", "esc"} {
			if !slices.Contains(rejected, n+": "+checkoutLinkReason) {
				t.Errorf("%s tar's left-out lines %q do not name %s", how, rejected, n)
			}
		}
		if !slices.Contains(names, "0 fine.txt") {
			t.Errorf("%s tar lost fine.txt: %q", how, names)
		}
	}
	live, rejected, err := h.export("tar", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	check("the live", live, rejected)
	var kept bytes.Buffer
	if rejected, err = Export(cfg, "/run/root-a", "c1", "tar", &kept); err != nil {
		t.Fatal(err)
	}
	check("the kept", kept.String(), rejected)
}

// TestTarRefusedWhereTheCheckoutPathChanged: the named path had no link
// on it when the container was made. One on it now (the fork's next commit
// made the directory above the workspace a link to .git) makes it another
// directory, where the tar would put the job's files in .git/hooks: the
// tar is refused, live and kept, as it is for a path through a .git.
func TestTarRefusedWhereTheCheckoutPathChanged(t *testing.T) {
	h := newHostileWorkspace(t)
	mono := filepath.Join(t.TempDir(), "mono")
	for _, d := range []string{"pkg/hooks", ".git/hooks"} {
		if err := os.MkdirAll(filepath.Join(mono, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.ws.Named = filepath.Join(mono, "pkg", "hooks")
	h.file("pre-commit", []byte("#!/bin/sh\necho owned\n"))
	cfg := h.keep()
	if err := os.RemoveAll(filepath.Join(mono, "pkg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(mono, "pkg")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.export("tar", defaultChangeLimits); err == nil || !strings.Contains(err.Error(), "passes through a symlink now") {
		t.Errorf("the live tar into a path through a link: %v", err)
	}
	if _, err := Export(cfg, "/run/root-a", "c1", "tar", io.Discard); err == nil || !strings.Contains(err.Error(), "passes through a symlink now") {
		t.Errorf("the kept tar into a path through a link: %v", err)
	}
	h.ws.Named = filepath.Join(mono, ".git", "hooks")
	if _, _, err := h.export("tar", defaultChangeLimits); err == nil || !strings.Contains(err.Error(), "lies in a repository's .git") {
		t.Errorf("the live tar into a .git: %v", err)
	}
	// The next commit made the directory above the workspace a bare
	// repository: its hooks directory is the workspace.
	bare := filepath.Join(mono, "bare")
	if err := os.MkdirAll(filepath.Join(bare, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ws.Named = filepath.Join(bare, "hooks")
	if _, _, err := h.export("tar", defaultChangeLimits); err == nil || !strings.Contains(err.Error(), "which git may take for a repository") {
		t.Errorf("the live tar below a bare repository: %v", err)
	}
}

// TestTarNeverWritesSharedFiles: pnpm and uv link what they install to
// their stores, which other projects share; Python's tarfile writes a file
// in place, so a tar entry (or a deletion's mark) over such a file would
// change the store's. Those are left out, live and kept; the patch carries
// them (git apply makes a new file).
func TestTarNeverWritesSharedFiles(t *testing.T) {
	h := newHostileWorkspace(t)
	store := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h.ws.Source, "node_modules", "dep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"index.js", "old.js"} {
		if err := os.WriteFile(filepath.Join(store, f), []byte("module.exports = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(store, f), filepath.Join(h.ws.Source, "node_modules", "dep", f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(store, "old.js"), filepath.Join(h.ws.Source, "node_modules", "dep", ".wh.gone.js")); err != nil {
		t.Fatal(err)
	}
	h.file("node_modules/dep/index.js", []byte("require('child_process').execSync('id')\n"))
	h.file("node_modules/dep/fine.js", []byte("fine\n"))
	if os.Geteuid() == 0 {
		if err := unix.Mknod(filepath.Join(h.upperDir, "node_modules", "dep", "gone.js"), unix.S_IFCHR, 0); err != nil {
			t.Fatal(err)
		}
	}
	liveAndKeptTar(t, h, func(how, tarball string, rejected []string) {
		names := tarNames(t, tarball)
		if slices.Contains(names, "0 node_modules/dep/index.js") || !slices.Contains(rejected, "node_modules/dep/index.js: "+checkoutSharedReason) {
			t.Errorf("%s tar: %q, left out %q; want index.js left out as a store's file", how, names, rejected)
		}
		if os.Geteuid() == 0 && (slices.Contains(names, "0 node_modules/dep/.wh.gone.js") || !slices.Contains(rejected, "node_modules/dep/.wh.gone.js: "+checkoutMarkReason)) {
			t.Errorf("%s tar: %q, left out %q; want the whiteout over a store's file left out", how, names, rejected)
		}
		if !slices.Contains(names, "0 node_modules/dep/fine.js") {
			t.Errorf("%s tar lost fine.js: %q", how, names)
		}
	})
}

// TestTarNeverWritesIntoNodes: a fifo, socket or device the checkout holds
// (a dev server's fifo made after create) is opened by an extractor that
// writes in place (Python's tarfile, data filter and all), which would
// hand the job's bytes to whatever reads it. An entry or a deletion's mark
// over one is left out, live and kept, and named.
func TestTarNeverWritesIntoNodes(t *testing.T) {
	h := newHostileWorkspace(t)
	for _, n := range []string{"pipe", ".wh.gone"} {
		if err := unix.Mkfifo(filepath.Join(h.ws.Source, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.file("pipe", []byte("the job's bytes\n"))
	h.file("fine.txt", []byte("fine\n"))
	if os.Geteuid() == 0 {
		if err := unix.Mknod(filepath.Join(h.ws.Source, "tty"), unix.S_IFCHR|0o600, int(unix.Mkdev(5, 0))); err != nil {
			t.Fatal(err)
		}
		h.file("tty", []byte("to a device\n"))
		if err := unix.Mknod(filepath.Join(h.upperDir, "gone"), unix.S_IFCHR, 0); err != nil {
			t.Fatal(err)
		}
	}
	liveAndKeptTar(t, h, func(how, tarball string, rejected []string) {
		names := tarNames(t, tarball)
		if slices.Contains(names, "0 pipe") || !slices.Contains(rejected, "pipe: "+checkoutNodeReason) {
			t.Errorf("%s tar: %q, left out %q; want pipe left out as standing on a fifo", how, names, rejected)
		}
		if os.Geteuid() == 0 && (slices.Contains(names, "0 tty") || !slices.Contains(rejected, "tty: "+checkoutNodeReason)) {
			t.Errorf("%s tar: %q, left out %q; want tty left out as standing on a device", how, names, rejected)
		}
		if os.Geteuid() == 0 && (slices.Contains(names, "0 .wh.gone") || !slices.Contains(rejected, ".wh.gone: "+checkoutMarkReason)) {
			t.Errorf("%s tar: %q, left out %q; want the whiteout over a fifo left out", how, names, rejected)
		}
		if !slices.Contains(names, "0 fine.txt") {
			t.Errorf("%s tar lost fine.txt: %q", how, names)
		}
	})
}

// TestTarNamesEveryKindLeftOut: a fifo, a setuid file and a file the
// sandbox user could not read (a root-owned 0600 file it renamed) are in
// no format; the kept tar, whose copy never held them, names each as the
// live tar does, so a partial tar is never taken for the whole change.
func TestTarNamesEveryKindLeftOut(t *testing.T) {
	h := newHostileWorkspace(t)
	if err := unix.Mkfifo(filepath.Join(h.upperDir, "ff"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(h.file("s", []byte("x\n")), 0o4755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.file("moved", []byte("secret\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	h.file("plain", []byte("new\n"))
	liveAndKeptTar(t, h, func(how, tarball string, rejected []string) {
		names := tarNames(t, tarball)
		for _, want := range []string{"ff: fifo: never exported", "s: setuid/setgid bit: never exported", "moved: " + unreadableReason} {
			if !slices.Contains(rejected, want) {
				t.Errorf("%s tar left out %q; want %q among them", how, rejected, want)
			}
		}
		if !slices.Equal(names, []string{"0 plain"}) {
			t.Errorf("%s tar: %q, want plain alone", how, names)
		}
	})
}

// TestTarJudgesRepositoriesInTheCheckoutNow: a directory the checkout at
// its named path holds a HEAD in now (the fork's next commit) is one git
// may take for a repository, so the job's config there stays out of the
// tar, live and kept, as it would had the layer seen the HEAD; a HEAD at
// the checkout's top leaves the whole tar empty.
func TestTarJudgesRepositoriesInTheCheckoutNow(t *testing.T) {
	h := newHostileWorkspace(t)
	h.named("fixture/", nil)
	h.file("fixture/config", []byte("[core]\n\tfsmonitor = touch /tmp/owned\n"))
	h.file("fine.txt", []byte("fine\n"))
	h.named("fixture/Head", []byte("ref: refs/heads/main\n"))
	liveAndKeptTar(t, h, func(how, tarball string, rejected []string) {
		names := tarNames(t, tarball)
		if slices.Contains(names, "0 fixture/config") || !slices.Contains(rejected, "fixture: "+repoDirReason) {
			t.Errorf("%s tar: %q, left out %q; want fixture left out as a repository", how, names, rejected)
		}
		if !slices.Contains(names, "0 fine.txt") {
			t.Errorf("%s tar lost fine.txt: %q", how, names)
		}
	})
	if err := os.WriteFile(filepath.Join(h.ws.Named, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	liveAndKeptTar(t, h, func(how, tarball string, rejected []string) {
		if names := tarNames(t, tarball); len(names) > 0 || !slices.Contains(rejected, ".: "+repoDirReason) {
			t.Errorf("%s tar of a checkout with a HEAD at its top: %q, left out %q", how, names, rejected)
		}
	})
}

// TestPatchJudgedAgainstTheCheckoutNow: git apply writes a patch's files
// as they are, so the patch and json meet the checkout as it is now too: a
// directory the fork's next commit made a repository keeps the job's config
// out of the live patch and refuses the kept one (made at the keep), and a
// workspace whose directory is gone below a bare repository (git would
// make it again as that repository's hooks) is refused in every format.
func TestPatchJudgedAgainstTheCheckoutNow(t *testing.T) {
	h := newHostileWorkspace(t)
	base := t.TempDir()
	h.ws.Named = filepath.Join(base, "repo", "pkg", "hooks")
	if err := os.MkdirAll(filepath.Join(h.ws.Named, "fixture"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.file("fixture/config", []byte("[core]\n\tfsmonitor = touch /tmp/owned\n"))
	h.file("pre-commit", []byte("#!/bin/sh\necho owned\n"))
	cfg := h.keep()
	h.named("fixture/HEAD", []byte("ref: refs/heads/main\n"))
	patch, rejected, err := h.export("patch", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(patch, "fixture/config") || !slices.Contains(rejected, "fixture: "+repoDirReason) {
		t.Errorf("the live patch holds fixture/config or does not name it (left out %q):\n%s", rejected, patch)
	}
	if _, err := Export(cfg, "/run/root-a", "c1", "patch", io.Discard); err == nil || !strings.Contains(err.Error(), "in fixture now, which git may take") {
		t.Errorf("the kept patch into a checkout that made fixture a repository: %v", err)
	}
	// The next commit made pkg a bare repository and took hooks away.
	if err := os.RemoveAll(filepath.Join(base, "repo", "pkg", "hooks")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "repo", "pkg", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"patch", "json", "tar"} {
		if _, _, err := h.export(format, defaultChangeLimits); err == nil || !strings.Contains(err.Error(), "which git may take for a repository") {
			t.Errorf("the live %s below a bare repository, the workspace gone: %v", format, err)
		}
		if _, err := Export(cfg, "/run/root-a", "c1", format, io.Discard); err == nil || !strings.Contains(err.Error(), "which git may take for a repository") {
			t.Errorf("the kept %s below a bare repository, the workspace gone: %v", format, err)
		}
	}
}

// TestKeptPatchJudgedWhereTheCopyLeftOut: the kept copy leaves out what
// stands on a checkout link by key (fixture, beside the checkout's link
// Fixture). The kept patch and json are made from that copy, so they
// leave it out too and name it, as the tar does: a reviewer reads and
// applies the same changes in every format.
func TestKeptPatchJudgedWhereTheCopyLeftOut(t *testing.T) {
	h := newHostileWorkspace(t)
	if err := os.Symlink("keep.txt", filepath.Join(h.ws.Source, "Fixture")); err != nil {
		t.Fatal(err)
	}
	h.named("fixture/", nil)
	h.file("fixture/config", []byte("[core]\n\tfsmonitor = touch /tmp/owned\n"))
	h.file("fine.txt", []byte("fine\n"))
	cfg := h.keep()
	for _, format := range []string{"patch", "json", "tar"} {
		var out bytes.Buffer
		rejected, err := Export(cfg, "/run/root-a", "c1", format, &out)
		if err != nil {
			t.Fatalf("kept %s: %v", format, err)
		}
		if strings.Contains(out.String(), "fixture/config") {
			t.Errorf("the kept %s carries fixture/config, which the kept copy left out", format)
		}
		if !slices.ContainsFunc(rejected, func(l string) bool { return strings.HasPrefix(l, "fixture") }) {
			t.Errorf("the kept %s does not name what it left out: %q", format, rejected)
		}
	}
}

// TestKeptPatchCountsWhatItWrites: the kept patch is judged by what the
// checkout holds now together with the names it writes itself. The job
// wrote fixture/objects/x (the checkout had objects then) and
// fixture/config; the fork's next commit took objects away and added refs.
// The patch's objects with the checkout's refs would make fixture a common
// directory whose config is the job's: refused.
func TestKeptPatchCountsWhatItWrites(t *testing.T) {
	h := newHostileWorkspace(t)
	if err := os.MkdirAll(filepath.Join(h.ws.Source, "fixture", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.named("fixture/objects/", nil)
	h.file("fixture/objects/x", []byte("x\n"))
	h.file("fixture/config", []byte("[core]\n\tpager = touch /tmp/owned\n"))
	h.file("fine.txt", []byte("fine\n"))
	cfg := h.keep()
	var before bytes.Buffer
	if _, err := Export(cfg, "/run/root-a", "c1", "patch", &before); err != nil || !strings.Contains(before.String(), "+++ b/fixture/config") {
		t.Fatalf("the kept patch before the commit: %v\n%s", err, before.String())
	}
	if err := os.Remove(filepath.Join(h.ws.Named, "fixture", "objects")); err != nil {
		t.Fatal(err)
	}
	h.named("fixture/refs/heads/", nil)
	for _, format := range []string{"patch", "json"} {
		var out bytes.Buffer
		if _, err := Export(cfg, "/run/root-a", "c1", format, &out); err == nil || !strings.Contains(err.Error(), "in fixture now, which git may take") {
			t.Errorf("the kept %s whose objects complete the checkout's refs: %v\n%s", format, err, out.String())
		}
	}
}

// TestExportKeepsOutACommonDirectory: git takes the HEAD of a repository
// from one directory and its objects, refs, config and hooks from the one
// a commondir file beside the HEAD names, which needs no HEAD: the fork
// commits fixture2/HEAD and fixture2/commondir (../fixture), the job writes
// fixture/objects, fixture/refs and fixture/config with a core.pager. A
// directory with objects and refs counts as one with a HEAD: left out of
// the live tar and patch and the kept tar, and the kept patch refused
// where the checkout holds them.
func TestExportKeepsOutACommonDirectory(t *testing.T) {
	h := newHostileWorkspace(t)
	for name, content := range map[string]string{"fixture2/HEAD": "ref: refs/heads/main\n", "fixture2/commondir": "../fixture\n"} {
		p := filepath.Join(h.ws.Source, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.file("fixture/objects/.keep", nil)
	h.file("fixture/refs/.keep", nil)
	h.file("fixture/config", []byte("[core]\n\tpager = touch /tmp/owned\n"))
	h.file("fine.txt", []byte("fine\n"))
	patch, rejected, err := h.export("patch", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(patch, "fixture/config") || !slices.Contains(rejected, "fixture: "+repoDirReason) {
		t.Errorf("the live patch holds fixture/config or does not name fixture (left out %q):\n%s", rejected, patch)
	}
	liveAndKeptTar(t, h, func(how, tarball string, rejected []string) {
		names := tarNames(t, tarball)
		if slices.Contains(names, "0 fixture/config") || !slices.Contains(rejected, "fixture: "+repoDirReason) {
			t.Errorf("%s tar: %q, left out %q; want fixture left out as a repository", how, names, rejected)
		}
		if !slices.Contains(names, "0 fine.txt") {
			t.Errorf("%s tar lost fine.txt: %q", how, names)
		}
	})
}

// TestKeptPatchOfACheckoutWithItsRepository: a checkout is a repository's
// worktree, its .git holding a HEAD. What the job wrote in .git is left out
// of every format, so it is no directory the kept patch writes in: the
// kept patch of the other changes is exported.
func TestKeptPatchOfACheckoutWithItsRepository(t *testing.T) {
	h := newHostileWorkspace(t)
	h.named(".git/HEAD", []byte("ref: refs/heads/main\n"))
	h.file(".git/config", []byte("[core]\n\tfsmonitor = touch /tmp/owned\n"))
	h.file("src/fine.txt", []byte("fine\n"))
	cfg := h.keep()
	var patch bytes.Buffer
	if _, err := Export(cfg, "/run/root-a", "c1", "patch", &patch); err != nil || !strings.Contains(patch.String(), "src/fine.txt") || strings.Contains(patch.String(), ".git/config") {
		t.Errorf("the kept patch of a checkout with its .git: %v\n%s", err, patch.String())
	}
}

// TestKeptLinksJudgedAgainstTheCheckoutNow: a kept link to a new place
// leads, once the fork's next commit made that place a directory of the
// checkout with a link below it, to what the checkout holds: a tar of
// another export writing below the link would write through the
// checkout's link. The kept patch and json are refused then.
func TestKeptLinksJudgedAgainstTheCheckoutNow(t *testing.T) {
	h := newHostileWorkspace(t)
	h.named("", nil)
	if err := os.Symlink("srcdir", filepath.Join(h.upperDir, "l")); err != nil {
		t.Fatal(err)
	}
	cfg := h.keep()
	var before bytes.Buffer
	if _, err := Export(cfg, "/run/root-a", "c1", "patch", &before); err != nil || !strings.Contains(before.String(), "+++ b/l\n") {
		t.Fatalf("the kept patch before the commit: %v\n%s", err, before.String())
	}
	h.named("srcdir/", nil)
	if err := os.Symlink("/etc", filepath.Join(h.ws.Named, "srcdir", "lnk")); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"patch", "json"} {
		if _, err := Export(cfg, "/run/root-a", "c1", format, io.Discard); err == nil || !strings.Contains(err.Error(), "link l -> srcdir now leads to what it holds") {
			t.Errorf("the kept %s with l -> srcdir, now a directory of the checkout: %v", format, err)
		}
	}
}

// TestCheckoutDirectoriesReadOnce: link targets pass through the same
// checkout directories again and again (2,000 links through one of 20,000
// files held a keep for minutes); each is read once per judgement, by key.
func TestCheckoutDirectoriesReadOnce(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "srcdir", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	low, err := openLayer(src)
	if err != nil {
		t.Fatal(err)
	}
	defer low.Close()
	root := checkoutRoot(low)
	first := root.below("srcdir").below("deep")
	if again := root.below("SRCDIR").below("Deep"); again != first {
		t.Errorf("srcdir/deep is read again for each name that lands there")
	}
	// A directory too large to judge cheaply is no clean one for a link
	// to lead to (cleanLimit entries at most, itself and below).
	for _, f := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(src, "srcdir", "deep", f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fresh := checkoutRoot(low)
	if n := 3; fresh.below("srcdir").cleanWithin(&n) {
		t.Errorf("srcdir, with 4 entries below it, is clean within 3")
	}
	if n := 4; !checkoutRoot(low).below("srcdir").cleanWithin(&n) {
		t.Errorf("srcdir, with 4 plain entries below it, is not clean within 4")
	}
	// Judged in parts first, the whole still counts every entry.
	parts := checkoutRoot(low)
	if n := 3; !parts.below("srcdir").below("deep").cleanWithin(&n) {
		t.Errorf("srcdir/deep, with 3 plain entries, is not clean within 3")
	}
	if n := 3; parts.below("srcdir").cleanWithin(&n) {
		t.Errorf("srcdir, with 4 entries below it, is clean within 3 once deep was judged alone")
	}
}

// TestLinksClimbOnlyWhereEveryCheckoutHoldsTheDirectory: a directory the
// container's pinned checkout holds and the checkout at its path now does
// not (a fresh clone of the next commit) is one another export may make a
// link in: a link climbs from it no more than from one the job made.
func TestLinksClimbOnlyWhereEveryCheckoutHoldsTheDirectory(t *testing.T) {
	h := newHostileWorkspace(t)
	if err := os.MkdirAll(filepath.Join(h.ws.Source, "p", "q", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.named("p/q/", nil)
	for name, target := range map[string]string{"p/q/a/l": "../../../keep.txt", "p/q/l2": "../../new.txt"} {
		p := filepath.Join(h.upperDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	patch, rejected, err := h.export("patch", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rejected, "p/q/a/l: "+linkClimbsOut+linkOutWhy) || strings.Contains(patch, "b/p/q/a/l\n") {
		t.Errorf("a link climbing from p/q/a, which the checkout now lacks: left out %q\n%s", rejected, patch)
	}
	if !strings.Contains(patch, "+++ b/p/q/l2\n") {
		t.Errorf("a link climbing from p/q, which both checkouts hold, is lost: left out %q\n%s", rejected, patch)
	}
}

// leftOutAsLink tells whether rejected names name as a symlink that could
// lead out of the checkout, with the reason that applies and its end.
func leftOutAsLink(rejected []string, name string) bool {
	return slices.ContainsFunc(rejected, func(l string) bool {
		return strings.HasPrefix(l, name+": a symlink ") && strings.HasSuffix(l, linkOutWhy)
	})
}
