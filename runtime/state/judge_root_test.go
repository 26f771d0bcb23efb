package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJudgeRoot: a state root in a directory another user may change is
// refused, whether it exists yet or not, and so is a sticky root or one
// holding a backend's directory of another user's; one of root's alone,
// also below the sticky /tmp, is taken.
func TestJudgeRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes directories of another user's")
	}
	base := t.TempDir()
	dir := func(name string, uid int, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	users := dir("users", 1000, 0o755)
	shared := dir("shared", 0, 0o775)
	roots := dir("roots", 0, 0o700)
	sticky := dir("sticky", 0, os.ModeSticky|0o777)
	planted := dir("planted", 0, 0o700)
	if err := os.Mkdir(filepath.Join(planted, "runc"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(planted, "runc"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	mine := t.TempDir()
	for _, c := range []struct {
		name, root, refusal string
	}{
		{"a new root in a user's directory", filepath.Join(users, "r"), users + " (uid 1000, mode 0755)"},
		{"a user's directory itself", users, users + " (uid 1000, mode 0755)"},
		{"a root in a group-writable directory", filepath.Join(shared, "r"), shared + " (uid 0, mode 0775)"},
		{"a sticky root", sticky, sticky + " (uid 0, mode 1777)"},
		{"a backend's directory of another user's in the root", planted, filepath.Join(planted, "runc") + " (uid 1000, mode 0700)"},
		{"a new root of root's", filepath.Join(roots, "new", "r"), ""},
		{"below the sticky /tmp", mine, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := JudgeRoot(c.root)
			switch {
			case c.refusal == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refusal != "" && (err == nil || !strings.Contains(err.Error(), c.refusal)):
				t.Fatalf("got %v, want a refusal naming %s", err, c.refusal)
			}
			if c.refusal == "" {
				return
			}
			if _, err := OpenRegistry(c.root); err == nil {
				t.Fatal("OpenRegistry took it")
			}
			if _, err := os.Stat(Dir(c.root)); err == nil {
				t.Fatalf("%s was made", Dir(c.root))
			}
		})
	}
}

// TestJudgeRootMadeWantsItAll: once made, a root that is not all there
// (its owner above renamed a part away, to put it back once judged) is
// refused, not judged as one still to be made.
func TestJudgeRootMadeWantsItAll(t *testing.T) {
	root := filepath.Join(t.TempDir(), "s", "r")
	if err := judgeRootMade(root); err == nil || !strings.Contains(err.Error(), "went away as it was made") {
		t.Fatalf("a root not there after it was made: %v", err)
	}
	if err := os.MkdirAll(Dir(root), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := judgeRootMade(root); err != nil {
		t.Fatalf("a root made whole: %v", err)
	}
}
