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
var keptEnvironment = []string{"PATH", "TMPDIR", "TZ", "BULKHEAD_CONFIG"}

// ScrubEnvironment removes every variable but keptEnvironment from the
// process's environment, before anything reads it or starts a child.
func ScrubEnvironment() {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(keptEnvironment, k) {
			os.Unsetenv(k)
		}
	}
}
