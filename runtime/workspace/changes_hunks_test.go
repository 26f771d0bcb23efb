package workspace

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// applied applies hunks, made from old to new, to old with git apply and
// fails unless the result is new.
func applied(t *testing.T, old, new, hunks string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	patch := filepath.Join(t.TempDir(), "p")
	if err := os.WriteFile(patch, []byte("--- a/f\n+++ b/f\n"+hunks), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "apply", patch)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v %s\n%s", err, out, hunks)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != new {
		t.Fatalf("the patch applied gives %d bytes, want the new side's %d", len(got), len(new))
	}
}

// TestHunksBoundedWork: matching lines costs at most maxDiffWork for a
// patch. A job that wrote a line after each of a large file's (every
// line then matches once, difflib's worst case) had one delete spend
// minutes of the host's CPU; such a file is now one hunk that replaces
// what changed, charged nothing, and applies. An ordinary edit of a
// large file still gets minimal hunks, charged for its changed middle.
func TestHunksBoundedWork(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs git to apply the patch: %v", err)
	}
	var big, interleaved, edited strings.Builder
	for i := 0; i < 20000; i++ {
		l := fmt.Sprintf("line %d = %x\n", i, i*7919)
		big.WriteString(l)
		interleaved.WriteString(l + fmt.Sprintf("%x\n", i))
		if i == 3 || i == 19990 {
			l = "changed\n"
		}
		edited.WriteString(l)
	}
	old := big.String()

	work := maxDiffWork
	var b bytes.Buffer
	writeHunks(&b, splitLines([]byte(old)), splitLines([]byte(interleaved.String())), &work)
	if work != maxDiffWork || strings.Count(b.String(), "@@ -") != 1 {
		t.Fatalf("a line after each of 20,000: %d of the work left, %d hunks; want the whole budget left and one hunk",
			work, strings.Count(b.String(), "@@ -"))
	}
	applied(t, old, interleaved.String(), b.String())

	b.Reset()
	writeHunks(&b, splitLines([]byte(old)), splitLines([]byte(edited.String())), &work)
	if hunks, removed := strings.Count(b.String(), "@@ -"), strings.Count(b.String(), "\n-"); hunks != 2 || removed != 2 {
		t.Fatalf("two lines edited far apart: %d hunks removing %d lines, want 2 and 2:\n%s", hunks, removed, b.String())
	}
	if spent := maxDiffWork - work; spent <= 0 || spent > 20000*20000 {
		t.Fatalf("two lines edited: %d of the work spent, want the changed middle's", spent)
	}
	applied(t, old, edited.String(), b.String())

	// No line once on either side (no anchor), each just under difflib's
	// "popular" cut, and a new line between each two: 2,800 by 5,600
	// lines is a product a tenth of the budget, yet difflib's matcher
	// spent 15 s on it. Its own steps are what is charged: too many, so
	// the file is replaced whole, charged nothing, and applies.
	var repeated, between strings.Builder
	for i := 0; i < 2800; i++ {
		fmt.Fprintf(&repeated, "a%d\n", i%50)
		fmt.Fprintf(&between, "f%d\na%d\n", i%50, i%50)
	}
	if w := matchWork(splitLines([]byte(repeated.String())), splitLines([]byte(between.String()))); w <= maxDiffWork {
		t.Fatalf("lines repeated 56 times, a new one between each two: %d steps of difflib's counted, want more than the budget's %d", w, maxDiffWork)
	}
	b.Reset()
	work = maxDiffWork
	writeHunks(&b, splitLines([]byte(repeated.String())), splitLines([]byte(between.String())), &work)
	if work != maxDiffWork || strings.Count(b.String(), "@@ -") != 1 {
		t.Fatalf("lines repeated, a new one between each two: %d of the work left, %d hunks; want the whole budget left and one hunk", work, strings.Count(b.String(), "@@ -"))
	}
	applied(t, repeated.String(), between.String(), b.String())
	b.Reset()

	// Lines of a few values, repeated and moved: difflib's matching, the
	// anchors and the whole replacement all meet.
	rnd := rand.New(rand.NewSource(1))
	lines := func() string {
		var l strings.Builder
		for n := rnd.Intn(40); n > 0; n-- {
			fmt.Fprintf(&l, "%c\n", 'a'+rnd.Intn(6))
		}
		if rnd.Intn(4) == 0 {
			l.WriteString("end")
		}
		return l.String()
	}
	for n := 0; n < 150; n++ {
		o, c := lines(), lines()
		if o == c {
			continue
		}
		w := rnd.Intn(200)
		b.Reset()
		writeHunks(&b, splitLines([]byte(o)), splitLines([]byte(c)), &w)
		applied(t, o, c, b.String())
	}

	// Ends without a newline, a change at either end, nothing in common.
	for _, c := range [][2]string{{"a\nb\nc", "a\nb\nc\n"}, {"x\na\n", "a\n"}, {"a\n", "a\nz"}, {"p\nq\n", "r\ns\nt\n"}} {
		for _, w := range []int{maxDiffWork, 0} {
			b.Reset()
			writeHunks(&b, splitLines([]byte(c[0])), splitLines([]byte(c[1])), &w)
			applied(t, c[0], c[1], b.String())
		}
	}
}
