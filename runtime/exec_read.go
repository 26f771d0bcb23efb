package runtime

import (
	"errors"
	"time"
)

var errTooSlow = errors.New("verification after exec did not finish")

// vforkPoll is how often a read in progress looks whether its process
// waits in vfork.
const vforkPoll = 20 * time.Millisecond

// readWithin runs read, a read of the held process p, and returns its
// error; or errTooSlow once deadline has passed (at once when it already
// has); or a *parkedInVfork once p has stayed in one vfork wait for
// vforkGrace, which no ptrace stop ends (see exec_vfork.go). In both
// cases read goes on in the background: the caller kills p, which ends it.
func readWithin(p *heldProcess, deadline time.Time, read func() error) error {
	if !time.Now().Before(deadline) {
		return errTooSlow
	}
	done := make(chan error, 1)
	go func() { done <- read() }()
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	tick := time.NewTicker(vforkPoll)
	defer tick.Stop()
	var since time.Time
	for {
		select {
		case err := <-done:
			return err
		case <-timeout.C:
			return errTooSlow
		case now := <-tick.C:
			child := vforkChild(p.pid)
			switch {
			case child == 0:
				since = time.Time{}
			case since.IsZero():
				since = now
			case now.Sub(since) >= vforkGrace:
				return &parkedInVfork{child: child, waited: now.Sub(since)}
			}
		}
	}
}
