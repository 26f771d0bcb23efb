package runtime

import (
	"os"
	"slices"
	"strings"
)

// keptEnvironment are the variables of the caller's environment that
// bulkhead keeps, and so hands to its backends and its own helpers. The
// rest is the caller's and no backend's business, whatever no rule names
// included: runc reads LISTEN_FDS and LISTEN_PID (and hands its own
// descriptors, the caller's unjudged ones among them, to the container's
// process) and NOTIFY_SOCKET (and binds a socket of its own into the
// container); a dynamically linked backend reads LD_*, and libcontainer
// its _LIBCONTAINER_* variables.
// TMPDIR is not kept either: a directory another user owns would let that
// user swap what bulkhead makes there (an exec's pid file, a console
// socket).
var keptEnvironment = []string{"TZ", "BULKHEAD_CONFIG"}

// SystemPath is the PATH bulkhead and its children search, whatever the
// caller's was: a backend named without a path ("runc") is root's binary
// in the system's directories, never one planted in a directory of the
// caller's PATH, which would run as root with the spec already judged.
const SystemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ScrubEnvironment removes every variable but keptEnvironment from the
// process's environment and sets PATH to SystemPath, before anything reads
// it or starts a child.
func ScrubEnvironment() {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(keptEnvironment, k) {
			os.Unsetenv(k)
		}
	}
	os.Setenv("PATH", SystemPath)
}
