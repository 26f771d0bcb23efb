package runtime

import (
	"io"
	"os"
	"strings"
	"time"
)

// maxProbeLog bounds what a probe's container and create write to their
// log: the rest is read and dropped, so the pipe never fills.
const maxProbeLog = 1 << 20

// drainedLog is the stdio bulkhead hands its own probe's container and
// create: a pipe, which no rule refuses and no backend gives away,
// drained into a file of root's for as long as anything writes to it. A
// file handed to the container would have to be its uid's, which it
// could make executable and run, and create refuses such a file.
type drainedLog struct {
	w    *os.File // the write end, for create; closed once create has run
	path string
	done chan struct{}
}

func newDrainedLog(path string) (*drainedLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	d := &drainedLog{w: w, path: path, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		defer r.Close()
		defer f.Close()
		_, _ = io.Copy(f, io.LimitReader(r, maxProbeLog))
		_, _ = io.Copy(io.Discard, r)
	}()
	return d, nil
}

// handed closes bulkhead's own copy of the write end: the container and
// create hold theirs.
func (d *drainedLog) handed() { d.w.Close() }

// tail is the last lines written, once every writer has gone or wait has
// passed (a container still running holds the pipe).
func (d *drainedLog) tail(wait time.Duration) string {
	select {
	case <-d.done:
	case <-time.After(wait):
	}
	return probeLogTail(d.path)
}

// probeLogTail is the last lines of a log file, for an error message.
func probeLogTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}
