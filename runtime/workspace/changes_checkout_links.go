package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// A tar is extracted into the reviewer's checkout, and an extractor that
// follows links there (Python's tarfile makes a directory over a link and
// opens a file through it) writes where the checkout's link points,
// outside the checkout. The checkout's links are the job's to choose (a
// fork's commit). So every name a tar writes, entries and the tar's own
// whiteouts and opaque markers alike, is judged against the links of the
// checkout it lands in, and judged as the reviewer's filesystem finds
// names (nameKey): on macOS an entry "Docs/x" lands in the checkout's
// "docs". A file with other hard links counts as a link: written in place,
// it changes them all. A symlink entry is the one thing that may stand on
// a link: extractors remove a link before they make one; and the links
// any format holds lead only to new places (linkOut), so no later tar
// writes through them to the checkout's.
//
// The checkout is judged as the layer saw it (its pin, while the container
// lives; at the keep, for kept changes) and as it is at the path the caller
// named when the tar is made: a fork's next commit, or a fresh clone at the
// same path, may have put a link where the layer saw none.

// checkoutLinkReason says why an entry standing where the checkout has a
// symlink never goes into a tar, whatever replaced the link. A patch
// carries the change: git apply deletes the link first.
const checkoutLinkReason = "stands where the checkout has a symlink, through which an extractor that follows links (Python's tarfile) would write outside the checkout; never in a tar: the patch carries it (git apply replaces the link)"

// checkoutSharedReason says why an entry standing where the checkout has
// a file with other hard links never goes into a tar. pnpm and uv link the
// files they install to their stores, which other projects share, and an
// extractor that writes a file in place (Python's tarfile opens it for
// writing, then makes it the header's owner's) changes the store's file
// and every project's. git apply deletes the file and makes a new one.
const checkoutSharedReason = "stands where the checkout has a file with other hard links (a package store's), which an extractor that writes in place (Python's tarfile) would change through every link; never in a tar: the patch carries it (git apply replaces the file)"

// checkoutNodeReason says why an entry standing where the checkout has a
// fifo, socket or device never goes into a tar: an extractor that writes
// a file in place (Python's tarfile, even with its data filter) opens the
// node and writes the job's bytes to whatever reads the fifo or drives
// the device.
const checkoutNodeReason = "stands where the checkout has a fifo, socket or device, into which an extractor that writes in place (Python's tarfile) would write the job's bytes; never in a tar: the patch carries it (git apply replaces the entry)"

// checkoutMarkReason says why the tar's own mark of a deletion (a whiteout
// .wh.<name>, an opaque marker .wh..wh..opq) is left out where the
// checkout has anything of that name but a plain file or a directory.
const checkoutMarkReason = "the tar's mark of a deletion would stand where the checkout has a symlink, a file with other hard links or a node, through which an extractor (Python's tarfile) would empty a file outside the checkout or write to the node; never in a tar: the patch carries the deletion"

// opaqueMarker is the entry an OCI layer marks an opaque directory with.
const opaqueMarker = whiteoutPrefix + whiteoutPrefix + ".opq"

// linkOutWhy ends each reason a symlink whose target could lead out of
// the checkout is left out of every format for. Applied, the link itself
// writes nothing; but a tar extracted after it (another export of the same
// fork, or the same one again), into the checkout the patch or a tar put
// the link in, writes through it, and an extractor that follows links
// takes "conf.txt" or "dir/x" where the link points.
const linkOutWhy = ": a tar extracted after it by an extractor that follows links (Python's tarfile) would write through it outside the checkout, into .git or below what the checkout holds; never exported"

// Why linkOut judged a symlink, each ended by linkOutWhy.
const (
	linkEmpty       = "a symlink with an empty target"
	linkAbsolute    = "a symlink whose target is absolute"
	linkOverDir     = "a symlink where the checkout has a directory"
	linkClimbsBack  = "a symlink that climbs after it descended (a/../x)"
	linkClimbsOut   = "a symlink that climbs above the checkout, or from a directory the checkout does not hold as one (another export's link there would move it)"
	linkThroughMeta = "a symlink through .git, a HEAD, objects or refs, or a name Windows reads as another"
	linkThroughLink = "a symlink through a symlink of the checkout"
	linkIntoRepo    = "a symlink into a repository"
	linkToOwnDir    = "a symlink to its own directory or one above it (.)"
	linkToLoaded    = "a symlink to a directory of the checkout holding a link, a file with other hard links, a node, a .git or a repository (or more than 10,000 entries)"
	linkToOther     = "a symlink to a symlink, a file with other hard links or a node of the checkout"
)

// checkoutDir is what the checkouts hold where one directory of the tar
// lands: every directory, in each checkout the tar is judged against, whose
// path has the same keys. A nil checkoutDir knows of no checkout.
type checkoutDir struct {
	parent *checkoutDir
	links  map[string]bool         // keys of the symlinks there
	shared map[string]bool         // keys of the files with other hard links there
	dirs   map[string][]place      // each key's directories there
	kids   map[string]*checkoutDir // below's, by key
	gitDir map[string]bool         // gitMarks there
	held   map[string]bool         // keys of every entry there
	// notPlain: keys of the entries there that are no regular file
	// with a single link; odd: of those that are no file, directory or
	// link (fifos, sockets, devices).
	notPlain, odd map[string]bool
	// judged, isClean and count: what clean found once asked, and the
	// entries it counted there and below.
	judged, isClean bool
	count           int
	// real: every directory from the top to here is one every checkout
	// judged holds as a directory (no export can make it a link:
	// linkOut); layers: how many checkouts are judged.
	real   bool
	layers int
	// unsure: a directory there could not be read, so every name counts
	// as standing on a link.
	unsure bool
}

// place is a directory of one checkout.
type place struct {
	low *layer
	rel string
}

// checkoutRoot is the top directory of the checkouts lows (nil ones
// skipped); none gives nil.
func checkoutRoot(lows ...*layer) *checkoutDir {
	var c *checkoutDir
	for _, low := range lows {
		if low != nil {
			if c == nil {
				c = &checkoutDir{real: true}
			}
			c.layers++
			c.read(place{low, ""})
		}
	}
	return c
}

// below is where the tar's directory name, inside c's, lands. Each is
// read once: link targets pass through the same directories again and
// again, and a checkout directory of 20,000 files read for each of 2,000
// links held a delete's keep for minutes.
func (c *checkoutDir) below(name string) *checkoutDir {
	if c == nil {
		return nil
	}
	k := nameKey(name)
	if d, ok := c.kids[k]; ok {
		return d
	}
	d := &checkoutDir{parent: c, unsure: c.unsure, real: c.real && c.everyHoldsDir(name), layers: c.layers}
	for _, p := range c.dirs[k] {
		d.read(p)
	}
	if c.kids == nil {
		c.kids = map[string]*checkoutDir{}
	}
	c.kids[k] = d
	return d
}

// at is where the tar's directory rel ("." for the top) lands below c.
func (c *checkoutDir) at(rel string) *checkoutDir {
	d := c
	for _, part := range strings.Split(rel, "/") {
		if part != "." && part != "" {
			d = d.below(part)
		}
	}
	return d
}

// hasLink tells whether a name the tar writes in c's directory stands
// where a checkout has a symlink.
func (c *checkoutDir) hasLink(name string) bool {
	if c == nil {
		return false
	}
	return c.unsure || c.links[nameKey(name)]
}

// entryReason says why an entry (anything but a symlink) the tar writes in
// c's directory as name may not be written there, or "". read sorts every
// entry of a checkout into links, shared files, nodes (odd), plain files
// and directories, so an entry may land only on nothing, a plain file
// (which an extractor writes in place or replaces) or a directory (which
// it enters or refuses); an entry c cannot judge stands on a link.
func (c *checkoutDir) entryReason(name string) string {
	switch {
	case c.hasLink(name):
		return checkoutLinkReason
	case c != nil && c.shared[nameKey(name)]:
		return checkoutSharedReason
	case c != nil && c.odd[nameKey(name)]:
		return checkoutNodeReason
	}
	return ""
}

// markReason is entryReason for the tar's own marks of a deletion.
func (c *checkoutDir) markReason(name string) string {
	if c.entryReason(name) != "" {
		return checkoutMarkReason
	}
	return ""
}

// repoWith tells whether git may take the directory c lands in for a
// repository once entries with the job's marks (gitMarks) are there
// (repoShape), or c cannot say.
func (c *checkoutDir) repoWith(job map[string]bool) bool {
	if c == nil {
		return repoShape(job, nil)
	}
	return c.unsure || repoShape(job, c.gitDir)
}

// halfReason says why an entry the job writes in c's directory as name is
// half of a repository's common directory, the checkout holding no entry
// of its key there (repoHalfReason), or "".
func (c *checkoutDir) halfReason(name string) string {
	k := nameKey(name)
	if k != "objects" && k != "refs" || c != nil && (c.unsure || c.gitDir[k]) {
		return ""
	}
	return repoHalfReason
}

// linkOut is why a symlink any format holds in c's directory rel as
// name, pointing at target, could lead anywhere but a new place, ended by
// linkOutWhy, or "" when it cannot:
// one the checkout does not hold, reached through none of its links or
// repositories. A tar extracted after the link (another export of the
// same fork) writes where the link points, judged only where the link
// stands: through "l -> ." or "l -> src" it would write below the
// checkout's own directories, through their links, into the pnpm store
// a hard-linked file shares, or into a common directory's hooks
// ("l -> fixture/hooks"). A name Windows reads as another (LONGLI~1,
// a\..\..) or a .git counts as leading out.
//
// Where a link stands is sure only in directories the checkout holds: a
// directory the job made may be another export's link once exports are
// applied, so that "a/b/m/l -> ../../../x", judged from a/b/m, climbs
// from wherever a/b/m leads (another export's a/b/m -> ../../docs) and
// out of the checkout. So a link climbs ("..") only from a directory the
// checkout holds as one, and never further than its depth, and no link
// stands where the checkout holds a directory (which it would make
// another place). A link that descends only (pnpm's node_modules/foo ->
// .pnpm/foo@1/node_modules/foo) passes wherever it stands.
func (c *checkoutDir) linkOut(rel, name, target string) string {
	if why := c.linkOutKind(rel, name, target); why != "" {
		return why + linkOutWhy
	}
	return ""
}

func (c *checkoutDir) linkOutKind(rel, name, target string) string {
	switch {
	case target == "":
		return linkEmpty
	case path.IsAbs(target):
		return linkAbsolute
	case c.holdsDir(name):
		return linkOverDir
	}
	depth := 0
	if rel != "" && c != nil && c.real {
		depth = strings.Count(rel, "/") + 1
	}
	descended := false
	d, last := c, ""
	for _, part := range strings.Split(target, "/") {
		switch part {
		case "", ".":
		case "..":
			if descended {
				return linkClimbsBack
			}
			if depth == 0 {
				return linkClimbsOut
			}
			depth--
			if d != nil {
				d = d.parent
			}
		default:
			if last != "" {
				d = d.below(last)
			}
			// A HEAD, objects or refs written through the link would make
			// a directory a repository no entry's name showed.
			switch {
			case isRepoMeta(part) || windowsName(part) || windowsAlias(nameKey(part)) || isGitMark(part):
				return linkThroughMeta
			case d.hasLink(part):
				return linkThroughLink
			case d != nil && d.repoWith(nil):
				return linkIntoRepo
			}
			descended, last = true, part
		}
	}
	// The place itself: the link's own directory or an ancestor (l -> .)
	// is the checkout's, with all the checkout holds. A file of its own
	// is no more than the name: written through the link, it is written
	// as a tar writes it there. So is a directory of its own below which
	// the checkout holds nothing a write could pass its judgement through
	// (npm's node_modules/@mono/util -> ../../packages/util).
	switch {
	case !descended:
		return linkToOwnDir
	case d != nil && d.repoWith(nil):
		return linkIntoRepo
	case !d.holds(last), d.plainFile(last):
		return ""
	case d.plainDir(last):
		if !d.below(last).clean() {
			return linkToLoaded
		}
		return ""
	}
	return linkToOther
}

// holdsDir tells whether a checkout has a directory of name's key in c's
// directory, or c cannot say.
func (c *checkoutDir) holdsDir(name string) bool {
	return c != nil && (c.unsure || len(c.dirs[nameKey(name)]) > 0)
}

// everyHoldsDir tells whether every checkout judged has a directory of
// name's key in c's directory, and none has anything else of it: a
// directory the pinned checkout holds and the one at the named path does
// not (a fresh clone of the next commit) is the job's to make a link in
// another export.
func (c *checkoutDir) everyHoldsDir(name string) bool {
	if !c.plainDir(name) {
		return false
	}
	seen := map[*layer]bool{}
	for _, p := range c.dirs[nameKey(name)] {
		seen[p.low] = true
	}
	return len(seen) == c.layers
}

// plainDir tells whether every entry of name's key the checkouts have in
// c's directory is a directory.
func (c *checkoutDir) plainDir(name string) bool {
	k := nameKey(name)
	return c != nil && !c.unsure && len(c.dirs[k]) > 0 && !c.links[k] && !c.shared[k] && !c.odd[k]
}

// cleanLimit bounds the entries a checkout directory may hold, itself and
// below, for a link to it to pass: judging a larger one costs more than a
// link is worth, and it counts as not clean.
const cleanLimit = 10000

// clean tells whether nothing in the checkout directory c or below it is
// what a write through a link to it would reach past the judgement of the
// name it wrote: a link, a file with other hard links, a node that is no
// file or directory, a .git, a directory git may take for a repository.
func (c *checkoutDir) clean() bool {
	n := cleanLimit
	return c.cleanWithin(&n)
}

// cleanWithin is clean with n entries left to count; a directory judged
// before costs what it counted then, so no judgement fits a directory
// within the bound by its parts.
func (c *checkoutDir) cleanWithin(n *int) bool {
	if c == nil {
		return true
	}
	if !c.judged {
		before := *n
		c.judged, c.isClean = true, c.cleanHere(n)
		c.count = before - *n
		return c.isClean
	}
	*n -= c.count
	return c.isClean && *n >= 0
}

func (c *checkoutDir) cleanHere(n *int) bool {
	*n -= len(c.held)
	if *n < 0 || c.unsure || len(c.links) > 0 || len(c.shared) > 0 || len(c.odd) > 0 || c.repoWith(nil) {
		return false
	}
	for k := range c.held {
		if isRepoMeta(k) {
			return false
		}
	}
	for k := range c.dirs {
		if !c.below(k).cleanWithin(n) {
			return false
		}
	}
	return *n >= 0
}

// addKey adds k to set, made when nil.
func addKey(set map[string]bool, k string) map[string]bool {
	if set == nil {
		set = map[string]bool{}
	}
	set[k] = true
	return set
}

// holds tells whether a checkout has an entry of name's key in c's
// directory, or c cannot say.
func (c *checkoutDir) holds(name string) bool {
	return c != nil && (c.unsure || c.held[nameKey(name)])
}

// plainFile tells whether every entry of name's key the checkouts have in
// c's directory is a regular file with no other hard link.
func (c *checkoutDir) plainFile(name string) bool {
	k := nameKey(name)
	return c != nil && !c.unsure && c.held[k] && !c.notPlain[k]
}

// read adds the checkout directory p. A directory that is not there (the
// job made it) adds nothing; one that cannot be read makes c unsure.
func (c *checkoutDir) read(p place) {
	d, err := p.low.open(p.rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		c.unsure = c.unsure || !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR)
		return
	}
	defer d.Close()
	for {
		batch, err := d.ReadDir(1024)
		for _, e := range batch {
			k := nameKey(e.Name())
			c.held = addKey(c.held, k)
			if !e.Type().IsRegular() {
				c.notPlain = addKey(c.notPlain, k)
			}
			for m := range gitMarks([]string{e.Name()}, func(string) bool { return e.IsDir() }) {
				c.gitDir = addKey(c.gitDir, m)
			}
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				c.links = addKey(c.links, k)
			case e.Type().IsRegular():
				var st unix.Stat_t
				if err := unix.Fstatat(int(d.Fd()), e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					c.unsure = true
				} else if st.Nlink > 1 {
					c.shared = addKey(c.shared, k)
					c.notPlain = addKey(c.notPlain, k)
				}
			case !e.IsDir():
				c.odd = addKey(c.odd, k)
			default:
				if c.dirs == nil {
					c.dirs = map[string][]place{}
				}
				c.dirs[k] = append(c.dirs[k], place{p.low, join(p.rel, e.Name())})
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

// openCheckout opens the checkout at named as it is now; a path that is
// gone (or "") gives nil: there is nothing there to write through, unless
// a directory above it is a repository. named
// had no symlink on it when the container was made (its source resolved):
// one on it now (the fork's next commit turned a directory above the
// workspace into a link to .git) makes the path another directory than
// the one the tar was made for, and a path through a .git, or below a
// directory holding a HEAD, is a repository's own; none is judged, the
// tar is refused.
func openCheckout(named string) (*layer, error) {
	if named == "" {
		return nil, nil
	}
	if slices.ContainsFunc(strings.Split(named, "/"), isRepoMeta) {
		return nil, fmt.Errorf("the checkout %s lies in a repository's .git: no export of changes to it", escape.Text(named))
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, named, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("the path of the checkout %s passes through a symlink now, so it is not the directory the changes were made in: no export of them", escape.Text(named))
	case err != nil && !errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("the checkout %s, which an export is judged against, cannot be read: %w", escape.Text(named), err)
	case err != nil:
		fd = -1
	}
	// git takes a directory holding a HEAD for a repository, looking in
	// every directory above where it runs: below one (the fork's next
	// commit made the directory above the workspace a bare repository),
	// the changes are that repository's hooks and config, whether the
	// workspace's directory is there or an extractor makes it again.
	for dir := path.Dir(named); ; dir = path.Dir(dir) {
		var found []string
		for _, n := range gitDirNames {
			if _, err := os.Lstat(path.Join(dir, n)); err == nil {
				found = append(found, n)
			}
		}
		if repoShape(nil, gitMarks(found, func(n string) bool {
			st, err := os.Lstat(path.Join(dir, n))
			return err == nil && st.IsDir()
		})) {
			if fd >= 0 {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("the checkout %s lies below %s, which git may take for a repository (a HEAD, or objects and refs): no export of changes to it", escape.Text(named), escape.Text(dir))
		}
		if dir == "/" || dir == "." {
			break
		}
	}
	if fd < 0 {
		return nil, nil // gone
	}
	return &layer{root: os.NewFile(uintptr(fd), named)}, nil
}
