package runtime

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"bulkhead.dev/bulkhead/runtime/backend"
)

// listenWhileCreating runs prepare with the signals bulkhead gets caught
// until stop. A signal that ended bulkhead between the backend's create
// and the end of verification left a backend container that nothing had
// checked and nothing removed, only a record without its init's pid
// (state.Record.Verified); now a create that gets one removes what it
// made, at the next step that can: before the backend starts, or once
// verification is done and before the record makes the container
// startable. While the backend runs the signal reaches it as well, as it
// always did. Only SIGKILL still ends a create half way, and start and
// exec refuse what it leaves.
func listenWhileCreating(g *Globals, verb, id, bundle, pidFile string) (c *creation, stop func(), err error) {
	signals := make(chan os.Signal, 16)
	stop = backend.Listen(signals)
	c, err = prepare(g, verb, id, bundle, pidFile)
	if err != nil {
		stop()
		return nil, nil, err
	}
	c.signals = signals
	return c, stop, nil
}

// interrupted reports a signal that asks the process to end (any but the
// job-control ones) among those the create got so far.
func (c *creation) interrupted(verb string) error {
	for {
		select {
		case s := <-c.signals:
			switch s {
			case unix.SIGCONT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
				continue
			}
			return fmt.Errorf("%s %s interrupted by signal %q; what it made is removed", verb, c.rec.ID, s)
		default:
			return nil
		}
	}
}
