package runtime

import (
	"fmt"

	"bulkhead.dev/bulkhead/cgroups"
)

// pidsWatch is the container's pids.events as it was before a backend
// exec on runc. When the container is at its pids limit, runc's init dies
// in the Go runtime as it starts a thread, and runc says only that its
// pipe broke ("read init-p: connection reset by peer"); the watch lets the
// failed exec say which limit it met instead.
type pidsWatch struct {
	g      *cgroups.Group
	before uint64
}

// watchPids reads the counter of forks the pids limit refused; nil under
// gVisor, whose processes are not the host's, or when it cannot be read.
func watchPids(c *recorded) *pidsWatch {
	if c.backend.IsGVisor() || c.rec.InitPid <= 0 {
		return nil
	}
	g, err := cgroups.ForPID(c.rec.InitPid)
	if err != nil {
		return nil
	}
	refused, err := g.PidsRefused()
	if err != nil {
		return nil
	}
	return &pidsWatch{g: g, before: refused}
}

// explain adds to a failed exec's error (nil for none) that the pids
// limit refused forks while it ran, when it did.
func (w *pidsWatch) explain(err error) error {
	if err == nil {
		return nil
	}
	if why := w.limitHit(); why != "" {
		return fmt.Errorf("%w: %s", err, why)
	}
	return err
}

// limitHit says that the container reached its pids limit when the limit
// refused forks since the watch began, and is "" otherwise.
func (w *pidsWatch) limitHit() string {
	if w == nil {
		return ""
	}
	refused, err := w.g.PidsRefused()
	if err != nil || refused <= w.before {
		return ""
	}
	limit := "its limit"
	if l, err := w.g.Limits(); err == nil && l.PidsMax >= 0 {
		limit = fmt.Sprintf("pids.max %d", l.PidsMax)
	}
	return fmt.Sprintf("the container reached its pids limit (%s) while the exec started: its processes, "+
		"and the zombies of an init that does not reap them, hold every pid; end some, raise pids_limit in the profile, "+
		"or run the job under an init that reaps (docker run --init)", limit)
}
