package workspace

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"golang.org/x/sys/unix"
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
	return needsEscape(p) || strings.ContainsAny(p, "\"\\") || strings.HasPrefix(p, " ") || strings.HasSuffix(p, " ")
}

// patchSource reads the contents a patch needs: the old side from the
// lower layer, the new side from the upper layer, never following links.
type patchSource struct {
	up, low *layer
	// reader is the sandbox user, as the workspace's id map made it;
	// nil when unknown, and then no old side is shown.
	reader *idShift
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
// would not show as they are (CR, ESC, other controls, bidi controls), a
// change of mode bits alone that git records the same, and rejected
// entries. What the reviewer reads is then exactly what applies.
func writePatch(w io.Writer, changes []Change, ps patchSource, prefix string) (skipped []string, err error) {
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
		if !modeOnly && (!plainText(oldData) || !plainText(newData) || (c.Type == "symlink" && strings.Contains(c.Target, "\n"))) {
			skipped = append(skipped, rejectLine(p, "holds control characters (CR, ESC, ...) or bidi controls that a terminal would not show as they are; use --format tar"))
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
			writeHunks(&b, splitLines(oldData), splitLines(newData))
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

// writeHunks writes unified hunks with three lines of context.
func writeHunks(b *bytes.Buffer, a, c []string) {
	m := difflib.NewMatcher(a, c)
	for _, g := range m.GetGroupedOpCodes(3) {
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
