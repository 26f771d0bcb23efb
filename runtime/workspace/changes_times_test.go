package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKeptCopyKeepsTimes: the kept copy of a layer shows when the job
// changed each entry (files, links, directories), as the live diff does,
// not when the copy was made.
func TestKeptCopyKeepsTimes(t *testing.T) {
	upper := t.TempDir()
	if err := os.MkdirAll(filepath.Join(upper, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(upper, "dir", "f.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dir/f.txt", filepath.Join(upper, "link")); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{
		"dir/f.txt": time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC),
		"link":      time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC),
		"dir":       time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, rel := range []string{"dir/f.txt", "link", "dir"} {
		ts := unix.NsecToTimespec(want[rel].UnixNano())
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(upper, rel), []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "kept")
	if err := copyLayer(upper, "", dst, newBudget(defaultChangeLimits), &diskBudget{limit: 1 << 30}, nil, func(string, string) {}); err != nil {
		t.Fatal(err)
	}
	for rel, w := range want {
		fi, err := os.Lstat(filepath.Join(dst, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(w) {
			t.Errorf("%s: kept with time %s, the job's was %s", rel, fi.ModTime().UTC(), w)
		}
	}
}
