package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLinkLeftOutForItsOwnReason: a symlink left out of the export is
// named with the reason that applies to it, not a list of every one.
func TestLinkLeftOutForItsOwnReason(t *testing.T) {
	h := newHostileWorkspace(t)
	want := map[string]struct{ target, why string }{
		"abs":    {"/etc/passwd", linkAbsolute},
		"up":     {"../x", linkClimbsOut},
		"sneaky": {"keep.txt/../../x", linkClimbsBack},
		"hooks":  {".git/hooks", linkThroughMeta},
		"self":   {".", linkToOwnDir},
		"empty":  {"", linkEmpty},
	}
	for name, w := range want {
		if w.target == "" {
			continue // symlink(2) refuses an empty target; judged below
		}
		if err := os.Symlink(w.target, filepath.Join(h.upperDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	_, rejected, err := h.export("patch", defaultChangeLimits)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if w.target == "" {
			if got := (*checkoutDir)(nil).linkOut("", name, ""); got != w.why+linkOutWhy {
				t.Errorf("an empty target: %q", got)
			}
			continue
		}
		if line := name + ": " + w.why + linkOutWhy; !slices.Contains(rejected, line) {
			t.Errorf("%s -> %s: want %q among %q", name, w.target, line, rejected)
		}
	}
}
