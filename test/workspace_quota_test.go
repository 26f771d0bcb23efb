package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWorkspaceChangesQuota fills changes_dir past changes_quota with
// containers whose changes are kept on delete: the keeps that fit stay
// whole and exportable; the one past the quota is refused (it keeps
// nothing, the delete still succeeds, its audit line says why), and
// changes_dir does not grow by a byte from it.
func TestWorkspaceChangesQuota(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			needRoot(t, backend)
			cfg, changes := workspaceConfig(t, "changes_quota = \"256k\"\n")
			audit := filepath.Join(filepath.Dir(cfg), "audit.jsonl")
			root := stateRoot(t)
			g := []string{"--config", cfg, "--root", root, "--backend", backend}
			// about 100 KiB kept per container: two fit in 256 KiB, a third does not
			job := "dd if=/dev/urandom of=/workspace/blob bs=1024 count=96 2>/dev/null"
			var ids []string
			var usedBefore int64
			for i := 0; i < 3; i++ {
				id := uniqueID(fmt.Sprintf("wsquota%d-%s", i, backend))
				ids = append(ids, id)
				runToEnd(t, g, workspaceBundle(t, workspaceSource(t), job), id)
				if i == 2 {
					usedBefore = diskOf(t, changes)
				}
				r := bulkhead(t, "", append(g, "delete", id)...)
				if r.code != 0 {
					t.Fatalf("delete %d: exit %d %s", i, r.code, r.stderr)
				}
				if i < 2 && strings.Contains(r.stderr, "not kept") {
					t.Fatalf("keep %d refused under the quota: %s", i, r.stderr)
				}
				if i == 2 && !strings.Contains(r.stderr, "not kept") {
					t.Fatalf("the keep past changes_quota was not refused: %q", r.stderr)
				}
			}
			for _, id := range ids[:2] {
				if out := must(t, append(g, "changes", "export", "--format", "json", id)...); !strings.Contains(out, `"blob"`) {
					t.Errorf("kept changes of %s lost after the refusal:\n%s", id, out)
				}
			}
			if r := bulkhead(t, "", append(g, "changes", "export", ids[2])...); r.code == 0 {
				t.Errorf("the refused keep can be exported:\n%s", r.stdout)
			}
			if after := diskOf(t, changes); after != usedBefore {
				t.Errorf("changes_dir grew from %d to %d bytes by a refused keep", usedBefore, after)
			}
			for _, e := range keptEntries(t, changes) {
				if strings.Contains(e, ".tmp-") || strings.Contains(e, ids[2]) {
					t.Errorf("the refused keep left %s", e)
				}
			}
			if m := mountsUnder(t, root); len(m) > 0 {
				t.Fatalf("mounts left:\n%s", strings.Join(m, "\n"))
			}
			line := auditLine(t, audit, "delete", ids[2])
			if line == nil || line.Outcome != "deleted" || !strings.Contains(line.Error, "changes_quota") || line.Changes != "" {
				t.Fatalf("the refused keep's audit line: %+v; want outcome deleted and the changes_quota reason", line)
			}
			t.Logf("audit: %s", line.Error)
		})
	}
}

type auditEntry struct {
	Event, ID, Outcome, Changes, Error string
}

// auditLine is the last audit line of event for id.
func auditLine(t *testing.T, path, event, id string) *auditEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var last *auditEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e auditEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == event && e.ID == id {
			last = &e
		}
	}
	return last
}

// diskOf is the disk a tree takes, in allocated blocks.
func diskOf(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		n += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
