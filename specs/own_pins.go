package specs

import (
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
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

// isOwnPin tells whether p is a pin of bulkhead's own (or a workspace's
// lower layer), by its place and by
// the container's record beside it (root's, as only bulkhead writes it).
// A pin shows a source already judged for its container, whose origin is
// still mounted and judged as a place of its own: it is not another place
// the files are at. Counted as one, a second job on a checkout another
// job has as its workspace was refused while the first existed.
func isOwnPin(p string) bool {
	m := ownPin().FindStringSubmatch(p)
	if m == nil {
		return false
	}
	fi, err := os.Lstat(filepath.Join(m[1], "record.json"))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}
