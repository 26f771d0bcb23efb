package workspace

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/escape"
	"bulkhead.dev/bulkhead/runtime/state"
)

// Retained changes outlive the container (docker run --rm deletes it as
// soon as it exits) in <changes_dir>/<root key>/<id>/, keyed by the
// caller's --root and the id, so that another root's container of the
// same id (another engine, another containerd namespace) never replaces
// them: a copy of each upper layer (whiteouts and opaque markers kept,
// holes kept as holes, a hard link's content once), the patch and json
// computed at delete against the source as it was then, and meta.json,
// written last: an entry without it is a save that never finished, and
// prune removes it. A save builds its entry in a .tmp- directory it holds
// a lease on (keepLease) and renames it into place, so a failed save
// leaves nothing. They are removed by `bulkhead changes prune` once
// changes_retention has passed.
// tarJudgement is what a kept copy judged against the checkout (Kept):
// 1 the entries standing on one of its symlinks by their exact name; 2
// every name the tar writes, whiteouts and opaque markers too, as a
// reviewer's filesystem compares names; 3 also the symlinks whose target
// could lead out of it.
const tarJudgement = 3

type Kept struct {
	ID         string     `json:"id"`
	Root       string     `json:"root"`
	Profile    string     `json:"profile,omitempty"`
	Bundle     string     `json:"bundle,omitempty"`
	Deleted    time.Time  `json:"deleted"`
	Expires    time.Time  `json:"expires"`
	Workspaces []layerSet `json:"workspaces"`
	// JudgedAtCopy says each file was judged against the sandbox user when
	// copied, so the kept tar shows none it could not read.
	JudgedAtCopy bool `json:"judged_at_copy,omitempty"`
	// TarJudgement is how the copy judged what only the lower layer showed
	// must not go into a tar (tarJudgement), each left out and named in
	// CopyLeftOut; the kept tar of an entry judged less is refused.
	TarJudgement int      `json:"tar_judgement,omitempty"`
	CopyLeftOut  []string `json:"copy_left_out,omitempty"`
	Changes      int      `json:"changes"`
	Rejected     []string `json:"rejected,omitempty"`
	// RejectedNotListed and CopyLeftOutNotListed count the lines past
	// what meta.json lists of each (maxListed).
	RejectedNotListed    int `json:"rejected_not_listed,omitempty"`
	CopyLeftOutNotListed int `json:"copy_left_out_not_listed,omitempty"`
	// Bytes is the disk the entry takes, counted against changes_quota.
	Bytes  int64      `json:"bytes"`
	Dir    string     `json:"dir"`
	layers []layerSet // with Upper set, for tar export
}

func changesDir(cfg *Settings) string {
	if cfg.ChangesDir == "" {
		return "/var/lib/bulkhead/changes"
	}
	return cfg.ChangesDir
}

func retention(cfg *Settings) (time.Duration, error) {
	if cfg.ChangesRetention == "" {
		return 24 * time.Hour, nil
	}
	if cfg.ChangesRetention == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(cfg.ChangesRetention)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("changes_retention %q: want a duration such as 24h", cfg.ChangesRetention)
	}
	return d, nil
}

// liveSets are the layer sets of a container's mounted workspaces.
func liveSets(ws []Workspace) []layerSet {
	var sets []layerSet
	for _, w := range ws {
		// The report names the source the caller named; the layer is read
		// through its pin, which is gone after delete.
		named := w.Named
		if named == "" {
			named = w.Source
		}
		s := layerSet{Destination: w.Destination, Source: named, Upper: w.Upper(), Lower: w.Source, Shift: w.Shift}
		if len(ws) > 1 {
			s.Prefix = strings.Trim(path.Clean("/"+w.Destination), "/") + "/"
		}
		sets = append(sets, s)
	}
	return sets
}

// Diff writes the changes of a live container's workspaces.
func Diff(cfg *Settings, root, id, format string, w io.Writer) ([]string, error) {
	if err := state.CheckID(id); err != nil {
		return nil, err
	}
	lim, err := LimitsOf(cfg)
	if err != nil {
		return nil, err
	}
	reg, err := state.OpenRegistry(root)
	if err != nil {
		return nil, err
	}
	if _, err := reg.Get(id); errors.Is(err, os.ErrNotExist) {
		// An engine deletes a finished container at once (docker run,
		// a shim's exit): its kept changes are what diff shows then.
		if _, kerr := loadRetained(cfg, root, id); kerr == nil {
			return Export(cfg, root, id, format, w)
		}
		return nil, fmt.Errorf("container %s does not exist under --root %s, and no changes of it are kept there%s (a job that changed nothing in its workspaces keeps none; kept changes expire after changes_retention): bulkhead changes list shows what is kept", id, root, keptElsewhere(cfg, id))
	} else if err != nil {
		return nil, fmt.Errorf("container %s: %w", id, err)
	}
	ws, err := Load(reg.Dir(id))
	if err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("container %s has no overlay workspace", id)
	}
	return exportChanges(w, format, liveSets(ws), lim)
}

// keptElsewhere names the other roots that kept changes of id, for the
// message of a diff or export under the wrong --root.
func keptElsewhere(cfg *Settings, id string) string {
	all, _, err := scanStore(cfg)
	if err != nil {
		return ""
	}
	var roots []string
	for _, r := range all {
		if r.ID == id && !slices.Contains(roots, r.Root) {
			roots = append(roots, escape.Text(r.Root))
		}
	}
	if len(roots) == 0 {
		return ""
	}
	return "; they are kept under --root " + strings.Join(roots, ", ")
}

// Retain keeps a deleted container's workspace changes and says
// where; nil and no error when there are none or retention is off.
// settings is read only when there are changes to keep.
func Retain(settings func() (*Settings, error), root string, reg *state.Registry, rec *state.Record) (*Kept, error) {
	ws, err := Load(reg.Dir(rec.ID))
	if err != nil {
		return nil, fmt.Errorf("workspaces of %s: %w", rec.ID, err)
	}
	if len(ws) == 0 {
		return nil, nil
	}
	cfg, err := settings()
	if err != nil {
		return nil, err
	}
	keep, err := retention(cfg)
	if err != nil || keep == 0 {
		return nil, err
	}
	r, err := saveChanges(cfg, root, rec, ws, keep)
	if err != nil {
		return nil, err
	}
	// saveChanges pruned what had expired before it counted the quota.
	return r, nil
}

// rootKey names a --root in changes_dir: the same for every spelling of
// one path, different for every other root.
func rootKey(root string) string { return sha([]byte(filepath.Clean(root)))[:16] }

func keptDir(cfg *Settings, root, id string) string {
	return filepath.Join(changesDir(cfg), rootKey(root), id)
}

const tmpPrefix = ".tmp-"

// lockChanges serialises the changes of changes_dir's entries (a keep's
// lease and its entry put in place, prunes), so the quota is counted
// against a store nobody else is changing, and every .tmp- directory
// prune finds without a held lease is a leftover.
func lockChanges(cfg *Settings) (func(), error) {
	dir := changesDir(cfg)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

func saveChanges(cfg *Settings, root string, rec *state.Record, ws []Workspace, keep time.Duration) (*Kept, error) {
	lim, err := LimitsOf(cfg)
	if err != nil {
		return nil, err
	}
	l, err := takeLease(cfg, lim)
	if err != nil {
		return nil, err
	}
	defer l.release(cfg)
	disk := &diskBudget{limit: l.bytes}
	tmp := l.entry()
	final := keptDir(cfg, root, rec.ID)
	now := nowUTC()
	r := &Kept{ID: rec.ID, Root: root, Profile: rec.Profile, Bundle: rec.Bundle, Deleted: now, Expires: now.Add(keep), Dir: final}
	// The patch and json are made from the kept copy, not from the layer:
	// a pod-mate of the same user that holds a directory of it (its cwd
	// through /proc/<pid>/root) could change a file between two reads of
	// the layer, and the tar a reviewer applies would not be what the
	// patch they read showed. The copy is root's alone once made.
	sets := liveSets(ws)
	files := newBudget(lim)
	kept := make([]layerSet, 0, len(sets))
	for i, s := range sets {
		dst := filepath.Join(tmp, strconv.Itoa(i), "upper")
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, err
		}
		leftOut := func(p, why string) { r.CopyLeftOut = append(r.CopyLeftOut, rejectLine(s.Prefix+p, why)) }
		if err := copyLayer(s.Upper, s.Lower, dst, files, disk, s.Shift, leftOut); err != nil {
			return nil, fmt.Errorf("copy upper layer of %s: %w", s.Destination, err)
		}
		r.Workspaces = append(r.Workspaces, layerSet{Destination: s.Destination, Source: s.Source, Prefix: s.Prefix})
		k := s
		k.Upper, k.judged = dst, true
		kept = append(kept, k)
	}
	read := newBudget(lim)
	wcs, rejected, err := scanSets(kept, read)
	if err != nil {
		return nil, err
	}
	rejected = append(rejected, r.CopyLeftOut...)
	for _, wc := range wcs {
		r.Changes += len(wc.Changes)
	}
	if r.Changes == 0 && len(rejected) == 0 {
		// Nothing to review: an entry would only bury the ones that are.
		return nil, nil
	}
	if err := writeKept(filepath.Join(tmp, "changes.patch"), disk, func(w io.Writer) error {
		rejected, err = writePatchSets(w, wcs, rejected, read)
		return err
	}); err != nil {
		return nil, err
	}
	r.Rejected = rejected
	if err := writeKept(filepath.Join(tmp, "changes.json"), disk, func(w io.Writer) error {
		return writeReport(w, wcs, rejected)
	}); err != nil {
		return nil, err
	}
	r.JudgedAtCopy, r.TarJudgement = true, tarJudgement
	r.Rejected, r.RejectedNotListed = listedAtMost(r.Rejected)
	r.CopyLeftOut, r.CopyLeftOutNotListed = listedAtMost(r.CopyLeftOut)
	copied, err := diskUsage(tmp)
	if err != nil {
		return nil, err
	}
	// meta.json counts too: it holds the left-out lines, as long as the
	// changes.json beside it. Its size is known once Bytes is in it, and
	// Bytes' digits barely change it: one block more covers them.
	r.Bytes = copied
	meta, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	r.Bytes = copied + (int64(len(meta))/blockSize+2)*blockSize
	if r.Bytes > disk.limit {
		return nil, fmt.Errorf("the copy takes %d bytes, more than the %d left to it (changes_max_bytes, changes_quota)", r.Bytes, disk.limit)
	}
	if meta, err = json.MarshalIndent(r, "", "  "); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "meta.json"), meta, 0o600); err != nil {
		return nil, err
	}
	if err := putInPlace(cfg, root, rec.ID, tmp, final); err != nil {
		return nil, err
	}
	return r, nil
}

// putInPlace moves a finished entry to its name, under the store's lock.
func putInPlace(cfg *Settings, root, id, tmp, final string) error {
	unlock, err := lockChanges(cfg)
	if err != nil {
		return err
	}
	defer unlock()
	if err := setAsideEarlier(cfg, root, id); err != nil {
		return err
	}
	return replaceDir(tmp, final)
}

// asideMark and asideStamp make a set-aside entry's name after its id.
const (
	asideMark  = "@"
	asideStamp = "20060102T150405.000000000Z"
)

// CheckKeptName refuses a name that is neither a container id nor a
// set-aside entry's (<id>@<delete time>[-n]).
func CheckKeptName(name string) error {
	id, stamp, aside := strings.Cut(name, asideMark)
	if err := state.CheckID(id); err != nil || !aside {
		return err
	}
	stamp, n, numbered := strings.Cut(stamp, "-")
	_, err := time.Parse(asideStamp, stamp)
	if err != nil || len(stamp) != len(asideStamp) || numbered && (n == "" || strings.Trim(n, "0123456789") != "") {
		return fmt.Errorf("%s is neither a container id nor a set-aside entry's name (<id>@<delete time>[-n])", escape.Text(name))
	}
	return nil
}

// IsAsideName tells whether name is a set-aside entry's, which no
// container has.
func IsAsideName(name string) bool {
	return strings.Contains(name, asideMark) && CheckKeptName(name) == nil
}

// maxAside bounds the names tried for one set-aside entry: a store that
// holds as many of one id and instant is not one to add to.
const maxAside = 100

// asideName is a free name for an earlier entry of id: id@<deleted>, then
// with -2, -3, ...; an id too long for a file name with that suffix (the
// caller chooses ids, of any length) is cut to fit. Any error but a free
// name's ENOENT ends the search. The @ keeps it out of the names a
// container may have (state.CheckID): with a dot, a caller who created a
// container of an entry's set-aside name took that name at its delete, and
// the reviewer exporting it read the caller's changes.
func asideName(cfg *Settings, root, id string, deleted time.Time) (string, string, error) {
	stamp := asideMark + deleted.UTC().Format(asideStamp)
	for n := 1; n <= maxAside; n++ {
		suffix := stamp
		if n > 1 {
			suffix += "-" + strconv.Itoa(n)
		}
		name := id
		if len(name)+len(suffix) > unix.NAME_MAX {
			name = name[:unix.NAME_MAX-len(suffix)]
		}
		name += suffix
		to := keptDir(cfg, root, name)
		_, err := os.Lstat(to)
		if errors.Is(err, os.ErrNotExist) {
			return name, to, nil
		}
		if err != nil {
			return "", "", fmt.Errorf("kept changes of %s: %w", escape.Text(id), err)
		}
	}
	return "", "", fmt.Errorf("kept changes of %s: %d entries of it were deleted at %s", escape.Text(id), maxAside, deleted.UTC().Format(time.RFC3339Nano))
}

// setAsideEarlier gives the entry an earlier run of the same container id
// kept (docker start of an exited container, an engine reusing a name) a
// name of its own, id.<its delete time>, so the new keep does not replace
// it: changes kept for review are not lost to a later job. It is listed,
// exported and pruned by that name.
func setAsideEarlier(cfg *Settings, root, id string) error {
	prev, err := readRetained(keptDir(cfg, root, id))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	name, to, err := asideName(cfg, root, id, prev.Deleted)
	if err != nil {
		return err
	}
	prev.ID, prev.Dir = name, to
	meta, err := json.MarshalIndent(prev, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(keptDir(cfg, root, id), "meta.json"), meta, 0o600); err != nil {
		return err
	}
	return os.Rename(keptDir(cfg, root, id), to)
}

// writeKept writes one file of a kept entry through the disk budget.
func writeKept(path string, disk *diskBudget, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(&budgetWriter{w: f, disk: disk}, copyBuf)
	err = write(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// replaceDir moves a finished entry into place; an earlier entry of the
// same root and id is replaced, and is back if the move fails.
func replaceDir(tmp, final string) error {
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return err
	}
	var old string
	if _, err := os.Lstat(final); err == nil {
		old = tmp + "-old"
		if err := os.Rename(final, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if old != "" {
			_ = os.Rename(old, final)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// diskBudget counts the disk one kept entry takes.
type diskBudget struct {
	limit, used int64
}

func (d *diskBudget) take(n int64) error {
	d.used += n
	if d.used > d.limit {
		return fmt.Errorf("kept changes would pass %d bytes (changes_max_bytes, or what changes_quota leaves); nothing kept", d.limit)
	}
	return nil
}

type budgetWriter struct {
	w    io.Writer
	disk *diskBudget
}

func (b *budgetWriter) Write(p []byte) (int, error) {
	if err := b.disk.take(int64(len(p))); err != nil {
		return 0, err
	}
	return b.w.Write(p)
}

// diskUsage is the disk a tree of bulkhead's own takes (allocated blocks,
// each inode once however many names it has, and at least one block: an
// empty file, a short symlink or a whiteout allocates none, but takes one
// of the filesystem's inodes, which run out long before its bytes when a
// job keeps 100,000 of them a container).
func diskUsage(dir string) (int64, error) {
	var n int64
	seen := map[inode]bool{}
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if k := (inode{st.Dev, st.Ino}); !seen[k] {
			seen[k] = true
			n += max(st.Blocks*512, blockSize)
		}
		return nil
	})
	return n, err
}

// blockSize rounds what a data stretch takes on disk.
const blockSize = 4096

// copyLayer copies an upper layer beneath src to dst: files, dirs,
// symlinks (as links, never followed), whiteouts and opaque markers.
// Device nodes, fifos, sockets, setuid/setgid files and files the sandbox
// user (reader) could not read are left out. So is what only the lower
// layer at lower ("" for none) shows must never go into a tar, since the
// kept copy has no lower layer to show it: directories git would take for
// a repository, and every name a tar would write where the checkout has a
// symlink (checkoutDir), whiteouts and opaque markers included; leftOut
// hears of each. A file's holes stay holes, a hard link's later names are links
// to its first copy, and the walk stops at the limits of b and disk.
func copyLayer(src, lower, dst string, b *budget, disk *diskBudget, reader *idShift, leftOut func(rel, why string)) error {
	up, err := openLayer(src)
	if err != nil {
		return err
	}
	defer up.Close()
	var low *layer
	if lower != "" {
		if low, err = openLayer(lower); err != nil {
			return err
		}
		defer low.Close()
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	links := map[inode]string{}
	buf := make([]byte, copyBuf)
	var walk func(rel string, lk *look, depth int, cd *checkoutDir) error
	walk = func(rel string, lk *look, depth int, cd *checkoutDir) error {
		for _, n := range lk.names {
			p := join(rel, n)
			if err := b.entry(p, depth); err != nil {
				return err
			}
			st := lk.stats[n]
			out := filepath.Join(dst, filepath.FromSlash(p))
			kind := st.Mode & unix.S_IFMT
			if isWhiteout(st) {
				if why := cd.markReason(whiteoutPrefix + n); why != "" {
					leftOut(join(rel, whiteoutPrefix+n), why)
					continue
				}
			} else if why := kindReason(st); why != "" {
				leftOut(p, why)
				continue
			} else if windowsName(n) {
				leftOut(p, windowsAliasReason)
				continue
			} else if kind == unix.S_IFREG && !up.upperFileReadable(p, st, reader) {
				leftOut(p, unreadableReason)
				continue
			} else if why := cd.entryReason(n); why != "" && kind != unix.S_IFLNK {
				leftOut(p, why)
				continue
			} else if why := cd.halfReason(n); why != "" {
				leftOut(p, why)
				continue
			}
			// Every inode the copy makes costs a block of the budget,
			// as diskUsage counts it; a hard link's later name makes none.
			_, linked := links[inode{st.Dev, st.Ino}]
			if isWhiteout(st) || kind == unix.S_IFLNK || (kind == unix.S_IFREG && !linked) {
				if err := disk.take(blockSize); err != nil {
					return err
				}
			}
			switch {
			case isWhiteout(st):
				if err := unix.Mknod(out, unix.S_IFCHR|0o600, 0); err != nil {
					return err
				}
				if err := keepTimes(out, st); err != nil {
					return err
				}
			case st.Mode&unix.S_IFMT == unix.S_IFDIR:
				below, err := up.look(p, b)
				if err != nil {
					return err
				}
				sub := cd.below(n)
				if sub.repoWith(below.marks()) {
					leftOut(p, repoDirReason)
					continue
				}
				if err := disk.take(blockSize); err != nil {
					return err
				}
				if err := os.Mkdir(out, 0o700); err != nil {
					return err
				}
				// Exactly the job's mode, not what the umask leaves of it:
				// the kept patch and json are made from this copy.
				if err := unix.Chmod(out, st.Mode&0o7777); err != nil {
					return err
				}
				switch why := sub.markReason(opaqueMarker); {
				case !up.opaque(p):
				case why != "":
					leftOut(join(p, opaqueMarker), why)
				default:
					if err := unix.Setxattr(out, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
						return err
					}
				}
				if err := walk(p, below, depth+1, sub); err != nil {
					return err
				}
				// Set once its entries are made, which change it.
				if err := keepTimes(out, st); err != nil {
					return err
				}
			case st.Mode&unix.S_IFMT == unix.S_IFLNK:
				t, err := up.readlink(p)
				if err != nil {
					return err
				}
				if why := cd.linkOut(rel, n, t); why != "" {
					leftOut(p, why)
					continue
				}
				if err := os.Symlink(t, out); err != nil {
					return err
				}
				if err := keepTimes(out, st); err != nil {
					return err
				}
			default: // a regular file: every other kind was left out
				key := inode{st.Dev, st.Ino}
				if first, ok := links[key]; ok {
					if err := os.Link(first, out); err != nil {
						return err
					}
					continue
				}
				if err := copySparse(up, p, st, out, buf, disk); err != nil {
					return err
				}
				if err := keepTimes(out, st); err != nil {
					return err
				}
				if st.Nlink > 1 {
					links[key] = out
				}
			}
		}
		return nil
	}
	top, err := up.look("", b)
	if err != nil {
		return err
	}
	root := checkoutRoot(low)
	if root.repoWith(top.marks()) {
		leftOut(".", repoDirReason)
		return nil
	}
	return walk("", top, 1, root)
}

// keepTimes gives the copy out the times the job's entry had (st), so
// that kept changes show when the job changed each file, as the live
// diff does, not when the container was deleted.
func keepTimes(out string, st *unix.Stat_t) error {
	return unix.UtimesNanoAt(unix.AT_FDCWD, out, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
}

// copySparse copies the regular file rel (as the walk saw it in st) to
// out: only its data stretches are written, its holes stay holes. The
// block its inode was charged (copyLayer) holds its first data, as
// diskUsage counts a file: a file of 3,000 bytes was charged two blocks,
// and a layer of small files failed changes_max_bytes at half its size.
func copySparse(up *layer, rel string, st *unix.Stat_t, out string, buf []byte, disk *diskBudget) error {
	in, ist, err := up.openRegular(rel, st)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(st.Mode&0o777))
	if err != nil {
		return err
	}
	inodeBlock := true
	err = segments(in, ist.Size, func(off, n int64, data bool) error {
		if !data {
			return nil
		}
		charge := (n + blockSize - 1) / blockSize * blockSize
		if inodeBlock {
			charge, inodeBlock = charge-blockSize, false
		}
		if err := disk.take(charge); err != nil {
			return err
		}
		for n > 0 {
			k, rerr := in.ReadAt(buf[:min(n, int64(len(buf)))], off)
			if k > 0 {
				if _, werr := o.WriteAt(buf[:k], off); werr != nil {
					return werr
				}
			}
			if rerr == io.EOF {
				return nil
			}
			if rerr != nil {
				return rerr
			}
			off, n = off+int64(k), n-int64(k)
		}
		return nil
	})
	if err == nil {
		err = o.Truncate(ist.Size)
	}
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(out, os.FileMode(st.Mode&0o777))
	}
	return err
}

// loadRetained reads the kept changes of (root, id). An entry saved
// before changes were keyed by root (<changes_dir>/<id>) is found only
// when its meta.json names this root.
func loadRetained(cfg *Settings, root, id string) (*Kept, error) {
	r, err := readRetained(keptDir(cfg, root, id))
	if errors.Is(err, os.ErrNotExist) {
		if old, oerr := readRetained(filepath.Join(changesDir(cfg), id)); oerr == nil && filepath.Clean(old.Root) == filepath.Clean(root) {
			return old, nil
		}
	}
	return r, err
}

func readRetained(dir string) (*Kept, error) {
	data, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return nil, err
	}
	var r Kept
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	r.Dir = dir
	for i, s := range r.Workspaces {
		s.Upper = filepath.Join(dir, strconv.Itoa(i), "upper")
		// An entry judged file by file when copied is not judged again;
		// one kept before that is, by what anyone could read.
		s.judged = r.JudgedAtCopy
		// meta.json does not hold the prefix: it is liveSets' again, so
		// the kept tar names each workspace's entries apart.
		if len(r.Workspaces) > 1 {
			s.Prefix = strings.Trim(path.Clean("/"+s.Destination), "/") + "/"
		}
		r.layers = append(r.layers, s)
	}
	return &r, nil
}

// Export writes the kept changes of the caller's --root and id,
// or a live container's changes when nothing is kept yet.
func Export(cfg *Settings, root, id, format string, w io.Writer) ([]string, error) {
	if err := CheckKeptName(id); err != nil {
		return nil, err
	}
	if err := checkFormat(format); err != nil {
		return nil, err
	}
	lim, err := LimitsOf(cfg)
	if err != nil {
		return nil, err
	}
	r, err := loadRetained(cfg, root, id)
	if errors.Is(err, os.ErrNotExist) && IsAsideName(id) {
		return nil, fmt.Errorf("no kept changes are named %s", escape.Text(id))
	}
	if errors.Is(err, os.ErrNotExist) {
		return Diff(cfg, root, id, format, w)
	}
	if err != nil {
		return nil, err
	}
	if format != "tar" {
		// The kept patch and json were made at the keep; the checkout
		// may have become a repository where they write since.
		if err := keptWritesIntoRepo(r); err != nil {
			return nil, fmt.Errorf("kept changes of %s: %w", id, err)
		}
	}
	if format == "tar" {
		if r.TarJudgement < tarJudgement {
			return nil, fmt.Errorf("kept changes of %s were copied by an earlier bulkhead, which did not leave out every name standing where the checkout has a symlink: no tar of them; --format patch carries them", id)
		}
		tw := tar.NewWriter(w)
		b := newBudget(lim)
		held := archiveNames{}
		var rejected []string
		for _, s := range r.layers {
			rej, err := writeLayerTar(tw, s, b, held)
			if err != nil {
				return nil, err
			}
			rejected = append(rejected, rej...)
		}
		named := make(map[string]bool, len(rejected))
		for _, line := range rejected {
			named[line] = true
		}
		for _, line := range r.CopyLeftOut {
			if !named[line] {
				rejected = append(rejected, line)
			}
		}
		if r.CopyLeftOutNotListed > 0 {
			rejected = append(rejected, fmt.Sprintf("and %d more files the kept copy left out, not listed", r.CopyLeftOutNotListed))
		}
		return rejected, tw.Close()
	}
	f, err := os.Open(filepath.Join(r.Dir, "changes."+format))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	rejected := r.Rejected
	if r.RejectedNotListed > 0 {
		rejected = append(slices.Clip(rejected), fmt.Sprintf("and %d more rejected, not listed (changes.json names each)", r.RejectedNotListed))
	}
	return rejected, err
}

// maxListed bounds the bytes of each list of lines an entry's meta.json
// keeps (what was rejected, what the kept copy left out): the job chooses
// how many there are and their names, and every keep, prune and list
// reads every meta.json in the store, so one job's 99,000 left-out names
// made each of them read 36 MB. Past it, only the count is kept.
const maxListed = 64 << 10

// listedAtMost is the first lines, up to maxListed bytes as meta.json
// holds them (JSON escapes <, > and & as six bytes each), and how many
// are left.
func listedAtMost(lines []string) ([]string, int) {
	n := 0
	for i, l := range lines {
		quoted, err := json.Marshal(l)
		if err != nil {
			return lines[:i], len(lines) - i
		}
		if n += len(quoted) + 1; n > maxListed {
			return lines[:i], len(lines) - i
		}
	}
	return lines, 0
}

// List writes the kept changes as a table or json.
func List(cfg *Settings, format string, w io.Writer) error {
	all, _, err := scanStore(cfg)
	if err != nil {
		return err
	}
	if format == "json" {
		if all == nil {
			all = []*Kept{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROOT\tDELETED\tEXPIRES\tCHANGES\tREJECTED\tBYTES\tDIR")
	for _, r := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.ID, escape.Text(r.Root), r.Deleted.Format(time.RFC3339), r.Expires.Format(time.RFC3339), r.Changes, len(r.Rejected)+r.RejectedNotListed, r.Bytes, r.Dir)
	}
	return tw.Flush()
}

// scanStore lists the kept changes, oldest first, and every path in
// changes_dir that is no finished entry: a .tmp- directory, an entry
// without (readable) meta.json, an empty root directory, a stray file.
func scanStore(cfg *Settings) (kept []*Kept, orphans []string, err error) {
	dir := changesDir(cfg)
	top, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range top {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.Name() == ".lock":
			continue
		case strings.HasPrefix(e.Name(), tmpPrefix) && e.IsDir():
			if _, held := heldLease(p, 0); !held {
				orphans = append(orphans, p)
			}
			continue
		case strings.HasPrefix(e.Name(), tmpPrefix) || !e.IsDir():
			orphans = append(orphans, p)
			continue
		}
		if st, err := os.Lstat(filepath.Join(p, "meta.json")); err == nil && st.Mode().IsRegular() {
			// kept before changes were keyed by root; a directory of that
			// name is the keep of a container named meta.json
			if r, err := readRetained(p); err == nil {
				kept = append(kept, r)
			} else {
				orphans = append(orphans, p)
			}
			continue
		}
		ids, err := os.ReadDir(p)
		if err != nil {
			return nil, nil, err
		}
		if len(ids) == 0 {
			orphans = append(orphans, p)
		}
		for _, id := range ids {
			q := filepath.Join(p, id.Name())
			if r, err := readRetained(q); err == nil && id.IsDir() {
				kept = append(kept, r)
			} else {
				orphans = append(orphans, q)
			}
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Deleted.Before(kept[j].Deleted) })
	return kept, orphans, nil
}

// Prune removes kept changes past their expiry, or deleted more
// than olderThan ago when olderThan >= 0, and anything in changes_dir
// without metadata; it returns the ids (and paths) removed.
func Prune(cfg *Settings, olderThan time.Duration) ([]string, error) {
	unlock, err := lockChanges(cfg)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return pruneLocked(cfg, olderThan)
}

// Discard removes the changes kept for container id of root, for a
// container bulkhead made and deleted itself (the probe's), whose changes
// nobody is to review and which would only take the quota.
func Discard(cfg *Settings, root, id string) error {
	unlock, err := lockChanges(cfg)
	if err != nil {
		return err
	}
	defer unlock()
	return os.RemoveAll(keptDir(cfg, root, id))
}

func pruneLocked(cfg *Settings, olderThan time.Duration) ([]string, error) {
	all, orphans, err := scanStore(cfg)
	if err != nil {
		return nil, err
	}
	now := nowUTC()
	var gone []string
	var errs []error
	for _, r := range all {
		if now.Before(r.Expires) && (olderThan < 0 || now.Sub(r.Deleted) < olderThan) {
			continue
		}
		if err := state.RemoveTree(r.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		gone = append(gone, r.ID)
		// its root directory goes too once empty
		_ = os.Remove(filepath.Dir(r.Dir))
	}
	for _, p := range orphans {
		if err := state.UnmountUnder(p); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		gone = append(gone, p)
		_ = os.Remove(filepath.Dir(p))
	}
	return gone, errors.Join(errs...)
}

// keptWritesIntoRepo refuses kept changes whose checkout, as it is now at
// its named path, cannot be judged (openCheckout), or where git may take a
// directory the kept patch and json write in for a repository, by what the
// checkout holds there now (by key, as the tar is judged) and the names
// the changes write there (repoShape), or the changes write half of one
// (halfReason): the job's config or hooks there would run as whoever next
// runs git. The changes are every one the kept json names and the patch
// holds: the kept copy leaves some out.
func keptWritesIntoRepo(r *Kept) error {
	data, err := os.ReadFile(filepath.Join(r.Dir, "changes.json"))
	if err != nil {
		return err
	}
	var report ChangeReport
	if err := json.Unmarshal(data, &report); err != nil {
		return fmt.Errorf("%s: %w", r.Dir, err)
	}
	for i, s := range r.layers {
		named, err := openCheckout(s.Source)
		if err != nil {
			return err
		}
		if named == nil {
			continue
		}
		var changes []Change
		if i < len(report.Workspaces) {
			changes = report.Workspaces[i].Changes
		}
		err = writesIntoRepo(checkoutRoot(named), changes)
		named.Close()
		if err != nil {
			return fmt.Errorf("the checkout %s, %w: no export of them", escape.Text(s.Source), err)
		}
	}
	return nil
}

// writesIntoRepo says where changes write in a directory git may take for
// a repository once they are applied to the checkout root, or make a link
// that leads out of it (linkOut).
func writesIntoRepo(root *checkoutDir, changes []Change) error {
	// Each directory's names the changes write, and whether each is one
	// of them as no directory (a HEAD counts then).
	writes := map[string]map[string]bool{".": {}}
	for _, c := range changes {
		if c.Rejected != "" {
			continue // never in the patch: a checkout's own .git is one
		}
		if _, ok := writes[c.Path]; !ok && c.Type == "dir" {
			writes[c.Path] = map[string]bool{}
		}
		for p, leaf := c.Path, true; p != "." && p != "/" && p != ""; p, leaf = path.Dir(p), false {
			d := path.Dir(p)
			if writes[d] == nil {
				writes[d] = map[string]bool{}
			}
			writes[d][path.Base(p)] = writes[d][path.Base(p)] || leaf && c.Type != "dir"
		}
	}
	for _, d := range slices.Sorted(maps.Keys(writes)) {
		names := slices.Sorted(maps.Keys(writes[d]))
		cd := root.at(d)
		repo := cd.repoWith(gitMarks(names, func(n string) bool { return !writes[d][n] }))
		for _, n := range names {
			repo = repo || cd.halfReason(n) != ""
		}
		if repo {
			return fmt.Errorf("in %s now, which git may take for a repository with what the changes write there (a HEAD, or objects and refs, or one of them the checkout does not hold)", escape.Text(d))
		}
	}
	// A link judged at the keep may lead, in the checkout as it is now,
	// to a directory the fork's next commit made, with its links below.
	for _, c := range changes {
		if c.Rejected != "" || c.Type != "symlink" || c.Kind == "deleted" {
			continue
		}
		dir := path.Dir(c.Path)
		rel := strings.TrimPrefix(dir, ".")
		if why := root.at(dir).linkOut(rel, path.Base(c.Path), c.Target); why != "" {
			return fmt.Errorf("where the changes' link %s -> %s now leads to what it holds (%s)", escape.Text(c.Path), escape.Text(c.Target), why)
		}
	}
	return nil
}
