package workspace

import (
	"fmt"
	"strconv"

	units "github.com/docker/go-units"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// changeLimits bound what one container's upper layers can make bulkhead
// do on the host: the sandbox writes them, bulkhead's own memory, disk and
// time must not grow with what it wrote.
type changeLimits struct {
	// Bytes is the file content one diff, export or keep reads (a hole
	// counts: hashing reads it as zeros) and, separately, what one keep
	// stores on disk (a hole costs nothing there).
	Bytes int64
	// Files is the number of entries walked in a container's layers.
	Files int
	// Depth is the deepest directory level walked.
	Depth int
	// Quota is the total disk all kept changes may use in changes_dir.
	Quota int64
	// Names is the bytes of all paths one pass walks (maxNameBytes).
	Names int64
}

var defaultChangeLimits = changeLimits{Bytes: 1 << 30, Files: 100_000, Depth: 128, Quota: 4 << 30, Names: maxNameBytes}

// maxNameBytes bounds the bytes of all paths one pass walks, each counted
// as long as it is once escaped (escapeText), which is the form the lines
// naming what was left out and the json hold. The sandbox chooses names:
// 4 KiB paths of bytes escaped as \xNN, 100,000 of them, made a diff hold
// gigabytes. 8 MiB is 80 bytes a path at changes_max_files.
const maxNameBytes = 8 << 20

// maxPatchFile bounds one side of a file the text patch shows: a larger
// file is left to the tar export, so the diff's memory stays small.
const maxPatchFile = 4 << 20

func LimitsOf(cfg *Settings) (changeLimits, error) {
	lim := defaultChangeLimits
	if cfg == nil {
		return lim, nil
	}
	for _, s := range []struct {
		key, v string
		dst    *int64
	}{{"changes_max_bytes", cfg.ChangesMaxBytes, &lim.Bytes}, {"changes_quota", cfg.ChangesQuota, &lim.Quota}} {
		if s.v == "" {
			continue
		}
		n, err := units.RAMInBytes(s.v)
		if err != nil || n <= 0 {
			return lim, fmt.Errorf("%s %q: want a size such as 1g", s.key, s.v)
		}
		*s.dst = n
	}
	for _, s := range []struct {
		key string
		v   int
		dst *int
	}{{"changes_max_files", cfg.ChangesMaxFiles, &lim.Files}, {"changes_max_depth", cfg.ChangesMaxDepth, &lim.Depth}} {
		if s.v < 0 {
			return lim, fmt.Errorf("%s %d: want a positive count", s.key, s.v)
		}
		if s.v > 0 {
			*s.dst = s.v
		}
	}
	return lim, nil
}

// budget counts what one pass over a container's layers has used.
type budget struct {
	lim   changeLimits
	bytes int64 // content read
	files int
	names int64 // bytes of the paths walked
}

func newBudget(lim changeLimits) *budget { return &budget{lim: lim} }

// entry counts one more entry at depth (1 for the layer's root entries).
func (b *budget) entry(rel string, depth int) error {
	b.files++
	if b.files > b.lim.Files {
		return fmt.Errorf("more than %d entries (changes_max_files); bulkhead reads no further", b.lim.Files)
	}
	b.names += int64(escape.Len(rel))
	if err := b.nameRoom(0); err != nil {
		return err
	}
	if depth > b.lim.Depth {
		return fmt.Errorf("%s: deeper than %d directories (changes_max_depth); bulkhead reads no further", escape.Text(rel), b.lim.Depth)
	}
	if len(rel) > maxEntryPath {
		return fmt.Errorf("%s...: a path of %d bytes, longer than the %d bulkhead opens (the kernel's PATH_MAX, less room for the store's own directories); bulkhead reads no further", escape.Text(rel[:64]), len(rel), maxEntryPath)
	}
	return nil
}

// maxEntryPath bounds an entry's path below its layer: the walk opens
// each entry by that path (openat2, RESOLVE_BENEATH), and the kept copy
// below the store's directories, so the kernel's PATH_MAX (4096) would
// end the walk with ENAMETOOLONG at whatever depth long names reach.
const maxEntryPath = 3072

// read reserves n bytes of content; it says why not when they do not fit,
// and the caller leaves that one file out.
func (b *budget) read(n int64) string {
	if n > b.lim.Bytes-b.bytes {
		return "its " + strconv.FormatInt(n, 10) + " bytes pass what one container may make bulkhead read (changes_max_bytes " + strconv.FormatInt(b.lim.Bytes, 10) + "); not read"
	}
	b.bytes += n
	return ""
}

// nameRoom tells whether n more bytes of names fit beside the paths
// already walked.
func (b *budget) nameRoom(n int64) error {
	if b.lim.Names > 0 && b.names+n > b.lim.Names {
		return fmt.Errorf("the paths pass %d bytes together (changes_max_files entries of about %d bytes); bulkhead reads no further",
			b.lim.Names, b.lim.Names/int64(max(b.lim.Files, 1)))
	}
	return nil
}
