package specs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"

	"github.com/moby/sys/mountinfo"
)

// ownPin matches a pin of bulkhead's own, <root>/bulkhead/<id>/pins/<n>,
// or a workspace's lower layer, <root>/bulkhead/<id>/ws/<n>/lower, or a
// path in either: a create binds there a source it judged for its
// container (see runtime/pins.go), so that the backend gets the very file
// judged, and id-maps a workspace's source there as the overlay's lower
// layer (runtime/workspace).
var ownPin = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(.*/bulkhead/[\w+\-.]+)/(pins/[0-9]+|ws/[0-9]+/lower)(/.*)?$`)
})

// isOwnPin tells whether p, a place on the mount at mountpoint, is a pin
// of bulkhead's own (or a workspace's lower layer), by its place and by
// the container's record beside it (root's, as only bulkhead writes it).
// A pin shows a source already judged for its container, whose origin is
// still mounted and judged as a place of its own: it is not another place
// the files are at. Counted as one, a second job on a checkout another
// job has as its workspace was refused while the first existed.
func isOwnPin(p string, mount *mountinfo.Info) bool {
	m := ownPin().FindStringSubmatch(p)
	if m == nil {
		return false
	}
	fi, err := os.Lstat(filepath.Join(m[1], "record.json"))
	if pin := filepath.Join(m[1], m[2]); errors.Is(err, fs.ErrNotExist) && mount != nil && mount.Mountpoint == pin {
		return pinGone(mount)
	}
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}

// pinGone tells whether a mount at a pin's place (as the mount table
// showed it) whose record was not found is no longer mounted: the mount
// table the places were read from is older than the record's lookup, and
// a delete unmounts its pins before it removes the record, so a pin that
// is still mounted without a record is no pin of a container (and stays a
// place), while one deleted in between shows no files any more. Counted as
// a place, a create from a bundle another container of it was deleted from
// at that moment was refused. Only a mount at the pin's very place is
// taken (a path below some other mount is named by whoever made its
// directories), and it is looked for again by its id, not by its path: a
// mount hidden under one made above it since is still mounted.
func pinGone(mount *mountinfo.Info) bool {
	now, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mount.Mountpoint))
	if err != nil {
		return false
	}
	for _, m := range now {
		if m.ID == mount.ID {
			return false
		}
	}
	return true
}
