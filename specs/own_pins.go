package specs

import (
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
)

// ownPin matches a pin of bulkhead's own, <root>/bulkhead/<id>/pins/<n>,
// or a path in it: a create binds there a source it judged for its
// container (see runtime/pins.go), so that the backend gets the very file
// judged.
var ownPin = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(.*/bulkhead/[\w+\-.]+)/pins/[0-9]+(/.*)?$`)
})

// isOwnPin tells whether p is a pin of bulkhead's own, by its place and by
// the container's record beside it (root's, as only bulkhead writes it).
// A pin shows a source already judged for its container, whose origin is
// still mounted and judged as a place of its own: it is not another place
// the files are at.
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
