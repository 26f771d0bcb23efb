package workspace

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"bulkhead.dev/bulkhead/runtime/state"
)

// TestKeepCountsInodes: empty files and short symlinks allocate no block
// but each takes an inode, and a filesystem's inodes run out long before
// its bytes (16.7 million on a 252 GB ext4 here; 50,000 empty files kept
// once counted 14 MB, so changes_quota's 4g held the whole table). Each
// inode a keep makes counts a block: 6,000 of them no longer fit in
// 16 MiB, and the refusal keeps nothing; the quota then bounds the
// inodes of changes_dir to changes_quota / 4096.
func TestKeepCountsInodes(t *testing.T) {
	h := newHostileWorkspace(t)
	for i := 0; i < 3000; i++ {
		h.file(filepath.Join("e", strconv.Itoa(i)), nil)
		if err := os.Symlink("x", filepath.Join(h.upperDir, "e", "l"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t)
	cfg.ChangesQuota = "16m"
	_, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c1"}, []Workspace{h.ws}, time.Hour)
	if err == nil || !strings.Contains(err.Error(), "nothing kept") {
		t.Fatalf("6,000 inodes kept under a 16 MiB quota: %v", err)
	}
	t.Logf("refused: %v", err)
	ents, _ := os.ReadDir(changesDir(cfg))
	for _, e := range ents {
		if e.Name() != ".lock" {
			t.Errorf("left in changes_dir after a refused keep: %s", e.Name())
		}
	}

	cfg.ChangesQuota = "64m"
	r, err := saveChanges(cfg, "/run/root-a", &state.Record{ID: "c2"}, []Workspace{h.ws}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes < 6000*blockSize {
		t.Errorf("6,000 kept inodes count %d bytes, want at least %d", r.Bytes, 6000*blockSize)
	}
	// What the entry says it takes is all it takes, meta.json included.
	used, err := diskUsage(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if used > r.Bytes {
		t.Errorf("the entry takes %d bytes of disk but counts %d", used, r.Bytes)
	}
}
