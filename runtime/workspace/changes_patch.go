package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// gitMode is the mode git records for a change: 100644, 100755 or 120000.
func gitMode(c Change, old bool) string {
	m := c.Mode
	if old {
		m = c.OldMode
	}
	if c.Type == "symlink" {
		return "120000"
	}
	var v int
	fmt.Sscanf(m, "%o", &v)
	if v&0o111 != 0 {
		return "100755"
	}
	return "100644"
}

// oddName is a path git would quote, or one a terminal would not show as
// it is; bulkhead refuses to guess git's quoting and leaves such paths to
// the tar export.
func oddName(p string) bool {
	return escape.Needed(p) || strings.ContainsAny(p, "\"\\") || strings.HasPrefix(p, " ") || strings.HasSuffix(p, " ")
}

// patchSource reads the contents a patch needs: the old side from the
// lower layer, the new side from the upper layer, never following links.
type patchSource struct {
	up, low *layer
	// reader is the sandbox user, as the workspace's id map made it;
	// nil when unknown, and then no old side is shown.
	reader *idShift
	// b is charged with every old side read: the job chooses which of
	// the checkout's files it deletes or rewrites, and so what a patch
	// would print of them.
	b *budget
}

// sandboxCouldRead tells whether the sandbox user could read the lower
// file rel, by its owner as the id map showed it and its mode bits. The
// patch's old side is read by bulkhead as root: a job that deletes or
// replaces a file it cannot read (a root-owned 0600 token in a user's
// checkout, which its own directory lets it remove) would otherwise have
// the file's content printed in the patch, which CI logs and reviews show.
// It returns the file as judged, which the read of the old side must
// find again.
func (ps patchSource) sandboxCouldRead(rel string) (*unix.Stat_t, bool) {
	return lowerReadable(ps.low, rel, ps.reader)
}

// content reads one side of a change. judged is the lower file as
// sandboxCouldRead judged it (old side); the new side must be the upper
// inode the scan judged.
func (ps patchSource) content(c Change, old bool, judged *unix.Stat_t) ([]byte, error) {
	if old {
		if c.Type == "symlink" {
			t, err := ps.low.readlink(c.lowerRel)
			return []byte(t), err
		}
		if judged.Size <= maxPatchFile {
			if why := ps.b.read(judged.Size); why != "" {
				return nil, errors.New(why)
			}
		}
		return ps.low.readSmall(c.lowerRel, judged, maxPatchFile)
	}
	if c.Type == "symlink" {
		return []byte(c.Target), nil
	}
	if c.upper == nil {
		return nil, fmt.Errorf("%s: not judged when scanned", c.upperRel)
	}
	return ps.up.readSmall(c.upperRel, c.upper, maxPatchFile)
}

// writePatch writes the changes as a git-style patch (`git apply` takes it
// in a clean checkout of the source) and returns the paths it could not
// express faithfully: binary files, odd names, files too large for a text
// patch, second names of a hard link, content with characters a terminal
// would not show as they are (hiddenRune: controls, format and bidi
// characters, spaces other than ASCII's, ...), a change of mode bits alone
// that git records the same, and rejected entries. What the reviewer reads
// is then exactly what applies.
func writePatch(w io.Writer, changes []Change, ps patchSource, prefix string) (skipped []string, err error) {
	work := maxDiffWork
	for _, c := range changes {
		if c.Type == "dir" {
			continue // git tracks no directories
		}
		p := prefix + c.Path
		switch {
		case c.Rejected != "":
			skipped = append(skipped, rejectLine(p, c.Rejected))
			continue
		case c.Type != "file" && c.Type != "symlink":
			skipped = append(skipped, rejectLine(p, c.Type+" is not expressible in a patch"))
			continue
		case oddName(p):
			skipped = append(skipped, rejectLine(p, "file name needs quoting or holds characters a terminal hides; use --format tar"))
			continue
		case c.LinkTo != "" && c.Kind != "deleted":
			skipped = append(skipped, rejectLine(p, "hard link to "+prefix+c.LinkTo+": not expressible in a patch; use --format tar"))
			continue
		}
		var oldData, newData []byte
		var lower *unix.Stat_t
		if c.Kind != "added" {
			var readable bool
			if lower, readable = ps.sandboxCouldRead(c.lowerRel); !readable {
				skipped = append(skipped, rejectLine(p, "its old content was not readable by the sandbox user, so the patch does not show it; use --format tar"))
				continue
			}
		}
		if c.Kind != "added" {
			if oldData, err = ps.content(c, true, lower); err != nil {
				skipped = append(skipped, rejectLine(p, "old side: "+err.Error()+"; use --format tar"))
				continue
			}
		}
		if c.Kind != "deleted" {
			if newData, err = ps.content(c, false, nil); err != nil {
				skipped = append(skipped, rejectLine(p, err.Error()+"; use --format tar"))
				continue
			}
		}
		modeOnly := c.Kind == "modified" && bytes.Equal(oldData, newData)
		if modeOnly && gitMode(c, true) == gitMode(c, false) {
			// git knows no mode but 100644 and 100755: an entry with
			// neither mode lines nor a hunk is one git apply refuses,
			// and with it the whole patch.
			skipped = append(skipped, rejectLine(p, fmt.Sprintf("only its mode changed, %s to %s, which git records as %s either way: not expressible in a patch; --format json lists it", c.OldMode, c.Mode, gitMode(c, false))))
			continue
		}
		// An entry of mode lines alone shows no content, so what it
		// holds cannot mislead the reviewer.
		if !modeOnly && (isBinary(oldData) || isBinary(newData)) {
			skipped = append(skipped, rejectLine(p, "binary file (no GIT binary patch); use --format tar"))
			continue
		}
		if !modeOnly && (!escape.Plain(oldData) || !escape.Plain(newData) || (c.Type == "symlink" && strings.Contains(c.Target, "\n"))) {
			skipped = append(skipped, rejectLine(p, "holds characters a terminal would not show as they are (control, format, bidi, zero-width, a space other than ASCII's); use --format tar"))
			continue
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n", p, p)
		switch c.Kind {
		case "added":
			fmt.Fprintf(&b, "new file mode %s\n", gitMode(c, false))
		case "deleted":
			fmt.Fprintf(&b, "deleted file mode %s\n", gitMode(c, true))
		default:
			if om, nm := gitMode(c, true), gitMode(c, false); om != nm {
				fmt.Fprintf(&b, "old mode %s\nnew mode %s\n", om, nm)
			}
		}
		if !bytes.Equal(oldData, newData) {
			from, to := "a/"+p, "b/"+p
			if c.Kind == "added" {
				from = "/dev/null"
			}
			if c.Kind == "deleted" {
				to = "/dev/null"
			}
			fmt.Fprintf(&b, "--- %s\n+++ %s\n", from, to)
			writeHunks(&b, splitLines(oldData), splitLines(newData), &work)
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return skipped, err
		}
	}
	return skipped, nil
}

// splitLines keeps each line's newline, so the last line's lack of one is
// visible.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func writeLine(b *bytes.Buffer, mark byte, line string) {
	b.WriteByte(mark)
	b.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		b.WriteString("\n\\ No newline at end of file\n")
	}
}

// diffContext is the lines of context around each hunk.
const diffContext = 3

// maxDiffWork bounds what difflib's matching may cost in one patch, in
// steps of its inner loop as matchWork counts them. Its matcher is
// quadratic in the lines, and worse where lines repeat: a job that wrote
// a line after each of a 36,000-line file's had one delete spend eighteen
// minutes of the host's CPU on it, and one that interleaved new lines
// with a file of lines repeated just under difflib's "popular" cut 15 s
// while its stretch's lines multiplied to less than a tenth of this. So
// lines found once on each side, in the same order, are matched first
// (as patience diff does, in about linear time), and difflib matches only
// the stretches between them; a stretch past what is left of this is
// shown as replaced whole, which applies all the same. A step is some
// 16 ns here: this much is about a second.
const maxDiffWork = 1 << 26

// writeHunks writes unified hunks with diffContext lines of context,
// taking what matching costs from work.
func writeHunks(b *bytes.Buffer, a, c []string, work *int) {
	for _, g := range groupOpCodes(opCodes(a, c, work), diffContext) {
		first, last := g[0], g[len(g)-1]
		fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(first.I1, last.I2-first.I1), hunkRange(first.J1, last.J2-first.J1))
		for _, op := range g {
			switch op.Tag {
			case 'e':
				for _, l := range a[op.I1:op.I2] {
					writeLine(b, ' ', l)
				}
			default:
				for _, l := range a[op.I1:op.I2] {
					writeLine(b, '-', l)
				}
				for _, l := range c[op.J1:op.J2] {
					writeLine(b, '+', l)
				}
			}
		}
	}
}

// opCodes turns a into c: the lines each side has once, in an order both
// keep (the longest such run), are equal; difflib matches what lies
// between them while work lasts.
func opCodes(a, c []string, work *int) []difflib.OpCode {
	var codes []difflib.OpCode
	add := func(op difflib.OpCode) {
		if op.I1 == op.I2 && op.J1 == op.J2 {
			return
		}
		if n := len(codes); n > 0 && op.Tag == 'e' && codes[n-1].Tag == 'e' {
			codes[n-1].I2, codes[n-1].J2 = op.I2, op.J2
			return
		}
		codes = append(codes, op)
	}
	i, j := 0, 0
	stretch := func(i2, j2 int) {
		switch cost := matchWork(a[i:i2], c[j:j2]); {
		case i == i2 && j == j2:
		case i == i2:
			add(difflib.OpCode{Tag: 'i', I1: i, I2: i, J1: j, J2: j2})
		case j == j2:
			add(difflib.OpCode{Tag: 'd', I1: i, I2: i2, J1: j, J2: j})
		case cost <= *work:
			*work -= cost
			for _, op := range difflib.NewMatcher(a[i:i2], c[j:j2]).GetOpCodes() {
				add(difflib.OpCode{Tag: op.Tag, I1: i + op.I1, I2: i + op.I2, J1: j + op.J1, J2: j + op.J2})
			}
		default:
			add(difflib.OpCode{Tag: 'r', I1: i, I2: i2, J1: j, J2: j2})
		}
	}
	for _, anchor := range uniqueAnchors(a, c) {
		stretch(anchor[0], anchor[1])
		add(difflib.OpCode{Tag: 'e', I1: anchor[0], I2: anchor[0] + 1, J1: anchor[1], J2: anchor[1] + 1})
		i, j = anchor[0]+1, anchor[1]+1
	}
	stretch(len(a), len(c))
	return codes
}

// matchWork bounds the steps difflib's matcher takes to turn a into b.
// Each search for the longest match in a range (findLongestMatch) visits
// every line of a's range and, for each, every place its line has in b
// up to the range's end: at most w, the places of all of a's lines in b,
// plus a's lines. A search that finds a match searches the two ranges
// beside it, so there are at most 2m+1 searches for m matches, and no
// more matches than a's lines, b's or the places w. Lines difflib drops
// as popular (in more than one in a hundred of b's lines, for a b of 200
// or more) have no places.
func matchWork(a, b []string) int {
	count := make(map[string]int, len(b))
	for _, l := range b {
		count[l]++
	}
	popular := len(b)/100 + 1
	w := 0
	for _, l := range a {
		if n := count[l]; len(b) < 200 || n <= popular {
			w += n
		}
	}
	searches := 2*min(len(a), len(b), w) + 1
	if searches > math.MaxInt/(w+len(a)+1) {
		return math.MaxInt
	}
	return searches * (w + len(a))
}

// uniqueAnchors are the pairs (i, j) with a[i] == c[j] a line each side has
// once, the longest run of them that rises on both sides (patience
// sorting: n log n).
func uniqueAnchors(a, c []string) [][2]int {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	inC := map[string]int{}
	for j, l := range c {
		if count[l] == 1 {
			if _, seen := inC[l]; seen {
				inC[l] = -1
			} else {
				inC[l] = j
			}
		}
	}
	var pairs [][2]int
	for i, l := range a {
		if j, ok := inC[l]; ok && j >= 0 && count[l] == 1 {
			pairs = append(pairs, [2]int{i, j})
		}
	}
	// tops[k] is the pair ending the best run of length k+1 found so far
	// (the one with the smallest j); prev links each pair to the one
	// before it in its run.
	var tops []int
	prev := make([]int, len(pairs))
	for p, pair := range pairs {
		k := sort.Search(len(tops), func(k int) bool { return pairs[tops[k]][1] >= pair[1] })
		prev[p] = -1
		if k > 0 {
			prev[p] = tops[k-1]
		}
		if k == len(tops) {
			tops = append(tops, p)
		} else {
			tops[k] = p
		}
	}
	run := make([][2]int, len(tops))
	for k, p := len(tops)-1, -1; k >= 0; k-- {
		if p == -1 {
			p = tops[k]
		} else {
			p = prev[p]
		}
		run[k] = pairs[p]
	}
	return run
}

// groupOpCodes cuts the operations into hunks with n lines of context,
// as difflib's GetGroupedOpCodes does for its own.
func groupOpCodes(codes []difflib.OpCode, n int) [][]difflib.OpCode {
	if len(codes) == 0 {
		return nil
	}
	if c := &codes[0]; c.Tag == 'e' {
		c.I1, c.J1 = max(c.I1, c.I2-n), max(c.J1, c.J2-n)
	}
	if c := &codes[len(codes)-1]; c.Tag == 'e' {
		c.I2, c.J2 = min(c.I2, c.I1+n), min(c.J2, c.J1+n)
	}
	var groups [][]difflib.OpCode
	var group []difflib.OpCode
	for _, c := range codes {
		if c.Tag == 'e' && c.I2-c.I1 > 2*n {
			group = append(group, difflib.OpCode{Tag: 'e', I1: c.I1, I2: min(c.I2, c.I1+n), J1: c.J1, J2: min(c.J2, c.J1+n)})
			groups = append(groups, group)
			group = nil
			c.I1, c.J1 = max(c.I1, c.I2-n), max(c.J1, c.J2-n)
		}
		group = append(group, c)
	}
	if len(group) > 0 && !(len(group) == 1 && group[0].Tag == 'e') {
		groups = append(groups, group)
	}
	return groups
}
