package workspace

import (
	"errors"
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// A tar is extracted into the reviewer's checkout, and an extractor that
// follows links there (Python's tarfile makes a directory over a link and
// opens a file through it) writes where the checkout's link points,
// outside the checkout. The checkout's links are the job's to choose (a
// fork's commit). So every name a tar writes, entries and the tar's own
// whiteouts and opaque markers alike, is judged against the links of the
// checkout it lands in, and judged as the reviewer's filesystem finds
// names (nameKey): on macOS an entry "Docs/x" lands in the checkout's
// "docs". A symlink entry is the one thing that may stand on a link:
// extractors remove a link before they make one.

// checkoutLinkReason says why an entry standing where the checkout has a
// symlink never goes into a tar, whatever replaced the link. A patch
// carries the change: git apply deletes the link first.
const checkoutLinkReason = "stands where the checkout has a symlink, through which an extractor that follows links (Python's tarfile) would write outside the checkout; never in a tar: the patch carries it (git apply replaces the link)"

// checkoutMarkReason says why the tar's own mark of a deletion (a whiteout
// .wh.<name>, an opaque marker .wh..wh..opq) is left out where the
// checkout has a symlink of that name.
const checkoutMarkReason = "the tar's mark of a deletion would stand where the checkout has a symlink, through which an extractor that follows links (Python's tarfile) would empty a file outside the checkout; never in a tar: the patch carries the deletion"

// opaqueMarker is the entry an OCI layer marks an opaque directory with.
const opaqueMarker = whiteoutPrefix + whiteoutPrefix + ".opq"

// checkoutDir is what the checkout holds where one directory of the tar
// lands: every directory of the lower layer whose path has the same keys.
// A nil checkoutDir knows of no checkout (none, or not known).
type checkoutDir struct {
	low   *layer
	links map[string]bool     // keys of the symlinks there
	dirs  map[string][]string // each key's directories there
	// unsure: a directory there could not be read, so every name counts
	// as standing on a link.
	unsure bool
}

// checkoutRoot is the checkout's top directory; low nil gives nil.
func checkoutRoot(low *layer) *checkoutDir {
	if low == nil {
		return nil
	}
	c := &checkoutDir{low: low}
	c.read("")
	return c
}

// below is where the tar's directory name, inside c's, lands.
func (c *checkoutDir) below(name string) *checkoutDir {
	if c == nil {
		return nil
	}
	d := &checkoutDir{low: c.low, unsure: c.unsure}
	for _, rel := range c.dirs[nameKey(name)] {
		d.read(rel)
	}
	return d
}

// hasLink tells whether a name the tar writes in c's directory stands
// where the checkout has a symlink.
func (c *checkoutDir) hasLink(name string) bool {
	if c == nil {
		return false
	}
	return c.unsure || c.links[nameKey(name)]
}

// read adds the lower directory rel. A directory that is not there (the
// job made it) adds nothing; one that cannot be read makes c unsure.
func (c *checkoutDir) read(rel string) {
	d, err := c.low.open(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		c.unsure = c.unsure || !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR)
		return
	}
	defer d.Close()
	for {
		batch, err := d.ReadDir(1024)
		for _, e := range batch {
			switch k := nameKey(e.Name()); {
			case e.Type()&fs.ModeSymlink != 0:
				if c.links == nil {
					c.links = map[string]bool{}
				}
				c.links[k] = true
			case e.IsDir():
				if c.dirs == nil {
					c.dirs = map[string][]string{}
				}
				c.dirs[k] = append(c.dirs[k], join(rel, e.Name()))
			}
		}
		if err == io.EOF || len(batch) == 0 {
			return
		}
		if err != nil {
			c.unsure = true
			return
		}
	}
}
