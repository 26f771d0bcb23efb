package runtime

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"bulkhead.dev/bulkhead/runtime/backend"
	"bulkhead.dev/bulkhead/runtime/state"
)

// notStarted tells whether the container was never started. runc's own
// answer is read where runc keeps it: the state directory holds exec.fifo
// from create until start releases the init (libcontainer's status), and
// the init still runs runc's program (state.InitReleased: a start killed
// between the two leaves the fifo); other backends are asked.
func notStarted(g *Globals, b *backend.Backend, rec *state.Record) bool {
	if b.Kind() == "runc" {
		st, err := os.Lstat(filepath.Join(runcStateDir(g, b, rec.ID), execFifo))
		return err == nil && st.Mode().Type() == fs.ModeNamedPipe && !state.InitReleased(rec)
	}
	st, err := askBackendState(g, b, rec.ID)
	return err == nil && st.Status == "created"
}

// refuseUnstarted refuses an exec into a container created and not yet
// started. runc would run it: its process would be the container's only
// workload, and the lifetime, which the watchdog arms at start, would
// never bound it. Engines exec only into running containers. gVisor's
// sandbox refuses such an exec itself, but runsc's refusal quotes the
// whole command bulkhead wraps the process in (its filter in hex), and a
// detached one fails in bulkhead's child: asked here (runsc state, some
// 20 ms), the caller hears why in one line.
func refuseUnstarted(g *Globals, b *backend.Backend, rec *state.Record) error {
	id := rec.ID
	if notStarted(g, b, rec) {
		return fmt.Errorf("exec into %s: it has not been started, and an exec'd process would run outside its lifetime (max_lifetime runs from start); start it first", id)
	}
	return nil
}

// refusePauseUnstarted refuses pausing a gVisor container that has not
// been started: runsc pauses the sandbox and then panics, having no way
// from created to paused, and leaves the sandbox frozen. runc pauses a
// created container and resumes it to created, as its own tests expect,
// and so does bulkhead there; engines pause only running containers.
func refusePauseUnstarted(g *Globals, b *backend.Backend, verb string, rec *state.Record) error {
	id := rec.ID
	if verb == "pause" && b.IsGVisor() && notStarted(g, b, rec) {
		return fmt.Errorf("pause %s: it has not been started; start it first (runsc cannot pause a created container)", id)
	}
	return nil
}
