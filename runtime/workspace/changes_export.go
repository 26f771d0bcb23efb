package workspace

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// layerSet is one workspace's pair of layers, as export reads them.
type layerSet struct {
	Destination string `json:"destination"`
	Source      string `json:"source"`
	Upper       string `json:"-"`
	Lower       string `json:"-"`
	// Prefix goes before every path: "" for a single workspace (so the
	// patch applies in a checkout of the source), the destination's name
	// when a container has several.
	Prefix string `json:"-"`
	// Shift is the workspace's id map: whom the sandbox saw as owner of
	// each lower file, so the patch never shows content it could not read.
	Shift *idShift `json:"-"`
	// judged says that the upper layer is a kept copy whose files were
	// judged against the sandbox user when they were copied (as root's,
	// which they are now, they would all look unreadable).
	judged bool
}

// ChangeReport is the json form of export and diff.
type ChangeReport struct {
	Workspaces []workspaceChanges `json:"workspaces"`
	// Rejected lists what export leaves out and why.
	Rejected []string `json:"rejected,omitempty"`
}

type workspaceChanges struct {
	layerSet
	Changes []Change `json:"changes"`
}

// rejectLine is how a left-out path is named on stderr and in json: the
// path and the reason (which may quote sandbox text) escaped.
func rejectLine(path, reason string) string {
	return escape.Text(path) + ": " + escape.Text(reason)
}

func checkFormat(format string) error {
	switch format {
	case "patch", "json", "tar":
		return nil
	}
	return fmt.Errorf("format %q: want patch, tar or json", format)
}

// exportChanges writes the changes of every layer set in format patch,
// tar or json and returns what it left out. It reads each upper layer
// only beneath its root: no symlink is followed, no host path the sandbox
// named is opened, only regular files are read, device nodes and
// setuid/setgid files never leave, and no more is read than lim allows
// for the whole container.
func exportChanges(w io.Writer, format string, sets []layerSet, lim changeLimits) ([]string, error) {
	if err := checkFormat(format); err != nil {
		return nil, err
	}
	b := newBudget(lim)
	if format == "tar" {
		tw := tar.NewWriter(w)
		held := archiveNames{}
		var rejected []string
		for _, s := range sets {
			r, err := writeLayerTar(tw, s, b, held)
			if err != nil {
				return nil, fmt.Errorf("workspace %s: %w", s.Destination, err)
			}
			rejected = append(rejected, r...)
		}
		return rejected, tw.Close()
	}
	wcs, rejected, err := scanSets(sets, b)
	if err != nil {
		return nil, err
	}
	if format == "json" {
		return rejected, writeReport(w, wcs, rejected)
	}
	return writePatchSets(w, wcs, rejected, b)
}

// scanSets scans every layer set with one budget for the container.
func scanSets(sets []layerSet, b *budget) ([]workspaceChanges, []string, error) {
	var wcs []workspaceChanges
	var rejected []string
	for _, s := range sets {
		named, err := openCheckout(s.Source)
		if err != nil {
			return nil, nil, err
		}
		changes, err := scanChanges(s.Upper, s.Lower, named, b, s.Shift, s.judged)
		if named != nil {
			named.Close()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("workspace %s: %w", s.Destination, err)
		}
		for _, c := range changes {
			if c.Rejected != "" {
				rejected = append(rejected, rejectLine(s.Prefix+c.Path, c.Rejected))
			}
		}
		wcs = append(wcs, workspaceChanges{layerSet: s, Changes: changes})
	}
	return wcs, rejected, nil
}

// writeReport writes the json report with every sandbox-chosen name
// escaped (see escapeText). It is the indented encoding of a
// ChangeReport, written a change at a time: the report of a layer holding
// budget-many long names is never held whole.
func writeReport(w io.Writer, wcs []workspaceChanges, rejected []string) error {
	bw := bufio.NewWriterSize(w, copyBuf)
	write := func(prefix string, v any) error {
		data, err := json.MarshalIndent(v, prefix, "  ")
		if err != nil {
			return err
		}
		_, err = bw.Write(data)
		return err
	}
	bw.WriteString("{\n  \"workspaces\": [")
	for i, wc := range wcs {
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    {\n      \"destination\": ")
		if err := write("      ", wc.Destination); err != nil {
			return err
		}
		bw.WriteString(",\n      \"source\": ")
		if err := write("      ", wc.Source); err != nil {
			return err
		}
		bw.WriteString(",\n      \"changes\": ")
		if wc.Changes == nil {
			bw.WriteString("null\n    }")
			continue
		}
		bw.WriteString("[")
		for j, c := range wc.Changes {
			if j > 0 {
				bw.WriteString(",")
			}
			e := c
			e.Path, e.Target, e.LinkTo = escape.Text(c.Path), escape.Text(c.Target), escape.Text(c.LinkTo)
			e.Escaped = e.Path != c.Path || e.Target != c.Target || e.LinkTo != c.LinkTo
			if c.Rejected != "" {
				e.Rejected = escape.Text(c.Rejected)
			}
			bw.WriteString("\n        ")
			if err := write("        ", e); err != nil {
				return err
			}
		}
		if len(wc.Changes) > 0 {
			bw.WriteString("\n      ")
		}
		bw.WriteString("]\n    }")
	}
	if len(wcs) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]")
	if len(rejected) > 0 {
		bw.WriteString(",\n  \"rejected\": [")
		for i, r := range rejected {
			if i > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n    ")
			if err := write("    ", r); err != nil {
				return err
			}
		}
		bw.WriteString("\n  ]")
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// writePatchSets writes the patch of every scanned layer set; the old
// sides it reads are charged to b, the budget the scan used.
func writePatchSets(w io.Writer, wcs []workspaceChanges, rejected []string, b *budget) ([]string, error) {
	for _, wc := range wcs {
		up, err := openLayer(wc.Upper)
		if err != nil {
			return nil, err
		}
		low, err := openLayer(wc.Lower)
		if err != nil {
			up.Close()
			return nil, err
		}
		skipped, err := writePatch(w, wc.Changes, patchSource{up: up, low: low, reader: wc.Shift, b: b}, wc.Prefix)
		up.Close()
		low.Close()
		if err != nil {
			return nil, err
		}
		seen := make(map[string]bool, len(rejected))
		for _, r := range rejected {
			seen[r] = true
		}
		for _, sk := range skipped {
			if !seen[sk] {
				seen[sk] = true
				rejected = append(rejected, sk)
			}
		}
	}
	return rejected, nil
}

// writeLayerTar writes the upper layer in the OCI layer format: a deleted
// path is an empty file .wh.<name>, an opaque directory holds .wh..wh..opq.
// Those two are the only .wh. names it writes: an entry the sandbox named
// .wh.* is left out, with everything below it. No name it writes but a
// symlink's stands where the checkout has a symlink (checkoutDir). A hard
// link's later names are tar hard links to its first, so its content is
// written once. It returns what it left out.
func writeLayerTar(tw *tar.Writer, s layerSet, b *budget, held archiveNames) ([]string, error) {
	up, err := openLayer(s.Upper)
	if err != nil {
		return nil, err
	}
	defer up.Close()
	var low *layer
	if s.Lower != "" {
		if low, err = openLayer(s.Lower); err != nil {
			return nil, err
		}
		defer low.Close()
	}
	named, err := openCheckout(s.Source)
	if err != nil {
		return nil, err
	}
	if named != nil {
		defer named.Close()
	}
	var rejected []string
	links := map[inode]string{}
	reject := func(p, why string) { rejected = append(rejected, rejectLine(s.Prefix+p, why)) }
	var walk func(rel string, lk *look, depth int, cd *checkoutDir) error
	walk = func(rel string, lk *look, depth int, cd *checkoutDir) error {
		if rel != "" && up.opaque(rel) {
			marker := join(rel, opaqueMarker)
			hdr := &tar.Header{Name: s.Prefix + marker, Typeflag: tar.TypeReg, Mode: 0o600, ModTime: time.Unix(0, 0)}
			if why := cd.markReason(opaqueMarker); why != "" {
				reject(marker, why)
			} else if err := held.writeHeader(tw, hdr, func(why string) { reject(rel, why) }); err != nil {
				return err
			}
		}
		for _, n := range lk.names {
			p := join(rel, n)
			if err := b.entry(p, depth); err != nil {
				return err
			}
			st := lk.stats[n]
			// Owners are no part of a change, and nobody but the
			// reviewer may write what the job wrote: extracted as root,
			// a header with the sandbox's uid (65534) or a 0777 mode
			// would leave files and directories in the checkout that any
			// process running as nobody, or any user, could change
			// before the reviewer runs them.
			hdr := &tar.Header{Name: s.Prefix + p, Mode: int64(st.Mode & tarModeMask),
				ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)}
			if isRepoMeta(n) {
				reject(p, repoMetaReason)
				continue
			}
			if isWhiteout(st) {
				if strings.HasPrefix(n, whiteoutPrefix) {
					reject(p, whiteoutNameReason)
					continue
				}
				if why := cd.markReason(whiteoutPrefix + n); why != "" {
					reject(join(rel, whiteoutPrefix+n), why)
					continue
				}
				hdr.Name = s.Prefix + join(rel, whiteoutPrefix+n)
				hdr.Typeflag, hdr.Mode = tar.TypeReg, 0o600
				if err := held.writeHeader(tw, hdr, func(why string) { reject(p, why) }); err != nil {
					return err
				}
				continue
			}
			if strings.HasPrefix(n, whiteoutPrefix) {
				reject(p, whiteoutNameReason)
				continue
			}
			if why := cd.halfReason(n); why != "" {
				reject(p, why)
				continue
			}
			if why := kindReason(st); why != "" {
				reject(p, why)
				continue
			}
			// A symlink entry replaces the checkout's link: extractors
			// remove a link before they make one.
			if why := cd.entryReason(n); why != "" && st.Mode&unix.S_IFMT != unix.S_IFLNK {
				reject(p, why)
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				below, err := up.look(p, b)
				if err != nil {
					return err
				}
				sub := cd.below(n)
				if sub.repoWith(below.marks()) {
					reject(p, repoDirReason)
					continue
				}
				hdr.Name += "/"
				hdr.Typeflag = tar.TypeDir
				if err := held.writeHeader(tw, hdr, func(why string) { reject(p, why) }); err != nil {
					return err
				}
				if hdr.Typeflag == 0 {
					continue // left out, and so is everything below it
				}
				if err := walk(p, below, depth+1, sub); err != nil {
					return err
				}
			case unix.S_IFLNK:
				t, err := up.readlink(p)
				if err != nil {
					return err
				}
				if why := cd.linkOut(rel, n, t); why != "" {
					reject(p, why)
					continue
				}
				hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, t
				if err := held.writeHeader(tw, hdr, func(why string) { reject(p, why) }); err != nil {
					return err
				}
			default: // a regular file: kindReason left out every other kind
				if !s.judged && !up.upperFileReadable(p, st, s.Shift) {
					reject(p, unreadableReason)
					continue
				}
				key := inode{st.Dev, st.Ino}
				if first, ok := links[key]; ok && st.Nlink > 1 {
					hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeLink, s.Prefix+first, 0
					if err := held.writeHeader(tw, hdr, func(why string) { reject(p, why) }); err != nil {
						return err
					}
					continue
				}
				if why := b.read(st.Size); why != "" {
					reject(p, why)
					continue
				}
				f, fst, err := up.openRegular(p, st)
				if err != nil {
					reject(p, "unreadable: "+err.Error())
					continue
				}
				hdr.Typeflag, hdr.Size = tar.TypeReg, fst.Size
				var werr error
				if werr = held.writeHeader(tw, hdr, func(why string) { reject(p, why) }); werr == nil && hdr.Typeflag != 0 {
					// The tar needs exactly Size bytes: a file that shrank
					// meanwhile is padded with zeros.
					cw := &countWriter{w: tw}
					if werr = streamContent(cw, f, fst.Size); werr == nil && cw.n < fst.Size {
						_, werr = tw.Write(make([]byte, fst.Size-cw.n))
					}
					if st.Nlink > 1 {
						links[key] = p
					}
				}
				f.Close()
				if werr != nil {
					return werr
				}
			}
		}
		return nil
	}
	top, err := up.look("", b)
	if err != nil {
		return nil, err
	}
	root := checkoutRoot(low, named)
	if root.repoWith(top.marks()) {
		reject(".", repoDirReason)
		return rejected, nil
	}
	return rejected, walk("", top, 1, root)
}

// tarModeMask is what the tar keeps of a mode: no write for group or
// others, no setuid, setgid or sticky bit.
const tarModeMask = 0o755

// archiveNames are the names one tar holds, as the filesystems a reviewer
// may extract it on compare them (pathKeys), each marked whether it is a
// directory. A symlink the archive holds must never stand above an entry
// it adds later, from the same workspace or another: an extractor that
// follows it (Python's tarfile, a plain Go loop) would write that entry
// where the link points, on the host, and on macOS or Windows a link
// "Foo" stands above "foo/x". So an entry below a name the archive already
// holds as anything but a directory, or a name it already holds, is left
// out.
type archiveNames map[string]bool

func (a archiveNames) writeHeader(tw *tar.Writer, hdr *tar.Header, reject func(string)) error {
	name := strings.TrimSuffix(hdr.Name, "/")
	keys := pathKeys(name)
	if windowsName(name) || slices.ContainsFunc(keys, windowsAlias) {
		reject(windowsAliasReason)
		hdr.Typeflag = 0
		return nil
	}
	key := strings.Join(keys, "/")
	if isDir, ok := a[key]; ok && !(isDir && hdr.Typeflag == tar.TypeDir) {
		reject("the archive already holds this name or one a case-insensitive filesystem takes for it")
		hdr.Typeflag = 0
		return nil
	}
	for dir, dkey := path.Dir(name), path.Dir(key); dir != "." && dir != "/"; dir, dkey = path.Dir(dir), path.Dir(dkey) {
		if isDir, ok := a[dkey]; ok && !isDir {
			reject("below " + dir + ", which the archive holds as a link or a file (or a name a case-insensitive filesystem takes for it)")
			hdr.Typeflag = 0
			return nil
		}
	}
	if err := writeHeader(tw, hdr, reject); err != nil || hdr.Typeflag == 0 {
		return err
	}
	a[key] = hdr.Typeflag == tar.TypeDir
	return nil
}

// writeHeader writes hdr, or leaves the entry out (and says why, clearing
// hdr.Typeflag) when no tar format can carry it.
func writeHeader(tw *tar.Writer, hdr *tar.Header, reject func(string)) error {
	err := tw.WriteHeader(hdr)
	if err == nil {
		return nil
	}
	if strings.HasPrefix(err.Error(), "archive/tar: cannot encode header") {
		reject("no tar format can carry this entry: " + err.Error())
		hdr.Typeflag = 0
		return nil
	}
	return err
}

// countWriter counts what passes through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
